"""``ctxscope import``: the public names, kept here for existing callers.

The formats live in :mod:`engine.importers` (one module per format, the writer, the result
envelopes); the export in :mod:`engine.exporter`.
"""

from __future__ import annotations

from engine.importers import (
    FORMATS,
    ImportError_,
    ImportReport,
    ParsedFiles,
    detect_format,
    import_parsed,
    import_session,
    parse_path,
)

__all__ = [
    "FORMATS",
    "ImportError_",
    "ImportReport",
    "ParsedFiles",
    "detect_format",
    "import_parsed",
    "import_session",
    "parse_path",
]
