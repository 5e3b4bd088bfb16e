"""engine.store.json_text: the C encoder called directly makes the text ``json.JSONEncoder`` makes
with the same options (issue 44). The expected text is the standard library's own."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.store import json_text

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()  # any code point: quotes, controls, lone surrogates, astral characters
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30,
)
OPTIONS: list[dict[str, Any]] = [
    {},
    {"ensure_ascii": False},
    {"ensure_ascii": False, "separators": (",", ":")},
    {"sort_keys": True},
    {"ensure_ascii": False, "separators": (",", ":"), "default": str},
]


@pytest.mark.parametrize("options", OPTIONS)
@given(value=VALUES)
def test_the_same_text_as_the_standard_encoder(options: dict[str, Any], value: Any) -> None:
    assert json_text.encoder(**options)(value) == json.JSONEncoder(**options).encode(value)


def test_keys_and_values_the_standard_encoder_converts_are_converted_alike() -> None:
    """Non-string keys (numbers, None, booleans), a tuple, and with ``default`` a value JSON
    has no form for: as ``json.dumps`` writes them."""
    value = {1: (1, 2), 2.5: None, None: True, False: [datetime(2026, 1, 2, tzinfo=UTC)]}
    options = {"ensure_ascii": False, "separators": (",", ":"), "default": str}
    assert json_text.encoder(**options)(value) == (
        '{"1":[1,2],"2.5":null,"null":true,"false":["2026-01-02 00:00:00+00:00"]}'
    )


def test_what_the_standard_encoder_refuses_is_refused_alike() -> None:
    circle: list[Any] = []
    circle.append(circle)
    encode = json_text.encoder(ensure_ascii=False)
    with pytest.raises(ValueError, match="Circular reference detected"):
        encode(circle)
    with pytest.raises(TypeError, match="not JSON serializable"):
        encode({"when": datetime(2026, 1, 2, tzinfo=UTC)})
    # a call that failed half-way leaves nothing behind for the next one
    assert encode([1, [2]]) == "[1, [2]]"
