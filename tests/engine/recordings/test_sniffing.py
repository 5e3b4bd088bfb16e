"""Formats are told from the content, not the name; a directory may mix them, and a file of
no known format in it is listed as refused while the others import."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from engine.recordings.importing import ImportError_, detect_format, parse_path
from engine.store import Store
from tests.engine.recordings.helpers import CORPUS, FIXTURES, import_all

CASES = {
    "yoavf__ai-sessions__codex-pomodor-timer.jsonl": "codex",
    "yoavf__ai-sessions__gemini-cli-pomodoro-timer.json": "gemini-cli",
    "All-Hands-AI__OpenHands__basic_gui_mode.json": "openhands",
    "SWE-agent__SWE-agent__swe-agent__test-repo-i1.traj": "swe-agent",
    "yoavf__ai-sessions__claude-code-pomodoro-timer.jsonl": "claude-code",
}


@pytest.mark.parametrize(("name", "fmt"), sorted(CASES.items()))
def test_corpus_files_are_told_apart_under_any_name(name: str, fmt: str) -> None:
    """The corpus README names each file's format; the content alone must say the same."""
    assert detect_format((CORPUS / name).read_text(encoding="utf-8")) == fmt


def test_aider_history_is_sniffed_from_its_heading() -> None:
    assert detect_format((FIXTURES / "aider.chat.history.md").read_text()) == "aider"


def test_mixed_directory_imports_the_known_and_lists_the_unknown(
    store: Store, tmp_path: Path
) -> None:
    """Four sessions of four formats under misleading names, a ``package.json`` of no known
    format (listed as refused) and a README.md (not a session file)."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    shutil.copy(CORPUS / CASES_BY_FMT["codex"], folder / "a.jsonl")
    shutil.copy(CORPUS / CASES_BY_FMT["gemini-cli"], folder / "b.json")
    shutil.copy(CORPUS / CASES_BY_FMT["openhands"], folder / "c.json")
    shutil.copy(FIXTURES / "aider.chat.history.md", folder / ".aider.chat.history.md")
    (folder / "package.json").write_text('{"name": "shop", "version": "1.0.0"}')
    (folder / "README.md").write_text("# shop\n")
    parsed = parse_path(folder)
    assert [(p.name, one.fmt) for p, one in parsed.files] == [
        (".aider.chat.history.md", "aider"),
        ("a.jsonl", "codex"),
        ("b.json", "gemini-cli"),
        ("c.json", "openhands"),
    ]
    ((refused, why),) = parsed.refused
    assert refused.name == "package.json"
    assert "not a recognised session format" in why
    assert 'docs/importing.md, "Importing and exporting sessions"' in why
    assert dict(parsed.skipped_files) == {"not a session file": 1}
    assert len(import_all(store, folder)) == 4


def test_a_single_file_of_no_known_format_is_still_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"name": "shop"}')
    with pytest.raises(ImportError_) as caught:
        parse_path(path)
    assert "not a recognised session format" in str(caught.value)


CASES_BY_FMT = {fmt: name for name, fmt in CASES.items()}
