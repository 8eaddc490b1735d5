"""Configuration of the orchestration layer: MLflow tracking, the Prefect flows, the comparison report.

One place per default; `star/config.py` composes these from params/ (sections `tracking`, `flow`).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TrackingConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    experiment: str = "star"
    """MLflow experiment that every pipeline, ablation and stage run is logged under."""
    tracking_uri: str | None = None
    """MLflow backend store; None = $MLFLOW_TRACKING_URI, else sqlite:///<project>/mlflow.db."""
    artifact_root: str = "mlruns"
    """Directory (relative to the project) where a new experiment keeps its artifacts."""
    sample_trajectories: int = Field(5, ge=0)
    """Trajectories per evaluation logged as readable artifacts (the rest stay in the stage outputs)."""


class FlowConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    concurrency: int = Field(1, ge=1)
    """Variants of an ablation that run at the same time (one per GPU worker in production)."""
    work_pool: str = "local-pool"
    """Prefect work pool the `ablation` deployment submits to (a local process pool by default)."""
    runs_dir: str = "runs"
    """Where flow runs keep their stage outputs, content-addressed so variants share upstream work."""
    retries: int = Field(1, ge=0)
    """Retries of a stage that is safe to repeat (its outputs are written atomically)."""
    dvc_remote: str | None = None
    """DVC remote all workers share (a folder every node mounts, s3://…): a stage pulls the run-cache from
    it before running and pushes its outputs and the run-cache after, so a variant on another worker
    restores what one computed ($STAR_DVC_REMOTE, set on a worker, wins)."""


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
