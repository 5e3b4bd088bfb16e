"""Issue 44: an observation's result is stored as ``json.dumps(result, ensure_ascii=False)``
stores it, byte for byte, though the tool's output it holds twice (``text`` and a value of
``data``) is escaped once (``models.ResultField``)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.store.models import _HOLE, JSONField, ResultField

OUTPUT = 'line 1 →\n\t"quoted" \\ \x01 tail ' * 20
"""An output past the length worth escaping once, with every character JSON escapes."""

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


def stored(value: dict[str, Any]) -> str | None:
    return ResultField().db_value(value)


def test_a_read_result_as_the_encoder_writes_it() -> None:
    """An envelope as ``envelopes._read`` makes it: the output in ``text`` and ``content``."""
    result = {
        "status": "success",
        "data": {"file": "a.ex", "content": OUTPUT, "start_line": 1, "total_lines": 40},
        "error": None,
        "text": OUTPUT,
        "stats": {},
        "context": {},
    }
    assert stored(result) == json.dumps(result, ensure_ascii=False)
    assert stored(result) == JSONField().db_value(result)


def test_the_hole_itself_in_a_result_is_stored_as_it_is() -> None:
    """A result that holds the text standing for the output, as a value or a key."""
    for result in (
        {"text": OUTPUT, "data": {"note": _HOLE, "output": OUTPUT}},
        {"text": OUTPUT, "data": {_HOLE: 1, "output": OUTPUT}},
        {"text": OUTPUT, "data": {"quoted": f'"{_HOLE}"', "output": OUTPUT}},
        {"text": _HOLE * 30, "data": {"output": _HOLE * 30}},
    ):
        assert stored(result) == json.dumps(result, ensure_ascii=False)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(min_size=0, max_size=400) | st.just(OUTPUT),
    data=st.dictionaries(st.text(max_size=8), json_values | st.just("OUTPUT"), max_size=6),
    extra=st.dictionaries(st.text(max_size=8), json_values, max_size=3),
)
def test_any_result_is_stored_as_json_dumps_stores_it(
    text: str, data: dict[str, Any], extra: dict[str, Any]
) -> None:
    """Any envelope (``"OUTPUT"`` in ``data`` stands for the output itself, as the same
    object): what ``json.dumps`` writes."""
    data = {k: text if v == "OUTPUT" else v for k, v in data.items()}
    result = {"status": "success", "data": data, "text": text, **extra}
    assert stored(result) == json.dumps(result, ensure_ascii=False)
