"""Datasets and models as MLflow entities, named by the files DVC tracks (never copied into MLflow).

A stage run lists the data files it read as MLflow dataset inputs (name, digest, source path, context), so
the UI's "Datasets used" and lineage show which queries and SFT data a model saw. A model directory a stage
wrote (the SFT model, GRPO's selected and last checkpoints) becomes an MLflow 3 *external* logged model:
its metadata, params and metrics live in MLflow, its weights stay where DVC put them (tag `star.path`,
digest `star.model_digest`). Each is registered under one name per profile (`star-smoke`), so the Models
page lists every SFT and RL model of a profile with its evaluation metrics, and a user picks the best one.
An evaluation finds the logged model by digest, records it as the run's model input and logs its metrics
against it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

DATASET_CONTEXTS = {"sft": "training", "grpo": "training", "teacher": "teacher", "sft_data": "selection"}
MODEL_DIGEST = "star.model_digest"
MODEL_PATH = "star.path"
WEIGHTS = ("model.safetensors", "config.json")


def file_md5(path: Path) -> str:
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def path_digest(path: str | Path) -> str:
    """md5 of a file, or of a folder's sorted (relative path, md5) pairs (DVC hashes folders the same way)."""
    p = Path(path)
    if p.is_file():
        return file_md5(p)
    entries = sorted((str(f.relative_to(p)), file_md5(f)) for f in p.rglob("*") if f.is_file())
    return hashlib.md5(json.dumps(entries).encode()).hexdigest()


def is_model_dir(path: str | Path) -> bool:
    return (Path(path) / "config.json").is_file() and (Path(path) / "model.safetensors").is_file()


def model_digest(path: str | Path) -> str:
    """The weights and config of a model directory: two copies of one model share it wherever they live."""
    p = Path(path)
    return hashlib.md5("".join(file_md5(p / f) for f in WEIGHTS).encode()).hexdigest()


def model_dirs(outs: list[str], root: Path) -> list[str]:
    """Model directories among a stage's outputs: an out itself, or its direct subfolders (models/rl/selected)."""
    found = []
    for out in outs:
        p = root / out
        if is_model_dir(p):
            found.append(out)
        elif p.is_dir():
            found += [str(Path(out) / c.name) for c in sorted(p.iterdir()) if is_model_dir(c)]
    return found


def data_deps(deps: list[str], root: Path) -> list[str]:
    """The data a stage read: its dependencies under data/, files (queries, SFT data) before folders (the
    sandbox database), so the UI's first dataset shown is the one the stage is about."""
    found = [d for d in deps if d.split("/")[0] == "data" and (root / d).exists()]
    return sorted(found, key=lambda d: (root / d).is_dir())


def dataset_context(stage: str) -> str:
    base = stage.split("@")[0].split(":")[-1]
    if base.startswith("eval"):
        return "evaluation"
    return DATASET_CONTEXTS.get(base, "input")


def _rows(path: Path) -> int | None:
    if path.is_file() and path.suffix == ".jsonl":
        with open(path, "rb") as f:
            return sum(1 for line in f if line.strip())
    return None


def log_datasets(client, run_id: str, paths: list[str], root: Path, context: str) -> int:
    """Each path as an MLflow dataset input of the run (metadata only: name, md5, source, rows)."""
    import warnings

    from mlflow.data.dataset_source_registry import resolve_dataset_source
    from mlflow.data.meta_dataset import MetaDataset
    from mlflow.entities import DatasetInput, InputTag

    inputs = []
    for rel in paths:
        p = root / rel
        with warnings.catch_warnings():  # MLflow warns that it guessed the source type (a local file: right)
            warnings.simplefilter("ignore")
            source = resolve_dataset_source(str(p.resolve()))
        ds = MetaDataset(source=source, name=rel,
                         digest=path_digest(p)[:16])
        tags = [InputTag("mlflow.data.context", context)]
        rows = _rows(p)
        if rows is not None:
            tags.append(InputTag("star.rows", str(rows)))
        inputs.append(DatasetInput(ds._to_mlflow_entity(), tags=tags))
    if inputs:
        client.log_inputs(run_id, datasets=inputs)
    return len(inputs)


def registered_name(profile: str) -> str:
    return f"star-{profile}"


def log_models(client, experiment_id: str, run_id: str, paths: list[str], root: Path, stage: str,
               profile: str, variant: str | None, params: dict[str, Any] | None = None) -> list[str]:
    """Each model directory as an external logged model of the run, registered under the profile's name."""
    import mlflow
    from mlflow.entities import LoggedModelOutput

    ids = []
    for rel in paths:
        p = root / rel
        label = " · ".join(x for x in (variant, stage if Path(rel).name in ("sft", "rl") else
                                       f"{stage}/{Path(rel).name}") if x)
        tags = {MODEL_PATH: rel, MODEL_DIGEST: model_digest(p), "star.stage": stage, "star.profile": profile,
                "star.variant": variant or ""}
        model = client.create_logged_model(experiment_id, name=label.replace(" · ", "_").replace("/", "_")
                                           .replace("=", "-"), source_run_id=run_id, tags=tags,
                                           params={k: str(v)[:6000] for k, v in (params or {}).items()},
                                           model_type="transformers-causal-lm")
        client.finalize_logged_model(model.model_id, "READY")
        client.log_outputs(run_id, [LoggedModelOutput(model.model_id, 0)])
        mlflow.register_model(f"models:/{model.model_id}", registered_name(profile),
                              tags={"star.stage": stage, "star.variant": variant or "", MODEL_PATH: rel})
        ids.append(model.model_id)
    return ids


def find_model(client, experiment_id: str, path: Path) -> str | None:
    """The logged model whose weights are these (by digest), newest first; None when none was logged."""
    if not is_model_dir(path):
        return None
    digest = model_digest(path)
    found = client.search_logged_models([experiment_id], filter_string=f"tags.`{MODEL_DIGEST}` = '{digest}'",
                                        max_results=1, order_by=[{"field_name": "creation_time", "ascending": False}])
    return found[0].model_id if found else None


def link_model_input(client, run_id: str, model_id: str) -> None:
    from mlflow.entities import LoggedModelInput

    client.log_inputs(run_id, models=[LoggedModelInput(model_id)])


def log_model_metrics(client, run_id: str, model_id: str, metrics: dict[str, float]) -> None:
    """Evaluation metrics against the model, so the Models page shows them beside its params."""
    import time

    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    items = [Metric(k, float(v), now, 0, model_id=model_id) for k, v in metrics.items()]
    for i in range(0, len(items), 500):
        client.log_batch(run_id, metrics=items[i:i + 500])
