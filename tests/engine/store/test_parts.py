"""``Store`` is one connection holding its parts (engine/store/part.py): every public method of
every part is a method of ``Store`` with the same signature, handing the call to that part, so
the code that uses a ``Store`` need not know which part answers.

A method added to a part and not to ``Store`` fails here, with the delegation to paste into
engine/store/repository.py in the message.
"""

from __future__ import annotations

import inspect
from pathlib import Path

from engine.models import Message
from engine.store import Store
from engine.store.repository import PARTS

PARTS_BY_ATTRIBUTE = {
    "sessions": "SessionStore",
    "conversation": "ConversationStore",
    "archive": "ArchiveStore",
    "forks": "ForkStore",
    "usage": "UsageStore",
    "proxy_requests": "ExchangeStore",
    "import_history": "HistoryStore",
}
"""The parts, written out here from the class's docstring (not read from the code)."""


def _public(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(value)
        for name, value in vars(cls).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }


class _Source(str):
    """An annotation as written (``from __future__ import annotations`` keeps it a string)."""

    def __repr__(self) -> str:
        return str(self)


def _delegation(attribute: str, name: str, sig: inspect.Signature) -> str:
    sig = sig.replace(
        parameters=[
            p.replace(annotation=_Source(p.annotation)) if isinstance(p.annotation, str) else p
            for p in sig.parameters.values()
        ],
        return_annotation=_Source(sig.return_annotation)
        if isinstance(sig.return_annotation, str)
        else sig.return_annotation,
    )
    passed = []
    for p in list(sig.parameters.values())[1:]:
        if p.kind is p.VAR_POSITIONAL:
            passed.append(f"*{p.name}")
        elif p.kind is p.VAR_KEYWORD:
            passed.append(f"**{p.name}")
        elif p.kind is p.KEYWORD_ONLY:
            passed.append(f"{p.name}={p.name}")
        else:
            passed.append(p.name)
    return f"    def {name}{sig}:\n        return self.{attribute}.{name}({', '.join(passed)})\n"


def test_the_parts_are_the_seven_named() -> None:
    assert {attr: cls.__name__ for attr, cls in PARTS.items()} == PARTS_BY_ATTRIBUTE


def test_every_public_method_of_a_part_is_the_stores() -> None:
    missing, different = [], []
    for attribute, cls in PARTS.items():
        for name, sig in _public(cls).items():
            own = vars(Store).get(name)
            if own is None:
                missing.append(_delegation(attribute, name, sig))
            elif inspect.signature(own) != sig:
                different.append(f"{name}: Store{inspect.signature(own)} vs {cls.__name__}{sig}")
    assert different == []
    assert missing == [], "add to Store (engine/store/repository.py):\n\n" + "\n".join(missing)


def test_a_method_of_the_store_is_its_parts(tmp_path: Path) -> None:
    """Each part answers for the store: what one writes through the store, the part reads, and
    the other way round, on the one connection."""
    store = Store.open(tmp_path / "s.db")
    session = store.create_session(str(tmp_path), "parts")
    assert session.id is not None
    assert store.sessions.get_session(session.id) == session
    rnd, msg = store.conversation.open_round(session.id, Message(role="user", content="q"))
    assert [m.content for m in store.all_messages(session.id)] == ["q"]
    assert store.rounds(session.id) == [rnd]
    assert store.forks.sessions is store.sessions
    assert store.conversation.sessions is store.sessions
    assert all(part.access is store for part in (getattr(store, a) for a in PARTS))
    store.close()
