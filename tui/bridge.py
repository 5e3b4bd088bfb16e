"""From the agent's worker thread to the UI: engine events as Textual messages.

:class:`EngineBridge` is the agent's :data:`~engine.events.EventSink`. It runs on whatever
thread the agent runs on and only calls ``post_message`` (thread-safe). Streamed text is
buffered per step: at most one :class:`EngineBridge.TextStreamed` is in the queue per step at
a time, and the handler reads everything buffered so far, so a fast stream never floods the
message queue (and consecutive ones coalesce through ``can_replace`` as well).

:class:`PermissionGate` is the tools' :data:`~tools.base.Asker`. Called from the worker, it
posts a :class:`PermissionGate.PermissionRequested` and blocks on a ``threading.Event`` until the
UI answers — polling its own cancel flag, so Esc (or quitting) while the dialog is up denies
the call instead of leaving the worker waiting forever. The UI thread never waits for the
worker, so the two cannot deadlock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from textual.message import Message
from textual.message_pump import MessagePump

from engine.events import Event, TextDelta
from tools.base import PermissionAnswer, PermissionRequest

POLL_SECONDS = 0.05
"""How often a waiting permission request checks whether the round was cancelled."""


class EngineBridge:
    """Posts engine events to ``target`` (the main screen) from any thread."""

    @dataclass
    class EventReceived(Message):
        """An engine event (anything but streamed text)."""

        event: Event

    @dataclass
    class TextStreamed(Message):
        """More text arrived for a step; read it with :meth:`EngineBridge.take_text`."""

        round_index: int
        step: int

        def can_replace(self, message: Message) -> bool:
            return (
                isinstance(message, EngineBridge.TextStreamed)
                and message.round_index == self.round_index
                and message.step == self.step
            )

    def __init__(self, target: MessagePump) -> None:
        self._target = target
        self._lock = threading.Lock()
        self._text: dict[tuple[int, int], str] = {}
        self._pending: set[tuple[int, int]] = set()
        self.posted = 0
        """Messages posted so far (the coalescing test reads it)."""

    def __call__(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            key = (event.round_index, event.step)
            with self._lock:
                self._text[key] = self._text.get(key, "") + event.text
                if key in self._pending:
                    return
                self._pending.add(key)
            self._post(self.TextStreamed(event.round_index, event.step))
            return
        self._post(self.EventReceived(event))

    def _post(self, message: Message) -> None:
        with self._lock:
            self.posted += 1
        self._target.post_message(message)

    def take_text(self, round_index: int, step: int) -> str:
        """Everything streamed for the step so far; the next delta will post again."""
        key = (round_index, step)
        with self._lock:
            self._pending.discard(key)
            return self._text.get(key, "")

    def forget(self, round_index: int, step: int) -> None:
        """Drop a finished step's buffer."""
        key = (round_index, step)
        with self._lock:
            self._text.pop(key, None)
            self._pending.discard(key)


@dataclass
class PermissionReply:
    """One pending question; the UI answers it once (later answers are ignored)."""

    request: PermissionRequest
    answer: PermissionAnswer = "deny"
    done: threading.Event = field(default_factory=threading.Event)

    def answer_with(self, answer: PermissionAnswer) -> None:
        if not self.done.is_set():
            self.answer = answer
            self.done.set()


class PermissionGate:
    """The asker handed to the agent's tools."""

    @dataclass
    class PermissionRequested(Message):
        """A tool waits for the user's answer."""

        reply: PermissionReply

    @dataclass
    class PermissionWithdrawn(Message):
        """The round was cancelled while the question was open: close the dialog."""

        reply: PermissionReply

    def __init__(self, target: MessagePump) -> None:
        self._target = target
        self._cancel = threading.Event()

    def __call__(self, request: PermissionRequest) -> PermissionAnswer:
        """Ask the user and wait (worker thread only); ``deny`` when cancelled."""
        if self._cancel.is_set():
            return "deny"
        reply = PermissionReply(request)
        if not self._target.post_message(self.PermissionRequested(reply)):
            return "deny"
        while not reply.done.wait(POLL_SECONDS):
            if self._cancel.is_set():
                reply.answer_with("deny")
                self._target.post_message(self.PermissionWithdrawn(reply))
                break
        return reply.answer

    def cancel(self) -> None:
        """Deny the open question (if any) and every later one until :meth:`reset`."""
        self._cancel.set()

    def reset(self) -> None:
        """A new round may ask again."""
        self._cancel.clear()
