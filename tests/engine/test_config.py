"""Settings: seed defaults, environment and TOML overrides, readable refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.settings.config import SettingsError, load_settings


def test_seed_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    s = load_settings()
    assert (s.context_window, s.threshold_ratio, s.min_messages, s.keep_rounds) == (
        200_000,
        0.8,
        3,
        10,
    )
    assert (s.summary_timeout, s.read_max_lines, s.grep_max_lines) == (120.0, 500, 5)
    assert (s.snippet_min_lines, s.snippet_max_lines, s.bash_stderr_tail_lines) == (20, 50, 20)
    assert (s.glob_max_entries, s.atfile_max) == (10, 5)
    assert s.threshold_tokens == 160_000


def test_environment_and_toml(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    toml = tmp_path / "ctxscope.toml"
    toml.write_text("context_window = 50000\nkeep_rounds = 4\n")
    monkeypatch.setenv("CTXSCOPE_KEEP_ROUNDS", "6")
    s = load_settings(toml)
    assert s.context_window == 50_000  # from the file
    assert s.keep_rounds == 6  # the environment wins over the file
    assert load_settings(toml, keep_rounds=2).keep_rounds == 2  # options win over both


@pytest.mark.parametrize(
    ("env", "value", "named"),
    [
        ("CTXSCOPE_CONTEXT_WINDOW", "-5", "context_window"),
        ("CTXSCOPE_CONTEXT_WINDOW", "lots", "context_window"),
        ("CTXSCOPE_THRESHOLD_RATIO", "1.5", "threshold_ratio"),
        ("CTXSCOPE_THRESHOLD_RATIO", "0", "threshold_ratio"),
        ("CTXSCOPE_KEEP_ROUNDS", "0", "keep_rounds"),
    ],
)
def test_bad_values_are_refused_naming_the_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, env: str, value: str, named: str
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(env, value)
    with pytest.raises(SettingsError) as info:
        load_settings()
    assert f"setting {named} ({env}={value!r})" in str(info.value)


def test_threshold_ratio_of_one_is_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXSCOPE_THRESHOLD_RATIO", "1")
    assert load_settings().threshold_ratio == 1.0
