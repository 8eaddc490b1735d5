"""The comparison report of an ablation: paper-shaped tables, confidence intervals, paired tests,
factorial effects and plots.

Inputs are per-variant results (`VariantResult`): the per-query success outcomes on one shared
evaluation set (the pairing that makes the tests sensitive), the aggregate metric table, and the
training curves. `load_variant_dir` reads them from a variant's run directory; `build_report`
computes everything; `write_report` writes report.md / report.json / PNG plots atomically.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from star.tracking import paper_results as paper
from star.tracking import stats
from star.tracking.config import ReportConfig

# Aggregate keys of star.evaluation.evaluator.aggregate, shown in this order.
AGGREGATE_KEYS = ("success_rate", "commonsense_micro", "commonsense_macro", "hard_micro", "hard_macro",
                  "delivery_rate")
SHORT = {"success_rate": "success", "commonsense_micro": "cs micro", "commonsense_macro": "cs macro",
         "hard_micro": "hard micro", "hard_macro": "hard macro", "delivery_rate": "delivery"}
# Training-curve panels (paper Figures 7-10): the first step-metric key containing each word.
CURVE_PANELS = ("reward", "success", "entropy")


@dataclass
class VariantResult:
    name: str
    levels: dict[str, str]
    outcomes: dict[str, float]                    # query id -> success (0/1 or mean over samples)
    metrics: dict[str, Any] = field(default_factory=dict)       # aggregate table of the final model
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)  # step metrics
    setting: dict[str, object] = field(default_factory=dict)    # paper-comparable setting
    baselines: dict[str, dict[str, Any]] = field(default_factory=dict)  # e.g. {"base": {...}, "sft": {...}}


@dataclass
class Report:
    ablation: str
    description: str
    paper_table: str | None
    axes: list[str]
    eval_set: str
    evaluator_mode: str
    n_queries: int
    rows: list[dict[str, Any]]
    tests: list[dict[str, Any]]
    effects: list[dict[str, Any]]
    paper_rows: list[dict[str, Any]]
    notes: list[str]


class ReportError(ValueError):
    """The inputs cannot be compared (no variants, no shared queries, unreadable files)."""


# ------------------------------------------------------------------------------------- inputs

def outcomes_from_trajectories(trajectories: list[dict]) -> dict[str, float]:
    """Per-query success: the mean of `scores.success` over that query's trajectories."""
    per: dict[str, list[float]] = {}
    for t in trajectories:
        qid = t.get("query_id")
        scores = t.get("scores") or {}
        if qid is None:
            continue
        success = scores.get("success", t.get("success"))
        per.setdefault(str(qid), []).append(float(bool(success)))
    return {q: float(np.mean(v)) for q, v in per.items()}


def curves_from_steps(records: list[dict], step_key: str = "step") -> dict[str, list[tuple[int, float]]]:
    from star.config import flatten

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
    from star.config import parse_variant_name
    from star.tracking.mlflow_logging import read_jsonl

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
        outcomes = outcomes_from_trajectories(read_jsonl(traj))
    except ValueError as exc:
        raise ReportError(str(exc)) from None
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
    return VariantResult(name, dict(levels), outcomes, metrics, curves, paper.setting_of(values) if values else {},
                         baselines)


# -------------------------------------------------------------------------------------- build

def _pct(x: float | None) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}"


