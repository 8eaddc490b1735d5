"""MLflow tracking's settings (section `tracking`), one place per default; `star/config.py` composes it from params/."""

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
