"""Compaction: when to compact (the policy model and the six strategies), what a summary says
(the summariser and its forms), how tool results shrink, where a summary is placed, and what a
summary kept (the fidelity ledger)."""