def build_report(variants: list[VariantResult], ablation: str = "ablation", description: str = "",
                 paper_table: str | None = None, config: ReportConfig | None = None,
                 eval_set: str = "validation", evaluator_mode: str = "official") -> Report:
    cfg = config or ReportConfig()
    if not variants:
        raise ReportError("no variants to compare")
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise ReportError(f"variant names repeat: {names}")
    ids, aligned = stats.align({v.name: v.outcomes for v in variants})
    if not ids:
        raise ReportError("the variants share no evaluated query: the paired comparison needs the same queries")
    notes = []
    dropped = {v.name: len(v.outcomes) - len(ids) for v in variants if len(v.outcomes) != len(ids)}
    if dropped:
        notes.append(f"compared on the {len(ids)} queries every variant evaluated (dropped per variant: {dropped})")
    axes = list(dict.fromkeys(a for v in variants for a in v.levels))

    rows = []
    for i, v in enumerate(variants):
        ci = stats.bootstrap_ci(aligned[v.name], cfg.bootstrap, cfg.confidence, cfg.seed + i)
        row: dict[str, Any] = {"variant": v.name, **{a: v.levels.get(a, "") for a in axes}, "n": len(ids),
                               "success": ci.estimate, "success_low": ci.low, "success_high": ci.high}
        for key in AGGREGATE_KEYS[1:]:
            if key in v.metrics:
                row[SHORT[key]] = v.metrics[key]
        # loophole audit (star.evaluation.audit): share of plans passing official but failing strict
        row["loophole gap"] = v.metrics.get("loophole_gap_rate")
        row["paper_success"] = paper.paper_success(v.setting, paper_table) if v.setting else None
        rows.append(row)

    baseline = cfg.baseline or variants[0].name
    if baseline not in aligned:
        raise ReportError(f"baseline {baseline!r} is not a variant ({', '.join(names)})")
    tests = []
    for v in variants:
        if v.name == baseline:
            continue
        t = stats.paired_test(aligned[baseline], aligned[v.name], (baseline, v.name), cfg.bootstrap,
                              cfg.confidence, cfg.permutations, cfg.seed)
        tests.append(t)
    adjusted = stats.holm([t.p_value for t in tests])
    test_rows = []
    for t, p_adj in zip(tests, adjusted):
        test_rows.append({"baseline": t.a, "variant": t.b, "n": t.n, "difference": t.difference.estimate,
                          "difference_low": t.difference.low, "difference_high": t.difference.high,
                          "p_value": t.p_value, "p_holm": p_adj, "method": t.method,
                          "baseline_only": t.a_only, "variant_only": t.b_only})

    effects = []
    if len(axes) > 1:
        cells = {tuple(v.levels[a] for a in axes): aligned[v.name] for v in variants}
        try:
            for e in stats.factorial_effects(cells, axes, n_perm=min(cfg.permutations, 2000), seed=cfg.seed):
                effects.append(asdict(e))
        except ValueError as exc:
            notes.append(f"factorial analysis skipped: {exc}")

    paper_rows = [{"table": r.table, **r.setting, **r.metrics, **r.extra} for r in paper.ROWS
                  if paper_table is not None and r.table == paper_table]
    if paper_table is not None and not any(r["paper_success"] is not None for r in rows):
        notes.append("no variant's setting matches a paper row (paper rows are Qwen2.5 1.5B/3B/7B on the "
                     f"{paper.EVAL_SET}); they are listed for reference only")
    if paper_table == "env_failure":
        notes.append(f"paper: {paper.ENV_FAILURE_FINDING}")
    return Report(ablation, description, paper_table, axes, eval_set, evaluator_mode, len(ids), rows, test_rows,
                  effects, paper_rows, notes)


# ------------------------------------------------------------------------------------- render

