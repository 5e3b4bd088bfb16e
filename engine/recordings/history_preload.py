"""What the history import's forkserver imports before it forks a worker
(:func:`engine.recordings.history_workers.in_pool`): the workers' modules and the tokenizer's
tables, loaded once and shared by every worker forked from it, instead of each worker
importing everything again and reading the tables at its first count (issue 44: about half a
second of CPU a worker, the import's whole cost for a history of a few files). The replay's
workers start the same way (:mod:`engine.replay.worker`).
"""

from __future__ import annotations

import engine.recordings.history_workers  # noqa: F401  (imported to be forked from)
from engine.messages.tokens import encoding

encoding()
