"""Rollout engine settings (one place per default)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


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


ROLLOUT_DEFAULTS = RolloutConfig()