def _md_table(header: list[str], rows: list[list[Any]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def _table1(report: Report, variants: list[VariantResult]) -> str:
    """Table 1's shape: rows = scale, columns Base, SFT, Sum, Macro, Success, Curriculum."""
    cols = ["base", "sft", "sum", "macro", "success", "curriculum"]
    lines = []
    for scale in paper.SCALES:
        cells = []
        for c in cols:
            setting = {"scale": scale, "stage": c} if c in ("base", "sft") else \
                {"scale": scale, "stage": "rl", "reward": c, "algorithm": "grpo", "data_size": 1000,
                 "difficulty": "mixed"}
            value = paper.paper_success(setting, "1")
            cells.append("—" if value is None else f"{value:.1f}")
        lines.append([f"paper {scale}", *cells])
    by_reward = {r.get("reward", r["variant"]): r for r in report.rows}
    scale = next((v.setting.get("scale") for v in variants if v.setting), "ours")
    ours = []
    for c in cols:
        if c in ("base", "sft"):
            vals = [v.baselines.get(c, {}).get("success_rate") for v in variants if v.baselines.get(c)]
            ours.append(_pct(vals[0]) if vals else "—")
        else:
            r = by_reward.get(c)
            ours.append(f"{_pct(r['success'])} [{_pct(r['success_low'])}, {_pct(r['success_high'])}]" if r else "—")
    lines.append([f"ours ({scale})", *ours])
    return _md_table(["scale", "Base", "SFT", "Sum", "Macro", "Success", "Curriculum"], lines)


def render_markdown(report: Report, variants: list[VariantResult] | None = None) -> str:
    out = [f"# Ablation `{report.ablation}`", ""]
    if report.description:
        out += [report.description, ""]
    out += [f"Evaluation set: {report.eval_set} ({report.n_queries} queries, same queries for every variant); "
            f"evaluator mode: `{report.evaluator_mode}`. Success in %, {int(ReportConfig().confidence * 100)}% "
            "bootstrap intervals over queries.", ""]
    header = ["variant", *report.axes, "success [CI]", "cs micro", "cs macro", "hard micro", "hard macro", "loophole gap",
              "paper"]
    rows = []
    for r in report.rows:
        rows.append([r["variant"], *[r.get(a, "") for a in report.axes],
                     f"{_pct(r['success'])} [{_pct(r['success_low'])}, {_pct(r['success_high'])}]",
                     *[_pct(r.get(k)) for k in ("cs micro", "cs macro", "hard micro", "hard macro", "loophole gap")],
                     "—" if r["paper_success"] is None else f"{r['paper_success']:.1f}"])
    out += ["## Success by variant", "", _md_table(header, rows), "",
            "loophole gap: % of plans that pass the official evaluator but fail the strict one.", ""]
    if report.tests:
        out += ["## Paired comparisons (same queries)", ""]
        trows = [[t["variant"], t["baseline"],
                  f"{100 * t['difference']:+.1f} [{100 * t['difference_low']:+.1f}, {100 * t['difference_high']:+.1f}]",
                  f"{t['baseline_only']}/{t['variant_only']}" if t["method"] == "exact McNemar" else "",
                  f"{t['p_value']:.3g}", f"{t['p_holm']:.3g}", t["method"]] for t in report.tests]
        out += [_md_table(["variant", "vs", "Δ success (pts) [CI]", "discordant", "p", "p (Holm)", "test"], trows), ""]
    if report.effects:
        out += ["## Factorial effects", "", "Effects are deviations of success (pts) from the grand mean "
                "(main effects) or from the additive model (interactions).", ""]
        erows = [[e["term"], ", ".join(f"{k}: {100 * v:+.1f}" for k, v in e["levels"].items()),
                  f"{e['sum_of_squares']:.3g}", f"{e['p_value']:.3g}"] for e in report.effects]
        out += [_md_table(["term", "effects", "SS", "p (permutation)"], erows), ""]
    if report.paper_table:
        out += [f"## {paper.TABLE_TITLES.get(report.paper_table, 'Paper table ' + report.paper_table)}", "",
                f"Paper numbers are on the {paper.EVAL_SET}.", ""]
        if report.paper_table == "1" and variants is not None:
            out += [_table1(report, variants), ""]
        elif report.paper_rows:
            keys = [k for k in report.paper_rows[0] if k not in ("table", "stage")]
            keys = list(dict.fromkeys(k for r in report.paper_rows for k in r if k not in ("table", "stage")))
            prow = [[("—" if r.get(k) is None else r.get(k)) for k in keys] for r in report.paper_rows]
            out += [_md_table(keys, prow), ""]
    if report.notes:
        out += ["## Notes", "", *[f"- {n}" for n in report.notes], ""]
    return "\n".join(out)


def plot_success(report: Report, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["variant"] for r in report.rows]
    y = np.array([100 * r["success"] for r in report.rows])
    lo = y - np.array([100 * r["success_low"] for r in report.rows])
    hi = np.array([100 * r["success_high"] for r in report.rows]) - y
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(names) + 1.5), 3.6))
    ax.bar(range(len(names)), y, yerr=[lo, hi], capsize=4, color="#4C78A8", label="ours")
    paper_y = [r["paper_success"] for r in report.rows]
    if any(p is not None for p in paper_y):
        xs = [i for i, p in enumerate(paper_y) if p is not None]
        ax.scatter(xs, [paper_y[i] for i in xs], marker="D", color="#E45756", zorder=3, label="paper (test set)")
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("success (%)")
    ax.set_title(f"{report.ablation}: success by variant ({report.n_queries} queries)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save_fig(fig, path)
    plt.close(fig)
    return path


def _curve_key(curves: dict, word: str) -> str | None:
    keys = sorted((k for k in curves if word in k.lower()), key=lambda k: (("mean" not in k), len(k)))
    return keys[0] if keys else None


def trailing_mean(values: list[float], window: int) -> list[float]:
    """Mean of each value and the window-1 before it (fewer at the start): the usual smoothing of a
    noisy RL curve, which never looks ahead, so a step's point uses only what was known by then."""
    if window < 1:
        raise ValueError(f"smoothing window must be at least 1, got {window}")
    # a sum per point, not a running total, so a window of 1 returns the values exactly
    return [math.fsum(values[max(0, i + 1 - window):i + 1]) / min(i + 1, window) for i in range(len(values))]


def pool_curves(curve_sets: list[dict[str, list[tuple[int, float]]]]) -> dict[str, list[tuple[int, float, float, int]]]:
    """Runs of one setting with different seeds as one curve per key: at each step the mean over the
    runs that reached it, its standard error (sample std / sqrt(n); NaN with one run) and n."""
    by_key: dict[str, dict[int, list[float]]] = {}
    for curves in curve_sets:
        for key, points in curves.items():
            for step, value in points:
                by_key.setdefault(key, {}).setdefault(step, []).append(value)
    pooled: dict[str, list[tuple[int, float, float, int]]] = {}
    for key, steps in by_key.items():
        rows = []
        for step in sorted(steps):
            vals = steps[step]
            se = statistics.stdev(vals) / math.sqrt(len(vals)) if len(vals) > 1 else math.nan
            rows.append((step, statistics.fmean(vals), se, len(vals)))
        pooled[key] = rows
    return pooled


def plot_curves(variants: list[VariantResult], path: Path, panels: tuple[str, ...] = CURVE_PANELS,
                exact: bool = False, smooth: int = 1,
                pooled: dict[str, dict[str, list[tuple[int, float, float, int]]]] | None = None) -> Path | None:
    """Training curves overlaid, one panel per quantity (reward, success, entropy) as in Figures 7-10;
    a panel is the first metric key containing its word, or exactly that key with `exact`. With
    `smooth` > 1 each curve is its trailing mean over that many steps, the raw points drawn faint.
    `pooled` (name -> `pool_curves` output) adds each pool's per-step mean, bold, in a band of +- 1 s.e., over
    the steps every run of the pool reached."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    key_of = (lambda curves, word: word if word in curves else None) if exact else _curve_key
    present = [w for w in panels if any(key_of(v.curves, w) for v in variants)]
    if not present:
        return None
    fig, axes = plt.subplots(1, len(present), figsize=(4.2 * len(present), 3.4), squeeze=False)
    for ax, word in zip(axes[0], present):
        for v in variants:
            key = key_of(v.curves, word)
            if key:
                steps, vals = zip(*v.curves[key])
                marker = "." if len(steps) < 30 else None
                if smooth > 1:
                    raw = ax.plot(steps, vals, marker=marker, alpha=0.3, linewidth=0.8)[0]
                    ax.plot(steps, trailing_mean(list(vals), smooth), color=raw.get_color(),
                            label=f"{v.name} (mean of {smooth})")
                else:
                    ax.plot(steps, vals, marker=marker, label=v.name)
        for i, (name, curves) in enumerate((pooled or {}).items()):
            key = key_of(curves, word)
            if key:
                # only the steps every run reached: a mean that loses a run midway would jump
                full = max(n for *_, n in curves[key])
                steps, means, ses, _ = zip(*[row for row in curves[key] if row[3] == full])
                line = ax.plot(steps, means, linewidth=2.2, color=("black", "tab:brown", "tab:gray")[i % 3],
                               label=f"{name}: mean of {full} runs, \u00b1 1 s.e.")[0]
                if full > 1:  # one run has no standard error, so no band
                    ax.fill_between(steps, [m - e for m, e in zip(means, ses)], [m + e for m, e in zip(means, ses)],
                                    color=line.get_color(), alpha=0.15, linewidth=0)
        ax.set_title(word)
        ax.set_xlabel("step")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    _save_fig(fig, path)
    plt.close(fig)
    return path


def _save_fig(fig, path: Path) -> None:
    import os
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_report(report: Report, variants: list[VariantResult], out_dir: str | Path) -> dict[str, Path]:
    from star.tracking.mlflow_logging import atomic_write_text

    out = Path(out_dir)
    files = {"markdown": atomic_write_text(out / "report.md", render_markdown(report, variants)),
             "json": atomic_write_text(out / "report.json", json.dumps(asdict(report), indent=1, default=str) + "\n"),
             "success_plot": plot_success(report, out / "success_by_variant.png")}
    curves = plot_curves(variants, out / "training_curves.png")
    if curves:
        files["curves_plot"] = curves
    return files


def log_report(tracker, run_id: str, report: Report, files: dict[str, Path]) -> None:
    """On the ablation's parent run: the table as metrics (success per variant) and every file as artifacts."""
    for r in report.rows:
        tracker.log_metrics(run_id, {f"success.{r['variant']}": r["success"]})
    for path in files.values():
        tracker.log_artifact(run_id, path, "report")
