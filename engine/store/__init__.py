"""engine.store package."""
