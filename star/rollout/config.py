"""Rollout engine settings (one place per default)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

BackendName = Literal["auto", "transformers", "vllm"]
"""auto: vLLM where it is installed (`STAR_VLLM=1 bash scripts/setup.sh`, or a GPU node's `.[gpu]`), else transformers."""


class RolloutConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    max_batch: int = Field(8, ge=1)
    """Most sequences one generate call decodes together."""
    max_in_flight: int = Field(16, ge=1)
    """Most episodes open at once (generating, waiting on a tool, or queued to generate)."""
    tool_workers: int = Field(4, ge=1)
    """Threads executing tool calls (and scoring finished episodes) beside generation."""
    gather_wait_s: float = Field(0.05, ge=0.0)
    """Longest wait for running tool calls to return so a generate batch fills up (async engine)."""
    continuous: bool = True
    """Continuous batching where the backend has it (TransformersBackend): an episode's next turn joins the
    running batch instead of waiting for its longest row to end (`admit_every` steps at most)."""
    admit_every: int = Field(8, ge=1)
    """Continuous batching: decode steps between admissions of new sequences (each costs one prefill pass)."""
    temperature: float = Field(1.0, ge=0.0)
    """Sampling temperature (RL uses 1.0; evaluation 0.6)."""
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    """Nucleus mass."""
    max_new_tokens: int = Field(1024, ge=1)
    """Longest single assistant turn in tokens."""
    seed: int = 0
    """Base seed: each (query, sample, turn) derives its own from it."""
    progress: bool = True
    """Show a tqdm bar of finished episodes."""


class VLLMConfig(BaseModel):
    """How a vLLM rollout engine is started (star.rollout.backends.vllm); the same keys on CPU and GPU."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    """auto: float32 on CPU (without native bf16 the CPU build decoded 2.2x slower in bf16 here), bfloat16 on GPU."""
    enforce_eager: bool | None = None
    """None: eager on CPU (torch.compile warm-up costs minutes a start and decoded no faster here), compiled on GPU."""
    gpu_memory_utilization: float = Field(0.4, gt=0.0, lt=1.0)
    """GPU: share of its memory for the engine (weights + KV cache); the rest stays with the DeepSpeed trainer."""
    cpu_kv_cache_gib: float = Field(4.0, gt=0.0)
    """CPU: GiB of KV cache (the CPU build's VLLM_CPU_KVCACHE_SPACE; 4 GiB hold ~90K SmolLM2 tokens in float32)."""
    enable_prefix_caching: bool = True
    """Reuse the KV of shared prefixes (a group's prompt, an episode's earlier turns)."""


ROLLOUT_DEFAULTS = RolloutConfig()
