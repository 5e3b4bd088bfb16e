"""prompts.agents_prompts package."""
