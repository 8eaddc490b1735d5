"""`star experiments`: DVC's experiments (ablation variants included) as one table that fits a terminal.

Reads `dvc exp show --json` (DVC computes it; nothing is re-derived here) and keeps what tells the
experiments apart: the params whose values differ between them and the headline metrics of the RL model's
evaluation. `--all` prints DVC's own full table instead.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from star.orchestration.stages import dvc_bin
from star.tracking.mlflow_logging import HEADLINE_KEYS

# (metrics file, key) -> column header: the RL model's evaluation (the metrics files dvc.yaml declares).
COLUMNS = {("metrics/eval/rl/metrics.json", k): k.replace("_rate", "").replace("commonsense", "cs")
           for k in HEADLINE_KEYS if k not in ("commonsense_micro", "hard_micro")}
SKIP_PARAMS = ("run.",)  # the variant's own name: the experiment's name already says it


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--all", action="store_true", help="DVC's full table (`dvc exp show`), every column")
    parser.add_argument("--width", type=int, default=120, help="widest line printed (default 120)")
    parser.add_argument("--all-commits", "-A", action="store_true",
                        help="experiments of every commit (default: those based on HEAD, as `dvc exp show`)")
    parser.add_argument("--repo", default=".", help="the DVC project (default: here)")


def _leaves(tree: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in (tree or {}).items():
        if isinstance(v, dict):
            out.update(_leaves(v, f"{prefix}{k}."))
        else:
            out[prefix + k] = v
    return out


def experiment_rows(shown: list[dict]) -> list[dict]:
    """One row per experiment of `dvc exp show --json`: name, flattened params, {(file, key): value} metrics."""
    rows = []
    for commit in shown:
        for exp in [commit] + [e for ex in commit.get("experiments") or [] for e in ex.get("revs") or []]:
            data = exp.get("data") or {}
            if not data:  # an experiment DVC could not read (failed, queued): nothing to compare
                continue
            params = {}
            for doc in (data.get("params") or {}).values():
                params.update(_leaves(doc.get("data") or {}))
            metrics = {}
            for path, doc in (data.get("metrics") or {}).items():
                for key, value in _leaves(doc.get("data") or {}).items():
                    metrics[(path, key)] = value
            rev = exp.get("rev") or data.get("rev") or "workspace"
            name = exp.get("name") or (rev if rev == "workspace" else rev[:7])
            rows.append({"name": name, "params": params, "metrics": metrics})
    return rows


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return "-" if value is None else str(value)


def table(rows: list[dict], width: int = 120) -> str:
    """The experiments side by side: name, changed params, headline metrics; columns dropped from the right
    (params first) until the table fits `width`, saying how many were left out."""
    keys = sorted({k for r in rows for k in r["params"]})
    # The params that tell apart the rows with results (experiments, the workspace); commits without
    # results (or whose params DVC could not read) only add rows.
    scored = [r for r in rows if r["params"] and any(c in r["metrics"] for c in COLUMNS)]
    basis = scored if len(scored) > 1 else [r for r in rows if r["params"]]

    def values(k: str) -> int:
        return len({json.dumps(r["params"].get(k), sort_keys=True) for r in basis})

    # most distinct values first: the ablation's axis before a value one experiment happened to set
    changed = sorted((k for k in keys if not k.startswith(SKIP_PARAMS) and values(k) > 1), key=lambda k: -values(k))
    metric_cols = [c for c in COLUMNS if any(c in r["metrics"] for r in rows)]
    header = ["experiment"] + changed + [COLUMNS[c] for c in metric_cols]
    body = [[r["name"]] + [_fmt(r["params"].get(k)) for k in changed] + [_fmt(r["metrics"].get(c)) for c in metric_cols]
            for r in rows]
    dropped = 0
    while True:
        widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(header)]
        line = sum(widths) + 2 * (len(widths) - 1)
        if line <= width or len(header) <= 2:
            break
        i = len(changed) if changed else len(header) - 1  # the last changed param goes first, then metrics
        header.pop(i)
        for b in body:
            b.pop(i)
        changed = changed[:-1] if changed else changed
        dropped += 1
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in [header] + body]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if dropped:
        lines.append(f"({dropped} more column(s) left out at {width} columns; `star experiments --all` shows all)")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    dvc = dvc_bin()
    if args.all:
        return subprocess.run([dvc, "exp", "show", *(["-A"] if args.all_commits else [])], cwd=args.repo).returncode
    done = subprocess.run([dvc, "exp", "show", "--json", *(["-A"] if args.all_commits else [])], cwd=args.repo,
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(f"star experiments: `dvc exp show --json` failed in {Path(args.repo).resolve()}:\n{done.stderr}",
              file=sys.stderr)
        return done.returncode
    rows = experiment_rows(json.loads(done.stdout or "[]"))
    print(table(rows, args.width))
    return 0
