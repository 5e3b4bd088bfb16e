"""The agent's tools: LS, Glob, Grep, Read, Edit, MultiEdit, Write, Bash, TodoWrite.

Every tool returns one :class:`tools.base.ToolResult` envelope; ``engine.compaction.tool_results``
turns it into the seed-A3 form that history keeps.
"""
