"""Replaying a recorded session under each strategy, with a model of the prompt cache."""
