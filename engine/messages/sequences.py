"""How much of a sequence is the same as the last time: the request of a long session is its
previous request plus a little, at every step."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def common_prefix(before: Sequence[Any], after: Sequence[Any]) -> int:
    """How many leading items of ``after`` equal those of ``before``.

    Comparing lists is C code that takes an item that *is* the other one as equal without
    calling its ``__eq__``, so a long shared prefix of the same objects costs little; a
    mismatch is found by halving (a prefix that differs stays different when it grows), so
    the whole search compares each item at most twice.

    Only the longer sequence is sliced for the first comparison (copying a long list touches
    every item it holds, which costs more than comparing the same objects).
    """
    n = min(len(before), len(after))
    if len(before) == len(after):
        shared = before == after
    elif n == len(before):
        shared = before == after[:n]
    else:
        shared = before[:n] == after
    if shared:
        return n
    low, high = 0, n  # before[:low] == after[:low]; before[:high] != after[:high]
    while high - low > 1:
        mid = (low + high) // 2
        if before[low:mid] == after[low:mid]:
            low = mid
        else:
            high = mid
    return low
