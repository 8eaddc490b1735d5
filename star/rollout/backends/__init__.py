"""Generation backends behind `star.rollout.base.GenerationBackend`; heavy imports stay inside each module."""

from __future__ import annotations

from star.rollout.backends.openai_http import OpenAIBackend
from star.rollout.backends.vllm import VLLMBackend
from star.rollout.base import Generation, GenerationBackend, SamplingParams


def __getattr__(name):  # lazy: `from star.rollout.backends import TransformersBackend` imports torch only then
    if name == "TransformersBackend":
        from star.rollout.backends.transformers import TransformersBackend  # lazy: pulls torch
        return TransformersBackend
    if name == "VLLMBackend":
        return VLLMBackend
    if name == "OpenAIBackend":
        return OpenAIBackend
    raise AttributeError(name)


__all__ = ["Generation", "GenerationBackend", "SamplingParams", "TransformersBackend", "VLLMBackend", "OpenAIBackend"]
