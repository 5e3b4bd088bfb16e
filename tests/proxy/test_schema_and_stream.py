"""Schema 12 (the proxied requests) from a schema-11 file, and the event-stream reader with
chunks cut anywhere."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.exchanges import Exchange
from engine.proxy.stream import EventReader, MessageAssembler, decompressed
from engine.store import Store
from engine.store.schema import SCHEMA_VERSION
from tests.fakes.anthropic_server import sse_events, tool_reply


def test_a_schema_11_database_gains_the_proxy_tables(tmp_path: Path) -> None:
    """A file as schema 11 left it (this schema without the two exchange tables, marked 11)
    opens at the current schema (12 and every step after), its session kept, and stores a
    proxied request."""
    path = tmp_path / "old.db"
    store = Store.open(path)
    kept = store.create_session(workspace=str(tmp_path), title="before the proxy")
    store.close()
    con = sqlite3.connect(path)
    con.execute("DROP TABLE exchange_row")
    con.execute("DROP TABLE exchange_blob_row")
    con.execute("PRAGMA user_version = 11")
    con.commit()
    con.close()
    assert SCHEMA_VERSION >= 12  # 11 -> 12 made the proxy's tables; later steps run after it
    store = Store.open(path)
    assert store.db.execute_sql("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert store.get_session(kept.id or 0).title == "before the proxy"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    stored = store.add_exchange(Exchange(request=body), source="proxy:s1")
    assert store.exchanges(stored.session_id or 0)[0].request == body


def _stream_bytes() -> bytes:
    reply = tool_reply(("toolu_9", "Edit", {"file_path": "ü.py", "old": "a\r\nb"}), text="Édit")
    return b"".join(
        f"event: {event}\r\ndata: {json.dumps(data, ensure_ascii=False)}\r\n\r\n".encode()
        for event, data in sse_events(reply)
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2000), max_size=12))
def test_events_cut_anywhere_make_the_same_message(cuts: list[int]) -> None:
    """CRLF line ends and multi-byte characters, the bytes cut at any points: the message
    reassembled is the one the fake's reply describes."""
    data = _stream_bytes()
    points = sorted({c % (len(data) + 1) for c in cuts})
    pieces = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    reader, assembler = EventReader(), MessageAssembler()
    for piece in pieces:
        for event, payload in reader.feed(piece):
            assembler.add(event, payload)
    for event, payload in reader.close():
        assembler.add(event, payload)
    assert assembler.complete
    assert assembler.message is not None
    assert assembler.message["content"] == [
        {"type": "text", "text": "Édit"},
        {
            "type": "tool_use",
            "id": "toolu_9",
            "name": "Edit",
            "input": {"file_path": "ü.py", "old": "a\r\nb"},
        },
    ]
    assert assembler.message["stop_reason"] == "tool_use"


def test_a_gzip_answer_is_read() -> None:
    import gzip

    body = gzip.compress(b'{"type": "message"}')
    assert decompressed([body[:5], body[5:]], "gzip") == b'{"type": "message"}'


def test_a_conversation_continued_by_another_process_stores_only_what_is_new(
    tmp_path: Path,
) -> None:
    """The third request is stored by a new store (a restarted proxy, nothing in memory): it
    still repeats the second's messages by reference, and every body comes back as sent."""
    path = tmp_path / "p.db"
    turns = [{"role": "user", "content": f"turn {i}"} for i in range(5)]
    bodies = [{"model": "m", "messages": turns[: n + 1]} for n in (0, 2, 4)]
    first = Store.open(path)
    for body in bodies[:2]:
        first.add_exchange(Exchange(request=body, thread="t"), source="proxy:s")
    first.close()
    second = Store.open(path)
    second.add_exchange(Exchange(request=bodies[2], thread="t"), source="proxy:s")
    (session,) = second.proxied_sessions()
    assert [e.request for e in second.exchanges(session)] == bodies
    assert second.exchange_blob_count() == 5  # the five distinct messages, once each
    prefix = second.db.execute_sql("SELECT prefix_len FROM exchange_row ORDER BY id").fetchall()
    assert [p for (p,) in prefix] == [0, 1, 3]
