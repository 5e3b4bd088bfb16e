"""Model providers: one small protocol (``base``), Anthropic and an offline rule-based default."""
