"""Agent trajectories: mini-swe-agent ``*.traj.json`` and SWE-agent ``*.traj``.

Both agents act through one shell command per turn, so each action becomes a ``Bash`` tool
call and the observation that follows its result.

- mini-swe-agent (``{"info", "messages", "trajectory_format": "mini-swe-agent-1"}``): the
  single ```` ```bash ```` block of an assistant message is the call (the text before it is the
  thought); the next user message (``<returncode>N</returncode><output>…</output>``) its result,
  an error when the return code is not 0. An assistant message without exactly one bash block
  is a format error: it stays text and the user's complaint opens the next round.
- SWE-agent (``{"history", "trajectory", "info"}``): ``history`` is used; an ``action``
  message's ``action`` (or its content) is the call, the next ``observation`` its result.
  Demonstrations (``is_demo`` or ``message_type: demonstration``) are stored in the first round
  after the task, prefixed ``[demonstration]`` and flagged in ``meta.origin``; they never open a
  round (a round's input is the task).
- The model and the cost the run recorded: mini-swe-agent's ``info.config.model.model_name``
  (else an assistant message's ``extra.response.model``), SWE-agent's ``replay_config``
  ``agent.model.name``; each assistant message's ``extra.response.usage`` (LiteLLM's
  ``prompt_tokens`` with ``prompt_tokens_details.cached_tokens``, ``completion_tokens``) is its
  step's usage. ``info.model_stats`` (``instance_cost``, ``api_calls``, tokens) is the agent's
  own figure, kept in ``recorded`` (``recorded_cost``, ``api_calls``) to compare.
- System prompts are counted as skipped (``system_prompt``): ctxscope's own system prompt goes
  in their place. ``info.exit_status == "Submitted"`` marks the last round finished.
- Tolerant: fields they do not know are ignored; a message of another role is counted
  (``role:<role>``), an entry that is not a message (``not_a_message``) or whose content is
  not text (``unexpected_shape``) is left out, counted and named in a warning. A file is
  refused only without a user message.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from engine.models import ToolCall, Usage, utcnow
from engine.recordings.base import ImportError_, Item, Parsed, numbers_named

MINI = "mini-swe-agent"
SWE = "swe-agent"
_BASH_BLOCK = re.compile(r"```bash\s*\n(.*?)\n```", re.S)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
SUBMITTED = ("submitted", "submitted (exit_cost)", "submitted (exit_context)")


def looks_like_mini(obj: Any) -> bool:
    return isinstance(obj, dict) and (
        str(obj.get("trajectory_format", "")).startswith("mini-swe-agent")
        or ("messages" in obj and "info" in obj and "history" not in obj)
    )


def looks_like_swe(obj: Any) -> bool:
    return isinstance(obj, dict) and "history" in obj and "trajectory" in obj


def _finished(info: Any) -> bool | None:
    if not isinstance(info, dict) or "exit_status" not in info:
        return None
    return str(info.get("exit_status", "")).lower() in SUBMITTED


def parse_mini(obj: dict[str, Any], name: str) -> Parsed:
    messages = obj.get("messages")
    if not isinstance(messages, list):
        raise ImportError_(["'messages' must be a list of messages"], MINI)
    items: list[Item] = []
    skipped: Counter[str] = Counter()
    pending: str | None = None
    counter = 0
    left = _LeftOut("message")
    info = _dict(obj.get("info"))
    named = _dict(_dict(info.get("config")).get("model"))
    model = str(named.get("model_name") or "")
    for n, msg in enumerate(messages):
        content = left.content_of(msg, n)
        if content is None:
            continue
        now = utcnow()
        if msg["role"] == "system":
            skipped["system_prompt"] += 1
        elif msg["role"] == "assistant":
            blocks = _BASH_BLOCK.findall(content)
            if len(blocks) == 1:
                counter += 1
                pending = f"mini_{counter}"
                thought = content[: content.find("```bash")].strip()
                call = ToolCall(id=pending, name="Bash", input={"command": blocks[0].strip()})
                items.append(Item("assistant", n, now, text=thought, calls=[call]))
            else:
                pending = None
                items.append(Item("assistant", n, now, text=content))
            items[-1].model, items[-1].usage = _response(msg, model)
        elif pending is not None:
            code_match = _RETURNCODE.search(content)
            code = int(code_match[1]) if code_match else None
            out = output_of(content)
            items.append(
                Item(
                    "result",
                    n,
                    now,
                    text=content if out is None else out,
                    tool_use_id=pending,
                    is_error=code not in (0, None),
                    recorded={"returncode": code},
                )
            )
            pending = None
        else:
            items.append(Item("user", n, now, text=content))
    if not any(i.kind == "user" for i in items):
        raise ImportError_([f"{name} holds no user message"], MINI)
    title = next((i.text for i in items if i.kind == "user"), name)
    skipped.update(left.skipped)
    return Parsed(
        fmt=MINI,
        items=items,
        title=_title(title) or name,
        records=len(messages),
        skipped=skipped,
        warnings=left.warnings(),
        finished=_finished(obj.get("info")),
        model=model or next((i.model for i in items if i.model), ""),
        recorded=_recorded_stats(info),
    )


def output_of(content: str) -> str | None:
    """What ``<output>…</output>`` holds (None without both tags), less the one newline the
    format puts after the opening tag and before the closing one.

    The same as ``<output>\\n?(.*?)\\n?</output>`` (with DOTALL), with ``str.find``: that lazy
    pattern steps through the whole output a character at a time, most of the time it took
    to parse a trajectory.
    """
    start = content.find("<output>")
    if start < 0:
        return None
    start += len("<output>")
    if content.startswith("\n", start):
        start += 1
    end = content.find("</output>", start)
    if end < 0:
        return None
    if end > start and content[end - 1] == "\n":
        end -= 1
    return content[start:end]


def parse_swe(obj: dict[str, Any], name: str) -> Parsed:
    history = obj.get("history")
    if not isinstance(history, list):
        raise ImportError_(["'history' must be a list of messages"], SWE)
    items: list[Item] = []
    skipped: Counter[str] = Counter()
    pending: str | None = None
    counter = 0
    left = _LeftOut("history")
    for n, msg in enumerate(history):
        content = left.content_of(msg, n)
        if content is None:
            continue
        kind = msg.get("message_type")
        now = utcnow()
        demo = bool(msg.get("is_demo")) or kind == "demonstration"
        if demo:
            items.append(Item("user", n, now, text=content, demonstration=True))
        elif msg["role"] == "system" or kind == "system_prompt":
            skipped["system_prompt"] += 1
        elif msg["role"] == "assistant":
            action = msg.get("action")
            if kind == "action" or isinstance(action, str):
                command = str(action if isinstance(action, str) else content).strip()
                thought = str(msg.get("thought") or "").strip()
                if not thought and command != content.strip():
                    thought = content.replace(command, "").strip()
                counter += 1
                pending = f"swe_{counter}"
                call = ToolCall(id=pending, name="Bash", input={"command": command})
                items.append(Item("assistant", n, now, text=thought, calls=[call]))
            else:
                pending = None
                items.append(Item("assistant", n, now, text=content))
        elif pending is not None and kind in ("observation", None):
            items.append(Item("result", n, now, text=content, tool_use_id=pending))
            pending = None
        else:
            pending = None
            items.append(Item("user", n, now, text=content))
    if not any(i.kind == "user" and not i.demonstration for i in items):
        raise ImportError_([f"{name} holds no user message"], SWE)
    skipped.update(left.skipped)
    final = _last_observation(obj.get("trajectory"), counter, items)
    if pending is not None and final is not None:
        # The last action (``submit``) has no observation in ``history``: SWE-agent writes it
        # only to ``trajectory`` (the final diff), not to the model's history.
        items.append(Item("result", len(history), utcnow(), text=final, tool_use_id=pending))
    title = next((i.text for i in items if i.kind == "user" and not i.demonstration), name)
    return Parsed(
        fmt=SWE,
        items=items,
        title=_title(title) or name,
        records=len(history),
        skipped=skipped,
        warnings=left.warnings(),
        finished=_finished(obj.get("info")),
        model=_swe_model(obj),
        recorded=_recorded_stats(obj.get("info")),
    )


def _response(msg: dict[str, Any], model: str) -> tuple[str, Usage | None]:
    """The model that answered an assistant message and its usage, from the LiteLLM response
    mini-swe-agent keeps in ``extra.response`` (``model`` the run's when it names none)."""
    extra = msg.get("extra")
    response = extra.get("response") if isinstance(extra, dict) else None
    if not isinstance(response, dict):
        return model, None
    answered = response.get("model")
    raw = response.get("usage")
    usage = None
    if isinstance(raw, dict):
        prompt = _int(raw.get("prompt_tokens"))
        details = raw.get("prompt_tokens_details")
        cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else 0
        written = _int(raw.get("cache_creation_input_tokens"))
        usage = Usage(
            input_tokens=max(prompt - cached - written, 0),
            cache_read_input_tokens=cached,
            cache_creation_input_tokens=written,
            output_tokens=_int(raw.get("completion_tokens")),
        )
        usage = usage if usage.input_side or usage.output_tokens else None
    return (answered if isinstance(answered, str) and answered else model), usage


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _recorded_stats(info: Any) -> dict[str, Any]:
    """The run's own figures (``info.model_stats``): its cost and calls, to compare."""
    stats = info.get("model_stats") if isinstance(info, dict) else None
    if not isinstance(stats, dict):
        return {}
    out: dict[str, Any] = {}
    cost = stats.get("instance_cost")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool):
        out["recorded_cost"] = float(cost)
    for key in ("api_calls", "tokens_sent", "tokens_received", "input_tokens", "output_tokens"):
        if isinstance(stats.get(key), int):
            out[key] = stats[key]
    return out


