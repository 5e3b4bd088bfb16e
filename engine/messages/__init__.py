"""The model's wire: messages rendered for the API, token counts, the scratchpad of a round,
and the checks every request passes before it is sent."""
