"""engine.strategies package."""
