"""MLflow logging for the pipeline: one experiment, a parent run per ablation (or per `dvc repro`),
a child run per variant, a nested run per stage.

Everything goes through an explicit `MlflowClient` and run ids, so a stage that runs in another
process (a DVC stage, a Prefect task's subprocess) nests under the right parent: the parent's id
travels in the environment variable STAR_MLFLOW_PARENT_RUN_ID, and the stage's own code can log
into its run with `mlflow.start_run()` because MLFLOW_RUN_ID is set for it.

Default backend: sqlite:///<project>/mlflow.db, artifacts under <project>/mlruns/ (`mlflow ui
--backend-store-uri sqlite:///mlflow.db` serves them; see docs/orchestration.md).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any, Iterable

from star.jsonl import atomic_write_text, read_jsonl  # noqa: F401  (used by the report too)
from star.params_io import flatten
from star.tracking.config import TrackingConfig

PROJECT_DIR = Path(__file__).resolve().parents[2]
PARENT_ENV = "STAR_MLFLOW_PARENT_RUN_ID"

# Tags the pipeline writes (searchable in the UI: tags.star.kind = 'variant').
KIND = "star.kind"  # pipeline | ablation | variant | stage
ABLATION = "star.ablation"
VARIANT = "star.variant"
PROFILE = "star.profile"
STAGE = "star.stage"
OVERRIDES = "star.overrides"  # star.ablations.overrides_label: what a run set on top of its profile and variant
PARAMS_DIGEST = "star.params_digest"
GIT_COMMIT = "git.commit"
GIT_DIRTY = "git.dirty"
DVC_LOCK = "dvc.lock_sha256"

# The evaluation rates people compare first (fractions 0-1, as the evaluator writes them): the metrics
# logged against a model and charted first.
HEADLINE_KEYS = ("success_rate", "delivery_rate", "commonsense_macro", "hard_macro", "commonsense_micro",
                 "hard_micro", "hacked_rate")

BULKY_KEYS = {"token_ids", "policy_mask", "logprobs"}
MAX_PARAM_VALUE = 6000  # MLflow 3 limit on one param value
TELEMETRY_OFF = {"DO_NOT_TRACK": "1", "MLFLOW_DISABLE_TELEMETRY": "true",
                 "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "GX_ANALYTICS_ENABLED": "false"}


def quiet_telemetry() -> None:
    for key, value in TELEMETRY_OFF.items():
        os.environ.setdefault(key, value)


def default_tracking_uri(project_dir: Path = PROJECT_DIR) -> str:
    return f"sqlite:///{Path(project_dir).resolve() / 'mlflow.db'}"


# MLflow 3's UI ignores the experiment's kind tag: a page shows the GenAI view (every run without a
# logged model listed under "Evaluations") unless the sidebar's switch, or this parameter, picks the
# machine-learning view (runs, params, metric charts).
UI_WORKFLOW = "workflowType=machine_learning"


def ui_url(base: str, experiment_id: str, run_id: str | None = None, tail: str = "") -> str:
    """A page of the MLflow UI at `base` in its machine-learning view: the experiment's runs, or one run."""
    return f"{base.rstrip('/')}/#/experiments/{experiment_id}/runs" + (f"/{run_id}" if run_id else "") \
        + tail + "?" + UI_WORKFLOW


def compare_url(base: str, experiment_id: str, run_ids: list[str]) -> str:
    """The MLflow UI's side-by-side page of these runs (params and metrics in columns, one per run)."""
    import json
    from urllib.parse import quote

    return (f"{base.rstrip('/')}/#/compare-runs?runs={quote(json.dumps(list(run_ids)))}"
            f"&experiments={quote(json.dumps([experiment_id]))}&" + UI_WORKFLOW)


def tracking_uri(config: TrackingConfig | None = None, project_dir: Path = PROJECT_DIR) -> str:
    """Config value, else $MLFLOW_TRACKING_URI, else the project's sqlite store."""
    if config is not None and config.tracking_uri:
        return config.tracking_uri
    return os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(project_dir)


