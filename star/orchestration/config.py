"""The Prefect flows' settings (section `flow`), one place per default; `star/config.py` composes it from params/."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class FlowConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    concurrency: int = Field(1, ge=1)
    """Variants of an ablation that run at the same time (one per GPU worker in production)."""
    work_pool: str = "local-pool"
    """Prefect work pool the `ablation` deployment submits to (a local process pool by default)."""
    runs_dir: str = "runs"
    """Where flow runs keep their stage outputs, content-addressed so variants share upstream work."""
    compute_slots: int = Field(1, ge=0)
    """Compute-heavy stages (dvc.yaml `meta: {compute: true}`: training, evaluation) that run at once across
    every flow run of this Prefect server, a global concurrency limit `star serve` sets (0: no limit). One on
    a small machine: two heavy processes on two cores run ~10x slower, not 2x; raise it for several workers."""
    retries: int = Field(1, ge=0)
    """Retries of a stage that is safe to repeat (its outputs are written atomically)."""
    dvc_remote: str | None = None
    """DVC remote all workers share (a folder every node mounts, s3://…): a stage pulls the run-cache from
    it before running and pushes its outputs and the run-cache after, so a variant on another worker
    restores what one computed ($STAR_DVC_REMOTE, set on a worker, wins)."""
