"""Sandbox settings: which database, which observation style, how often tools fail."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Style = Literal["compact", "official"]
Prompt = Literal["full", "short"]


class SandboxConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    db: str = "generated"
    """Database spec: a directory in the official layout, `generated` or `generated:SEED`."""
    style: Style = "compact"
    """Observation text: `compact` (one numbered line per row) or `official` (byte-for-byte official)."""
    prompt: Prompt = "full"
    """System prompt each episode opens with: `full` (tools, rules, plan format, an example plan; ~1.1K tokens) or
    `short` (the reply format and the tools' names and arguments; for a model trained from scratch, which learns
    the rest from its data and pays for every prompt token in every training sequence)."""
    failure_rate: float = Field(0.0, ge=0.0, le=1.0)
    """Probability that a tool call returns `Error: Current tool X is not available.` instead of its result."""
    seed: int = 0
    """Seed of the failure-injection random stream (same seed, same failures)."""
    precompute_limit: int = Field(10000, ge=0)
    """The first toolbox of a database renders every answer up front when there are at most this many (0: lazy)."""


DEFAULTS = SandboxConfig()