def _swe_model(obj: dict[str, Any]) -> str:
    """SWE-agent's model: ``replay_config`` (a JSON string, or an object) ``agent.model.name``."""
    config = obj.get("replay_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except json.JSONDecodeError:
            return ""
    agent = config.get("agent") if isinstance(config, dict) else None
    model = agent.get("model") if isinstance(agent, dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    return name if isinstance(name, str) else ""


def _last_observation(trajectory: Any, actions: int, items: list[Item]) -> str | None:
    """The observation ``trajectory`` records for the ``actions``-th (last) action, when that
    step is the same command as the last call in ``items``; None otherwise."""
    if not isinstance(trajectory, list) or len(trajectory) != actions or not items:
        return None
    step, last = trajectory[-1], items[-1]
    if not isinstance(step, dict) or not isinstance(step.get("observation"), str):
        return None
    command = last.calls[0].input.get("command", "") if last.calls else None
    if command is None or str(step.get("action", "")).strip() != str(command).strip():
        return None
    return str(step["observation"])


class _LeftOut:
    """The entries a pass left out, counted by why, with their positions for the warnings."""

    def __init__(self, noun: str) -> None:
        self.noun = noun
        self.skipped: Counter[str] = Counter()
        self.where: dict[str, list[int]] = {}

    def content_of(self, msg: Any, n: int) -> str | None:
        """The text of entry ``n`` when it is a message this reader takes, else None (counted;
        a message of another role is only counted, the others also named)."""
        if not isinstance(msg, dict):
            self.add("not_a_message", n)
            return None
        role = msg.get("role")
        if role not in ("system", "user", "assistant"):
            if isinstance(role, str):
                self.skipped[f"role:{role}"] += 1
            else:
                self.add("not_a_message", n)
            return None
        content = _text(msg.get("content"))
        if content is None:
            self.add("unexpected_shape", n)
        return content

    def add(self, why: str, n: int) -> None:
        self.skipped[why] += 1
        self.where.setdefault(why, []).append(n)

    def warnings(self) -> list[str]:
        out = []
        for why, numbers in self.where.items():
            out.append(f"{numbers_named(self.noun, numbers)}: {why}; left out")
        return out


def _text(content: Any) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [str(b.get("text", "")) for b in content if isinstance(b, dict)]
        return "\n".join(parts)
    return None


_TAG = re.compile(r"</?[A-Za-z_][\w-]*>")


def _title(text: str) -> str:
    """The first line of ``text`` that is not only markup tags."""
    for line in _TAG.sub("", text).splitlines():
        if line.strip():
            return line.strip()
    return ""
