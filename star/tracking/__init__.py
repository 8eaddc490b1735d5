"""MLflow tracking: runs, params, metrics, artifacts and the tags that tie them to DVC and git."""
