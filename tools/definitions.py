"""The tool definitions the model is offered (name, description, input schema), without
importing the tools.

Building them takes the ten tools' modules and pydantic's JSON schema of each input model:
about 28 ms of CPU, most of what ``ctxscope context`` does beyond ``show`` that is not the
request itself (issue 44). They change only when a tool's code does, so they are kept in
``tools/definitions.json``, written from :func:`tools.registry.default_registry` with
``python -m tools.definitions --write``; ``tests/tools/test_definitions.py`` fails, naming that
command, when the file and the tools differ. A strategy's own tools (seed 003's loading tools)
are built as before, after the ten.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tools.base import Tool
from tools.common import tool_definition

STORED = Path(__file__).with_name("definitions.json")
"""The default registry's definitions, in its order."""


def tool_definitions(extra: Sequence[type[Tool]] = ()) -> list[dict[str, Any]]:
    """What :meth:`ToolRegistry.schemas` gives for ``default_registry().extended(extra)``: the
    ten tools' stored definitions (fresh copies, which the caller may change), then those of
    the ``extra`` tools whose names are not among them."""
    out: list[dict[str, Any]] = json.loads(_stored_text())
    names = {d["name"] for d in out}
    for tool in extra:
        if tool.name not in names:
            names.add(tool.name)
            out.append(tool_definition(tool))
    return out


@functools.cache
def _stored_text() -> str:
    return STORED.read_text(encoding="utf-8")


def built_text() -> str:
    """The file's text as the tools build it now (imports all ten)."""
    from tools.registry import default_registry

    return json.dumps(default_registry().schemas(), ensure_ascii=False, indent=1) + "\n"


def main(argv: list[str]) -> int:
    """``python -m tools.definitions --write``: rewrite the file from the tools;
    without ``--write``: exit 1 when it differs from them."""
    text = built_text()
    if "--write" in argv:
        STORED.write_text(text, encoding="utf-8")
        return 0
    return 0 if STORED.read_text(encoding="utf-8") == text else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
