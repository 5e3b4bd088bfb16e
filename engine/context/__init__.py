"""Building the request: the layers (system, CODE_LAW, history, scratchpad), the history a
session keeps between rounds, and the user-input preprocessing."""
