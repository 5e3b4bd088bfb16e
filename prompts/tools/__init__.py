"""Tool descriptions written for the model, one module per tool (``DESCRIPTION``).

They are part of L1, the stable prefix of every request: keep them free of anything that
changes between calls (no dates, no paths, no settings values that differ per run).
"""
