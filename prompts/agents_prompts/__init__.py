"""Prompts of the engine's helper calls (the summary agent)."""
