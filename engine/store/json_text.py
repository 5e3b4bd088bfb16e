"""The JSON columns' text made by the standard library's C encoder without the Python steps
around it.

``json.JSONEncoder(...).encode`` runs two Python functions at every call before the C
encoder starts (``encode``, then ``iterencode``, which makes the C encoder anew with the same
options each time): about as long as encoding a message's small JSON column itself, and a
history import writes a few such columns a message (issue 44). :func:`encoder` makes the
same text: the same C encoder, made with the same options, called directly. The store's own
(its JSON columns, the search index's bodies): a module outside the store that imported it
would import the store, and peewee, with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json import encoder as _std
from typing import Any


def encoder(
    *,
    ensure_ascii: bool = True,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
    default: Callable[[Any], Any] | None = None,
) -> Callable[[Any], str]:
    """What ``json.JSONEncoder(ensure_ascii=…, separators=…, sort_keys=…, default=…).encode``
    does, text for text (a circular value refused alike); that very function where the C
    encoder is not there (another Python)."""
    like = json.JSONEncoder(
        ensure_ascii=ensure_ascii, separators=separators, sort_keys=sort_keys, default=default
    )
    make = getattr(_std, "c_make_encoder", None)  # not in the standard library's stubs
    if make is None:
        return like.encode
    strings = _std.encode_basestring_ascii if ensure_ascii else _std.encode_basestring
    options = (
        like.default,
        strings,
        like.indent,
        like.key_separator,
        like.item_separator,
        like.sort_keys,
        like.skipkeys,
        like.allow_nan,
    )

    def encode(value: Any) -> str:
        # A new mark table a call, as ``iterencode`` makes: one left by a call that failed
        # half-way would take a new object at the same address for a circular one.
        return "".join(make({}, *options)(value, 0))

    return encode
