"""Teachers that play the agent protocol (built-in rules + solver, or an LLM) and rejection sampling into SFT data."""
