"""The ablation report's settings (section `report`), one place per default; `star/config.py` composes it from params/."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ReportConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    bootstrap: int = Field(2000, ge=100)
    """Bootstrap resamples for the confidence intervals of the headline metrics."""
    confidence: float = Field(0.95, gt=0.5, lt=1.0)
    """Coverage of the confidence intervals."""
    permutations: int = Field(10000, ge=100)
    """Random sign flips of the paired permutation test (exact when there are few discordant pairs)."""
    seed: int = 0
    """Seed of the resampling (the same inputs give the same report)."""
    baseline: str | None = None
    """Variant the paired tests compare against; None = the first variant of the ablation."""
    reward: str | None = None
    """Registered reward that scores every variant's trajectories for the mean-reward metric; None = the baseline's training reward (a curriculum's final stage)."""
