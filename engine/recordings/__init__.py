"""Recordings: sessions other agents wrote, read into ctxscope sessions, and ctxscope sessions
written out.

- :mod:`~engine.recordings.importing` — ``ctxscope import``: sniff the format, parse every
  file whole, store (:func:`~engine.recordings.importing.parse_path`,
  :func:`~engine.recordings.importing.import_parsed`);
- one module per format: :mod:`~engine.recordings.claude_code`, :mod:`~engine.recordings.codex`,
  :mod:`~engine.recordings.gemini`, :mod:`~engine.recordings.openhands`,
  :mod:`~engine.recordings.aider`, :mod:`~engine.recordings.anthropic_jsonl`,
  :mod:`~engine.recordings.trajectories`;
- :mod:`~engine.recordings.writer` stores a parsed session (tool steps as the live agent
  stores them), :mod:`~engine.recordings.envelopes` rebuilds tool results;
- :mod:`~engine.recordings.export` — ``ctxscope export``.

This package's ``__init__`` imports nothing, so a command that needs only the export formats or
the hidden prefix does not load every importer.
"""
