"""Where settings come from without pydantic-settings: keywords over ``CTXSCOPE_*`` over
``ctxscope.toml``, merged value by value, JSON for sections, lists and dicts.

The expected behaviour is pydantic-settings' (``env_prefix="CTXSCOPE_"``,
``env_nested_delimiter="__"``, case-insensitive, TOML as the lowest source), which these
settings were read with before; every case here gave the same settings under it but the first
(a file's ``[strategies.reset-hint]`` and a ``CTXSCOPE_STRATEGIES__RESET_HINT__…`` variable
together were refused as an unknown key ``reset_hint``) and the last (its error named no
variable: ``error parsing value for field "secret_env_patterns"``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.settings.config import Settings, SettingsError, load_settings


@pytest.fixture(autouse=True)
def empty_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no ctxscope.toml unless a test writes one
    return tmp_path


def test_a_nested_variable_and_the_file_merge_value_by_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ctxscope.toml").write_text(
        "[strategies.reset-hint]\ncontext_limit = 7000\nthreshold_ratio = 0.5\n"
    )
    monkeypatch.setenv("CTXSCOPE_STRATEGIES__RESET_HINT__CONTEXT_LIMIT", "5000")
    section = Settings().strategies.reset_hint
    assert section.context_limit == 5000  # the environment wins for this value
    assert section.threshold_ratio == 0.5  # the file's other value stays


def test_a_section_as_json_and_a_nested_variable_together(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXSCOPE_STRATEGIES", '{"reset-hint": {"context_limit": 9000}}')
    monkeypatch.setenv("CTXSCOPE_STRATEGIES__RESET_HINT__THRESHOLD_RATIO", "0.3")
    section = Settings().strategies.reset_hint
    assert (section.context_limit, section.threshold_ratio) == (9000, 0.3)


def test_lists_and_dicts_are_read_as_json(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXSCOPE_SECRET_ENV_PATTERNS", '["A_*", "B"]')
    monkeypatch.setenv("CTXSCOPE_PRICES__MYMODEL__INPUT", "1.5")
    monkeypatch.setenv("CTXSCOPE_PRICES__MYMODEL__OUTPUT", "2")
    settings = Settings()
    assert settings.secret_env_patterns == ["A_*", "B"]
    assert list(settings.prices) == ["mymodel"]  # a dict from the environment replaces the default
    assert (settings.prices["mymodel"].input, settings.prices["mymodel"].output) == (1.5, 2.0)


def test_names_are_matched_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ctxscope_keep_rounds", "7")
    assert Settings().keep_rounds == 7
    assert Settings(KEEP_ROUNDS=3).keep_rounds == 3


def test_keywords_over_environment_over_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ctxscope.toml").write_text(
        "keep_rounds = 4\nmax_steps = 9\ncontext_window = 5000\n"
    )
    monkeypatch.setenv("CTXSCOPE_KEEP_ROUNDS", "6")
    monkeypatch.setenv("CTXSCOPE_MAX_STEPS", "8")
    s = Settings(max_steps=2)
    assert (s.context_window, s.keep_rounds, s.max_steps) == (5000, 6, 2)


def test_an_explicit_file_replaces_the_current_folders(tmp_path: Path) -> None:
    (tmp_path / "ctxscope.toml").write_text("keep_rounds = 4\n")
    other = tmp_path / "other.toml"
    other.write_text("keep_rounds = 5\n")
    assert load_settings().keep_rounds == 4
    assert load_settings(other).keep_rounds == 5
    assert type(load_settings(other)) is Settings


def test_unknown_variables_are_ignored_unknown_nested_keys_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXSCOPE_NO_SUCH_SETTING", "1")
    assert Settings().keep_rounds == 10
    monkeypatch.setenv("CTXSCOPE_STRATEGIES__RESET_HINT__NO_SUCH_KEY", "1")
    with pytest.raises(SettingsError, match="strategies.reset_hint.no_such_key"):
        load_settings()


def test_a_json_variable_that_is_not_json_is_one_readable_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CTXSCOPE_SECRET_ENV_PATTERNS", "A_*")
    with pytest.raises(
        SettingsError, match="CTXSCOPE_SECRET_ENV_PATTERNS='A_\\*' is not valid JSON"
    ):
        Settings()
