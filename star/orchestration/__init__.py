"""Running the pipeline: DVC stages in per-variant workspaces (locks, guards, MLflow stage runs) and the local services."""