class Tracker:
    """The experiment, its store, and helpers that log to a run given by id."""

    def __init__(self, config: TrackingConfig | None = None, project_dir: Path = PROJECT_DIR,
                 uri: str | None = None):
        quiet_telemetry()
        import mlflow
        from mlflow import MlflowClient

        self.config = config or TrackingConfig()
        self.project_dir = Path(project_dir)
        self.uri = uri or tracking_uri(self.config, self.project_dir)
        mlflow.set_tracking_uri(self.uri)
        self.client = MlflowClient(tracking_uri=self.uri)
        self.experiment_id = self._experiment()

    def _experiment(self) -> str:
        exp = self.client.get_experiment_by_name(self.config.experiment)
        if exp is not None:
            return exp.experiment_id
        root = Path(self.config.artifact_root)
        if not root.is_absolute():
            root = self.project_dir / root
        root.mkdir(parents=True, exist_ok=True)
        try:
            # experimentKind: open the UI on the training-runs table rather than the GenAI overview.
            return self.client.create_experiment(self.config.experiment, artifact_location=root.resolve().as_uri(),
                                                 tags={"mlflow.experimentKind": "custom_model_development"})
        except Exception:  # created meanwhile by a concurrent stage: use theirs
            exp = self.client.get_experiment_by_name(self.config.experiment)
            if exp is None:
                raise
            return exp.experiment_id

    # ----------------------------------------------------------------------------------- runs
    def start_run(self, name: str, kind: str, parent_id: str | None = None, tags: dict[str, Any] | None = None) -> str:
        # Provenance describes the code (this checkout), wherever the store lives.
        all_tags = {KIND: kind, **provenance_tags(), **{k: str(v) for k, v in (tags or {}).items()}}
        if parent_id:
            all_tags["mlflow.parentRunId"] = parent_id
        run = self.client.create_run(self.experiment_id, run_name=name, tags=all_tags)
        return run.info.run_id

    def end_run(self, run_id: str, status: str = "FINISHED") -> None:
        self.client.set_terminated(run_id, status=status)

    def find_runs(self, filter_string: str, max_results: int = 1000) -> list:
        return self.client.search_runs([self.experiment_id], filter_string=filter_string,
                                       max_results=max_results, order_by=["attributes.start_time ASC"])

    def children(self, parent_id: str) -> list:
        return self.find_runs(f"tags.mlflow.parentRunId = '{parent_id}'")

    def close_interrupted(self, run_id: str, stage: str, reason: str, descendants: bool = True) -> list[str]:
        """End a run left RUNNING by a process that died (and its RUNNING descendants) as KILLED with
        the stage and the reason; returns the run ids it closed (none if the run had ended)."""
        closed = []
        try:
            run = self.client.get_run(run_id)
        except Exception:  # not in this store (another tracking URI): nothing to close here
            return closed
        for child in self.children(run_id) if descendants else []:
            closed += self.close_interrupted(child.info.run_id, child.data.tags.get(STAGE, stage), reason)
        if run.info.status == "RUNNING":
            self.client.set_tag(run_id, "star.failed_stage", stage)
            self.client.set_tag(run_id, "star.error", reason[:4900])
            self.end_run(run_id, "KILLED")
            closed.append(run_id)
        return closed

    # ---------------------------------------------------------------------------------- params
    def log_params(self, run_id: str, params: dict[str, Any]) -> None:
        """Flattened params (rl.learning_rate …), in batches of 100 (the store's limit per call)."""
        from mlflow.entities import Param

        flat = flatten(params)
        items = [Param(k, _param_value(v)) for k, v in flat.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(run_id, params=items[i:i + 100])

    # --------------------------------------------------------------------------------- metrics
    def log_metrics(self, run_id: str, metrics: dict[str, Any], step: int = 0, prefix: str = "") -> int:
        """Numeric leaves of a nested dict as metrics (`eval.success_rate`, `eval.by_level.easy.success_rate`)."""
        from mlflow.entities import Metric

        now = _now_ms()
        items = [Metric(_metric_key(prefix + k), float(v), now, step)
                 for k, v in flatten(metrics).items() if _is_number(v)]
        for i in range(0, len(items), 1000):
            self.client.log_batch(run_id, metrics=items[i:i + 1000])
        return len(items)

    def log_step_metrics(self, run_id: str, records: Iterable[dict], step_key: str = "step", prefix: str = "") -> int:
        """Training dynamics: one record per step (reward, success, entropy, …) as metric histories."""
        from mlflow.entities import Metric

        now = _now_ms()
        batch, n = [], 0
        for i, record in enumerate(records):
            step = int(record.get(step_key, i))
            for key, value in flatten({k: v for k, v in record.items() if k != step_key}).items():
                if _is_number(value):
                    batch.append(Metric(_metric_key(prefix + key), float(value), now, step))
            if len(batch) >= 900:
                self.client.log_batch(run_id, metrics=batch)
                n += len(batch)
                batch = []
        if batch:
            self.client.log_batch(run_id, metrics=batch)
            n += len(batch)
        return n

    def log_results(self, run_id: str, results: dict[str, Any], prefix: str = "") -> int:
        """A stage's result file: its `config` block (the settings that produced it) as params
        `PREFIX.config.*`, every other number as a metric. A setting logged as a metric is a constant
        that the UI's charts pick up as if it were a result."""
        config = results.get("config")
        if isinstance(config, dict) and config:
            self.log_params(run_id, {f"{prefix}config": config})
        return self.log_metrics(run_id, {k: v for k, v in results.items() if k != "config"}, prefix=prefix)

    # ------------------------------------------------------------------------------- artifacts
    def log_artifact(self, run_id: str, path: str | Path, artifact_path: str | None = None) -> None:
        path = Path(path)
        if path.is_dir():
            self.client.log_artifacts(run_id, str(path), artifact_path)
        else:
            self.client.log_artifact(run_id, str(path), artifact_path)

    def log_text(self, run_id: str, text: str, artifact_file: str) -> None:
        self.client.log_text(run_id, text, artifact_file)

    def log_dict(self, run_id: str, data: Any, artifact_file: str) -> None:
        self.client.log_dict(run_id, data, artifact_file)

    def log_eval_table(self, run_id: str, metrics: dict[str, Any], name: str = "eval",
                       only: Iterable[str] | None = None) -> int:
        """An evaluation's metric table: every number as a metric (its `config` as params), or only the
        top-level keys `only` (a variant's run charts its headline rates, not 70 one-point bars); the
        whole table as JSON + CSV artifacts either way.

        Expects the evaluator's aggregate keys (delivery_rate, commonsense_micro/macro,
        hard_micro/macro, success_rate) and optional nested breakdowns (per level, per check)."""
        if only is None:
            n = self.log_results(run_id, metrics, prefix=f"{name}.")
        else:
            n = self.log_metrics(run_id, {k: metrics[k] for k in only if k in metrics}, prefix=f"{name}.")
        self.log_dict(run_id, metrics, f"{name}/metrics.json")
        rows = eval_rows({k: v for k, v in metrics.items() if k != "config"})
        buf = io.StringIO()
        writer = csv.writer(buf)
        writer.writerow(["group", "metric", "value"])
        writer.writerows(rows)
        self.log_text(run_id, buf.getvalue(), f"{name}/metrics.csv")
        return n

    def log_trajectories(self, run_id: str, trajectories: list[dict], n: int | None = None,
                         name: str = "trajectories") -> int:
        """The first n trajectories as readable Markdown (the conversation, plan, scores) and raw JSON."""
        n = self.config.sample_trajectories if n is None else n
        picked = trajectories[:n]
        for i, traj in enumerate(picked):
            qid = str(traj.get("query_id", i)).replace("/", "_")
            self.log_text(run_id, trajectory_markdown(traj), f"{name}/{i:02d}_{qid}.md")
        if picked:
            # Token-level arrays stay in the stage outputs; the artifact is for reading.
            slim = [{k: v for k, v in t.items() if k not in BULKY_KEYS} for t in picked]
            self.log_text(run_id, "\n".join(json.dumps(t, default=str) for t in slim) + "\n", f"{name}/sample.jsonl")
        return len(picked)


# ------------------------------------------------------------------------------------ helpers

def _now_ms() -> int:
    import time

    return int(time.time() * 1000)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _metric_key(key: str) -> str:
    # MLflow keys allow letters, digits, _ - . / and space; evaluator check names are already safe.
    return "".join(c if c.isalnum() or c in "_-./ " else "_" for c in key)


def _param_value(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, (list, dict, tuple)) else str(value)
    return text if len(text) <= MAX_PARAM_VALUE else text[:MAX_PARAM_VALUE - 3] + "..."


def eval_rows(metrics: dict[str, Any]) -> list[tuple[str, str, float]]:
    """Nested metric table -> (group, metric, value) rows; the group is the path above the leaf."""
    rows = []
    for key, value in flatten(metrics).items():
        if _is_number(value):
            group, _, metric = key.rpartition(".")
            rows.append((group or "all", metric, float(value)))
    return rows


def trajectory_markdown(traj: dict) -> str:
    lines = [f"# trajectory {traj.get('query_id', '?')}", ""]
    for key in ("finish_reason", "tool_calls", "n_tokens"):
        if key in traj:
            lines.append(f"- {key}: {traj[key]}")
    scores = traj.get("scores") or {}
    if scores:
        lines.append("- scores: " + ", ".join(f"{k}={v}" for k, v in scores.items() if not isinstance(v, dict)))
    lines.append("")
    for msg in traj.get("messages") or []:
        lines += [f"## {msg.get('role', '?')}", "", "```", str(msg.get("content", "")), "```", ""]
    if traj.get("plan") is not None:
        lines += ["## parsed plan", "", "```json", json.dumps(traj["plan"], indent=1, default=str), "```"]
    return "\n".join(lines) + "\n"


def provenance_tags(project_dir: Path = PROJECT_DIR) -> dict[str, str]:
    """git commit (and whether the tree is dirty) and the sha256 of dvc.lock, when present."""
    tags: dict[str, str] = {GIT_COMMIT: "unknown"}
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=project_dir, capture_output=True, text=True,
                                timeout=10)
        if commit.returncode == 0:
            tags[GIT_COMMIT] = commit.stdout.strip()
            dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=project_dir,
                                   capture_output=True, text=True, timeout=20)
            tags[GIT_DIRTY] = str(bool(dirty.stdout.strip())).lower()
    except (OSError, subprocess.SubprocessError):
        pass
    lock = Path(project_dir) / "dvc.lock"
    if lock.is_file():
        tags[DVC_LOCK] = hashlib.sha256(lock.read_bytes()).hexdigest()
    return tags


