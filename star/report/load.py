"""The ablation report's inputs: one variant's folder (evaluations, training curves, params) as a VariantResult."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from star.ablations import parse_variant_name
from star.params_io import flatten
from star.report import paper_results as paper
from star.report.metrics import (
    ReportError,
    outcomes_from_trajectories,
    samples_from_trajectories,
)
from star.tracking.mlflow_logging import read_jsonl


@dataclass
class VariantResult:
    name: str
    levels: dict[str, str]
    outcomes: dict[str, float]                    # query id -> success (0/1 or mean over samples)
    metrics: dict[str, Any] = field(default_factory=dict)       # aggregate table of the final model
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # step metrics
    setting: dict[str, object] = field(default_factory=dict)    # paper-comparable setting
    baselines: dict[str, dict[str, Any]] = field(default_factory=dict)  # e.g. {"base": {...}, "sft": {...}}
    samples: dict[str, list[tuple[dict, str]]] = field(default_factory=dict)  # query id -> [(scores, finish_reason)]
    reward: str | None = None                     # the reward the variant trained with (params rl.reward)


def curves_from_steps(records: list[dict], step_key: str = "step") -> dict[str, list[tuple[int, float]]]:
    curves: dict[str, list[tuple[int, float]]] = {}
    for i, r in enumerate(records):
        step = int(r.get(step_key, i))
        for k, v in flatten({k: v for k, v in r.items() if k != step_key}).items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                curves.setdefault(k, []).append((step, float(v)))
    return curves


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ReportError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise ReportError(f"{path}: expected a JSON object")
    return data


def _find(root: Path, *candidates: str) -> Path | None:
    for c in candidates:
        p = root / c
        if p.exists():
            return p
    return None


def load_variant_dir(path: str | Path, name: str | None = None, levels: dict[str, str] | None = None) -> VariantResult:
    """A variant's run directory (as the `star` flow writes it):
    params.yaml, metrics/eval/rl/{metrics.json, trajectories.jsonl}, optional metrics/eval/{base,sft}/metrics.json,
    models/rl/steps.jsonl."""
    root = Path(path)
    if not root.is_dir():
        raise ReportError(f"{root}: variant directory not found")
    values: dict = {}
    params = root / "params.yaml"
    if params.is_file():
        import yaml

        values = yaml.safe_load(params.read_text()) or {}
    run = values.get("run") or {}
    name = name or run.get("variant") or root.name
    if levels is None:
        try:
            levels = parse_variant_name(name)
        except ValueError:
            levels = {}
    traj = _find(root, "metrics/eval/rl/trajectories.jsonl")
    if traj is None:
        raise ReportError(f"{root}: no metrics/eval/rl/trajectories.jsonl (the final evaluation did not run)")
    try:
        records = read_jsonl(traj)
    except ValueError as exc:
        raise ReportError(str(exc)) from None
    outcomes, samples = outcomes_from_trajectories(records), samples_from_trajectories(records)
    metrics_path = _find(root, "metrics/eval/rl/metrics.json")
    metrics = _read_json(metrics_path) if metrics_path else {}
    metrics = metrics.get("metrics", metrics)
    steps = _find(root, "models/rl/metrics.jsonl", "models/rl/steps.jsonl")
    curves = curves_from_steps(read_jsonl(steps)) if steps else {}
    baselines = {}
    for stage in ("base", "sft"):
        p = _find(root, f"metrics/eval/{stage}/metrics.json")
        if p:
            data = _read_json(p)
            baselines[stage] = data.get("metrics", data)
    reward = (values.get("rl") or {}).get("reward")
    return VariantResult(name, dict(levels), outcomes, metrics, curves, paper.setting_of(values) if values else {},
                         baselines, samples, str(reward) if reward else None)
