"""Generation backends (transformers, vLLM, OpenAI-compatible HTTP) and the multi-episode rollout engine."""
