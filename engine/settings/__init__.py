"""Settings: every number ctxscope runs under, where it came from, and what a session keeps.

``config`` is the pydantic ``Settings`` model (the seeds' defaults) and the order its sources
are read in; ``sources`` reads those sources (files, ``CTXSCOPE_*`` variables); ``strategies``
holds each compaction strategy's own section; ``safety`` the settings a workspace may only
tighten; ``params`` the parameters one session runs with, made from the settings.
"""
