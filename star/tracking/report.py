"""The comparison report of an ablation: paper-shaped tables, confidence intervals, paired tests,
factorial effects and plots.

Inputs are per-variant results (`VariantResult`): each evaluation trajectory's scores on one shared
evaluation set (the pairing that makes the tests sensitive), the aggregate metric table, and the
training curves. Every headline metric (`HEADLINE`: delivery, commonsense and hard micro/macro,
success, mean reward, and the behaviour beside them: tool calls, answered, format error, context full)
is a per-query mean over that query's samples, so each gets a bootstrap
interval per variant and a paired test against the baseline. `load_variant_dir` reads a variant's
run directory; `build_report` computes everything (naming the variants that failed);
`write_report` writes report.md / report.json / PNG plots atomically.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from star import stats
from star.plots import save_figure
from star.tracking import paper_results as paper
from star.tracking.config import ReportConfig

# Aggregate keys of star.evaluation.evaluator.aggregate, shown in this order.
AGGREGATE_KEYS = ("success_rate", "commonsense_micro", "commonsense_macro", "hard_micro", "hard_macro",
                  "delivery_rate")
SHORT = {"success_rate": "success", "commonsense_micro": "cs micro", "commonsense_macro": "cs macro",
         "hard_micro": "hard micro", "hard_macro": "hard macro", "delivery_rate": "delivery"}
# Training-curve panels (paper Figures 7-10): the first step-metric key containing each word.
CURVE_PANELS = ("reward", "success", "entropy")
_PLAN_SCORES = ("cs_micro", "cs_macro", "hard_micro", "hard_macro", "success")


@dataclass(frozen=True)
class Metric:
    """A headline metric: one value per evaluation trajectory, averaged per query, then over queries."""

    label: str                                   # column title
    value: Callable[[dict, str, str], float]     # (scores, finish_reason, reward name) -> the trajectory's value
    needs: tuple[str, ...]                       # score keys every trajectory must carry for the metric
    aggregate: str | None = None                 # its key in eval-agent's metrics.json, if any
    percent: bool = True                         # a rate in [0, 1], shown in %; else shown as is


def _flagged(scores: dict) -> bool:
    from star.evaluation.audit import hack_flags

    return hack_flags(scores)["hacked"]


def _reward_value(scores: dict, finish_reason: str, reward: str) -> float:
    from star.evaluation.rewards import compute_reward

    return compute_reward(reward, scores, finish_reason)


# The headline metrics in the order the tables show them. One more per-query metric (say a loophole
# gap) is one more line here: the intervals, tests, tables, plot panels and MLflow metrics follow.
HEADLINE: dict[str, Metric] = {
    "delivery": Metric("delivery", lambda s, f, r: float(bool(s["delivered"])), ("delivered",), "delivery_rate"),
    "cs_micro": Metric("cs micro", lambda s, f, r: float(s["cs_micro"]), ("cs_micro",), "commonsense_micro"),
    "cs_macro": Metric("cs macro", lambda s, f, r: float(s["cs_macro"]), ("cs_macro",), "commonsense_macro"),
    "hard_micro": Metric("hard micro", lambda s, f, r: float(s["hard_micro"]), ("hard_micro",), "hard_micro"),
    "hard_macro": Metric("hard macro", lambda s, f, r: float(s["hard_macro"]), ("hard_macro",), "hard_macro"),
    "success": Metric("success", lambda s, f, r: float(bool(s["success"])), ("success",), "success_rate"),
    "mean_reward": Metric("mean reward", _reward_value, _PLAN_SCORES, None, percent=False),
    # Behaviour: where variants of a small model differ while next to no plan passes (the paired
    # SFT-vs-RL comparisons moved tool calls and answers long before success).
    "tool_calls": Metric("tool calls", lambda s, f, r: float(s["tool_calls"]), ("tool_calls",), "mean_tool_calls",
                         percent=False),
    "answered": Metric("answered", lambda s, f, r: float(f == "answer"), ()),
    "format_error": Metric("format error", lambda s, f, r: float(f == "format_error"), ()),
    "context_full": Metric("context full", lambda s, f, r: float(f == "context_overflow"), ()),
    # The reward-hacking audit (star.evaluation.audit): plans that leave slots the query requires empty
    # (short, skeletal or vacuous ones), and the reward they earn, so a gain made of stubs shows at a glance.
    "incomplete": Metric("incomplete plans", lambda s, f, r: float(_flagged(s)), ("slots_empty",)),
    "incomplete_reward": Metric("reward from incomplete plans",
                                lambda s, f, r: _reward_value(s, f, r) if _flagged(s) else 0.0,
                                (*_PLAN_SCORES, "slots_empty"), percent=False),
}
# The loophole audit (star.evaluation.audit): the share of plans passing the official evaluator but failing
# the strict one. eval-agent writes it as an aggregate only, so it is a column without an interval.
LOOPHOLE_GAP = "loophole gap"


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
    confidence: float = 0.95                              # coverage of every interval
    metrics: list[str] = field(default_factory=list)      # HEADLINE keys with per-query values in this report
    reward: str | None = None                             # the reward that scored the `mean_reward` metric
    failed: dict[str, str] = field(default_factory=dict)  # variant -> its error (stage and exception)
    profile: str | None = None                            # the profile every variant ran under
    overrides: str = ""                                   # star.config.overrides_label of the run ('' for none)


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


def samples_from_trajectories(trajectories: list[dict]) -> dict[str, list[tuple[dict, str]]]:
    """Per query, each trajectory's (scores + its tool calls, finish_reason), per-check detail left out."""
    per: dict[str, list[tuple[dict, str]]] = {}
    for t in trajectories:
        qid = t.get("query_id")
        if qid is None:
            continue
        scores = {k: v for k, v in (t.get("scores") or {}).items() if k != "checks"}
        if "tool_calls" in t:  # the episode's, beside its plan's scores: one dict per sample for every metric
            scores["tool_calls"] = t["tool_calls"]
        per.setdefault(str(qid), []).append((scores, str(t.get("finish_reason", ""))))
    return per


def per_query_metrics(samples: dict[str, list[tuple[dict, str]]], reward: str = "sum",
                      names: list[str] | None = None) -> dict[str, dict[str, float]]:
    """metric -> query id -> the mean of the metric over that query's samples, for each HEADLINE
    metric (or those in `names`) whose score keys every sample carries."""
    out: dict[str, dict[str, float]] = {}
    for name in names or list(HEADLINE):
        m = HEADLINE[name]
        if not samples or not all(k in s for runs in samples.values() for s, _ in runs for k in m.needs):
            continue
        out[name] = {q: float(np.mean([m.value(s, f, reward) for s, f in runs])) for q, runs in samples.items()}
    return out


def curves_from_steps(records: list[dict], step_key: str = "step") -> dict[str, list[tuple[int, float]]]:
    from star.params_io import flatten

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


# -------------------------------------------------------------------------------------- build

def _pct(x: float | None) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:.1f}"


def _scoring_reward(cfg: ReportConfig, variants: list[VariantResult], baseline: str) -> str:
    """The one reward every variant's trajectories are scored with (so the mean rewards compare):
    the configured one, else the baseline's training reward (a curriculum's final stage), else sum."""
    from star.evaluation.rewards import DEFAULT_CURRICULUM, REWARDS, SCHEDULED

    name = cfg.reward or next((v.reward for v in variants if v.name == baseline), None) or "sum"
    if name in SCHEDULED:
        name = DEFAULT_CURRICULUM[-1][1]
    if name not in REWARDS:
        raise ReportError(f"report reward {name!r} is not a registered reward ({', '.join(sorted(REWARDS))})")
    return name


def _variant_values(v: VariantResult, reward: str) -> dict[str, dict[str, float]]:
    """metric -> query id -> value: every HEADLINE metric the samples carry; success from `outcomes`
    when the samples do not carry it (a caller that knows only success, an older trajectory format)."""
    values = per_query_metrics(v.samples, reward) if v.samples else {}
    if v.outcomes and "success" not in values:
        values["success"] = dict(v.outcomes)
    return values


def build_report(variants: list[VariantResult], ablation: str = "ablation", description: str = "",
                 paper_table: str | None = None, config: ReportConfig | None = None,
                 eval_set: str = "validation", evaluator_mode: str = "official",
                 failed: dict[str, str] | None = None, profile: str | None = None, overrides: str = "") -> Report:
    """Intervals for every headline metric per variant, paired tests of each against the baseline
    (Holm-adjusted over all of them), factorial effects on a full grid. `failed` (variant -> error)
    are listed and left out of the comparison; with no finished variant the report names only them."""
    cfg = config or ReportConfig()
    failed = {str(k): str(v) for k, v in (failed or {}).items()}
    if not variants and not failed:
        raise ReportError("no variants to compare")
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise ReportError(f"variant names repeat: {names}")
    if set(names) & set(failed):
        raise ReportError(f"variants both finished and failed: {sorted(set(names) & set(failed))}")
    paper_rows = [{"table": r.table, **r.setting, **r.metrics, **r.extra} for r in paper.ROWS
                  if paper_table is not None and r.table == paper_table]
    axes = list(dict.fromkeys(a for v in variants for a in v.levels))
    if not variants:
        notes = [f"no variant finished ({len(failed)} failed): nothing to compare"]
        return Report(ablation, description, paper_table, axes, eval_set, evaluator_mode, 0, [], [], [], paper_rows,
                      notes, cfg.confidence, [], None, failed, profile, overrides)
    baseline = cfg.baseline or variants[0].name
    if baseline not in names:
        where = " (it failed)" if baseline in failed else ""
        raise ReportError(f"baseline {baseline!r} is not a finished variant{where} ({', '.join(names)})")
    reward = _scoring_reward(cfg, variants, baseline)
    per_variant = {v.name: _variant_values(v, reward) for v in variants}
    # the metrics every variant has per-query values for, in HEADLINE order
    metric_names = [m for m in HEADLINE if all(m in per_variant[n] for n in names)]
    notes = []
    for m in HEADLINE:
        lacking = [n for n in names if m not in per_variant[n]]
        if lacking and len(lacking) < len(names):
            notes.append(f"{HEADLINE[m].label}: no per-query values for {lacking} (their trajectories lack "
                         f"scores {', '.join(HEADLINE[m].needs)}), so it is not compared")
    if not metric_names:
        raise ReportError("no headline metric has per-query values for every variant (no evaluation trajectories)")
    # the queries with a value of every metric in every variant: one pairing for all the tests
    ids = sorted(set.intersection(*(set(per_variant[n][m]) for n in names for m in metric_names)))
    if not ids:
        raise ReportError("the variants share no evaluated query: the paired comparison needs the same queries")
    aligned = {m: {n: np.array([per_variant[n][m][q] for q in ids], dtype=float) for n in names} for m in metric_names}
    evaluated = {n: set().union(*(per_variant[n][m] for m in metric_names)) for n in names}
    dropped = {n: len(evaluated[n]) - len(ids) for n in names if len(evaluated[n]) != len(ids)}
    if dropped:
        notes.append(f"compared on the {len(ids)} queries every variant evaluated (dropped per variant: {dropped})")
    if "hard_micro" in metric_names:
        notes.append("hard micro: the mean over queries of each query's fraction of hard constraints passed (the "
                     "unit the tests resample); eval-agent's metrics.json pools passes over all constraints instead")
    if "mean_reward" in metric_names:
        trained = sorted({v.reward for v in variants if v.reward})
        notes.append(f"mean reward: every variant's trajectories scored with the `{reward}` reward"
                     + (f" (trained with: {', '.join(trained)})" if trained else ""))

    rows = []
    for i, v in enumerate(variants):
        row: dict[str, Any] = {"variant": v.name, **{a: v.levels.get(a, "") for a in axes}, "n": len(ids)}
        for m in HEADLINE:
            if m in metric_names:
                # one seed per variant: every metric's interval comes from the same query resamples
                ci = stats.bootstrap_ci(aligned[m][v.name], cfg.bootstrap, cfg.confidence, cfg.seed + i)
                row.update({m: ci.estimate, f"{m}_low": ci.low, f"{m}_high": ci.high})
            elif HEADLINE[m].aggregate in v.metrics:  # only the aggregate is known: no interval
                row[m] = v.metrics[HEADLINE[m].aggregate]
        if "loophole_gap_rate" in v.metrics:
            row[LOOPHOLE_GAP] = v.metrics["loophole_gap_rate"]
        row["paper_success"] = paper.paper_success(v.setting, paper_table) if v.setting else None
        rows.append(row)

    tests = []
    for m in metric_names:
        for v in variants:
            if v.name != baseline:
                tests.append((m, stats.paired_test(aligned[m][baseline], aligned[m][v.name], (baseline, v.name),
                                                   cfg.bootstrap, cfg.confidence, cfg.permutations, cfg.seed)))
    adjusted = stats.holm([t.p_value for _, t in tests])
    test_rows = []
    for (m, t), p_adj in zip(tests, adjusted):
        test_rows.append({"metric": m, "baseline": t.a, "variant": t.b, "n": t.n, "difference": t.difference.estimate,
                          "difference_low": t.difference.low, "difference_high": t.difference.high,
                          "p_value": t.p_value, "p_holm": p_adj, "method": t.method,
                          "baseline_only": t.a_only, "variant_only": t.b_only})

    effects = []
    if len(axes) > 1:
        try:
            for m in metric_names:
                cells = {tuple(v.levels[a] for a in axes): aligned[m][v.name] for v in variants}
                for e in stats.factorial_effects(cells, axes, n_perm=min(cfg.permutations, 2000), seed=cfg.seed):
                    effects.append({"metric": m, **asdict(e)})
        except (KeyError, ValueError) as exc:
            notes.append(f"factorial analysis skipped: {exc}")
            effects = []

    if paper_table is not None and not any(r["paper_success"] is not None for r in rows):
        notes.append("no variant's setting matches a paper row (paper rows are Qwen2.5 1.5B/3B/7B on the "
                     f"{paper.EVAL_SET}); they are listed for reference only")
    if paper_table == "env_failure":
        notes.append(f"paper: {paper.ENV_FAILURE_FINDING}")
    if failed:
        notes.append(f"{len(failed)} variant(s) failed and are not compared: {', '.join(failed)}")
    return Report(ablation, description, paper_table, axes, eval_set, evaluator_mode, len(ids), rows, test_rows,
                  effects, paper_rows, notes, cfg.confidence, metric_names,
                  reward if "mean_reward" in metric_names else None, failed, profile, overrides)


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
            ours.append(_cell(r, "success") if r else "—")
    lines.append([f"ours ({scale})", *ours])
    return _md_table(["scale", "Base", "SFT", "Sum", "Macro", "Success", "Curriculum"], lines)


def _fmt(metric: str, x: float | None) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return _pct(x) if HEADLINE[metric].percent else f"{x:.3f}"


def _cell(row: dict[str, Any], metric: str) -> str:
    """'value [low, high]', or the bare value when only the aggregate is known."""
    if metric not in row:
        return "—"
    if f"{metric}_low" not in row:
        return _fmt(metric, row[metric])
    return f"{_fmt(metric, row[metric])} [{_fmt(metric, row[metric + '_low'])}, {_fmt(metric, row[metric + '_high'])}]"


def _diff(metric: str, x: float) -> str:
    return f"{100 * x:+.1f}" if HEADLINE[metric].percent else f"{x:+.3f}"


def _one_line(text: str, limit: int = 400) -> str:
    """An error message fit for a table cell (the full text stays in report.json)."""
    flat = " ".join(str(text).split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def render_markdown(report: Report, variants: list[VariantResult] | None = None) -> str:
    out = [f"# Ablation `{report.ablation}`", ""]
    if report.description:
        out += [report.description, ""]
    if report.profile or report.overrides:
        out += [f"Profile `{report.profile or 'default'}`; overrides: "
                + (f"`{report.overrides}`" if report.overrides else "none") + ".", ""]
    shown = [m for m in HEADLINE if any(m in r for r in report.rows)]
    if report.rows:
        reward = f"; mean reward scored with the `{report.reward}` reward" if report.reward else ""
        out += [f"Evaluation set: {report.eval_set} ({report.n_queries} queries, same queries for every variant); "
                f"evaluator mode: `{report.evaluator_mode}`. Rates in %{reward}; each value is the mean over queries "
                f"of the per-query mean over samples, with its {round(report.confidence * 100)}% bootstrap "
                "interval over queries.", ""]
        gap = any(LOOPHOLE_GAP in r for r in report.rows)
        header = ["variant", *report.axes, *[f"{HEADLINE[m].label} [CI]" if m in report.metrics else HEADLINE[m].label
                                             for m in shown], *([LOOPHOLE_GAP] if gap else []), "paper success"]
        rows = [[r["variant"], *[r.get(a, "") for a in report.axes], *[_cell(r, m) for m in shown],
                 *([_pct(r.get(LOOPHOLE_GAP))] if gap else []),
                 "—" if r["paper_success"] is None else f"{r['paper_success']:.1f}"] for r in report.rows]
        out += ["## Headline metrics by variant", "", _md_table(header, rows), ""]
        if gap:
            out += [f"{LOOPHOLE_GAP}: % of plans that pass the official evaluator but fail the strict one "
                    "(a policy can learn the official mode's loopholes).", ""]
    if report.tests:
        out += ["## Paired comparisons (same queries)", "",
                f"Variant minus baseline per metric (rates in points), {round(report.confidence * 100)}% paired "
                f"bootstrap interval; p-values Holm-adjusted over all {len(report.tests)} tests.", ""]
        trows = [[HEADLINE[t["metric"]].label, t["variant"], t["baseline"],
                  f"{_diff(t['metric'], t['difference'])} [{_diff(t['metric'], t['difference_low'])}, "
                  f"{_diff(t['metric'], t['difference_high'])}]",
                  f"{t['baseline_only']}/{t['variant_only']}" if t["method"] == "exact McNemar" else "",
                  f"{t['p_value']:.3g}", f"{t['p_holm']:.3g}", t["method"]] for t in report.tests]
        out += [_md_table(["metric", "variant", "vs", "Δ [CI]", "discordant", "p", "p (Holm)", "test"], trows), ""]
    if report.effects:
        out += ["## Factorial effects", "", "Effects are deviations from the grand mean (main effects) or from the "
                "additive model (interactions), rates in points.", ""]
        erows = [[HEADLINE[e["metric"]].label, e["term"],
                  ", ".join(f"{k}: {_diff(e['metric'], v)}" for k, v in e["levels"].items()),
                  f"{e['sum_of_squares']:.3g}", f"{e['p_value']:.3g}"] for e in report.effects]
        out += [_md_table(["metric", "term", "effects", "SS", "p (permutation)"], erows), ""]
    if report.failed:
        out += ["## Failed variants", "", "These variants did not finish; they are not in the comparison above.", "",
                _md_table(["variant", "error"], [[n, _one_line(e)] for n, e in report.failed.items()]), ""]
    if report.paper_table:
        out += [f"## {paper.TABLE_TITLES.get(report.paper_table, 'Paper table ' + report.paper_table)}", "",
                f"Paper numbers are on the {paper.EVAL_SET}.", ""]
        if report.paper_table == "1" and variants is not None:
            out += [_table1(report, variants), ""]
        elif report.paper_rows:
            keys = list(dict.fromkeys(k for r in report.paper_rows for k in r if k not in ("table", "stage")))
            prow = [[("—" if r.get(k) is None else r.get(k)) for k in keys] for r in report.paper_rows]
            out += [_md_table(keys, prow), ""]
    if report.notes:
        out += ["## Notes", "", *[f"- {n}" for n in report.notes], ""]
    return "\n".join(out)


def _bars(ax, report: Report, metric: str) -> None:
    scale = 100.0 if HEADLINE[metric].percent else 1.0
    names = [r["variant"] for r in report.rows]
    y = np.array([scale * r[metric] for r in report.rows])
    lo = y - np.array([scale * r[f"{metric}_low"] for r in report.rows])
    hi = np.array([scale * r[f"{metric}_high"] for r in report.rows]) - y
    ax.bar(range(len(names)), y, yerr=[lo, hi], capsize=4, color="#4C78A8", label="ours")
    ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(HEADLINE[metric].label + (" (%)" if HEADLINE[metric].percent else ""))
    # from 0, and a visible scale when every bar is 0 (matplotlib would centre the axis on 0)
    ax.set_ylim(0, max(ax.get_ylim()[1], 1.0 if HEADLINE[metric].percent else 0.1))


def plot_success(report: Report, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(report.rows) + 1.5), 3.6))
    _bars(ax, report, "success")
    paper_y = [r["paper_success"] for r in report.rows]
    if any(p is not None for p in paper_y):
        xs = [i for i, p in enumerate(paper_y) if p is not None]
        ax.scatter(xs, [paper_y[i] for i in xs], marker="D", color="#E45756", zorder=3, label="paper (test set)")
    ax.set_title(f"{report.ablation}: success by variant ({report.n_queries} queries)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path)
    plt.close(fig)
    return path


def plot_metrics(report: Report, path: Path) -> Path | None:
    """One panel per headline metric with per-query values: a bar per variant with its interval."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not report.rows or not report.metrics:
        return None
    cols = min(4, len(report.metrics))
    nrows = math.ceil(len(report.metrics) / cols)
    width = max(3.2, 0.7 * len(report.rows) + 1.6)
    fig, axes = plt.subplots(nrows, cols, figsize=(width * cols, 3.4 * nrows), squeeze=False)
    for ax, metric in zip(axes.flat, report.metrics):
        _bars(ax, report, metric)
        ax.set_title(HEADLINE[metric].label)
    for ax in list(axes.flat)[len(report.metrics):]:
        ax.axis("off")
    fig.suptitle(f"{report.ablation}: headline metrics by variant ({report.n_queries} queries, "
                 f"{round(report.confidence * 100)}% intervals)")
    fig.tight_layout()
    save_figure(fig, path)
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
    save_figure(fig, path)
    plt.close(fig)
    return path


def write_report(report: Report, variants: list[VariantResult], out_dir: str | Path) -> dict[str, Path]:
    """report.md and report.json always (a report of failures only too); the plots when a variant finished."""
    from star.tracking.mlflow_logging import atomic_write_text

    out = Path(out_dir)
    files = {"markdown": atomic_write_text(out / "report.md", render_markdown(report, variants)),
             "json": atomic_write_text(out / "report.json", json.dumps(asdict(report), indent=1, default=str) + "\n")}
    if any("success_low" in r for r in report.rows):
        files["success_plot"] = plot_success(report, out / "success_by_variant.png")
    metrics_plot = plot_metrics(report, out / "metrics_by_variant.png")
    if metrics_plot:
        files["metrics_plot"] = metrics_plot
    curves = plot_curves(variants, out / "training_curves.png")
    if curves:
        files["curves_plot"] = curves
    return files


def log_report(tracker, run_id: str, report: Report, files: dict[str, Path]) -> None:
    """On the ablation's parent run: each variant's headline metrics (`success.<variant>`,
    `cs_macro.<variant>`, …, and their interval ends), the failure count, and every file as artifacts."""
    for r in report.rows:
        values = {}
        for m in HEADLINE:
            if isinstance(r.get(m), (int, float)):
                values[f"{m}.{r['variant']}"] = r[m]
                if f"{m}_low" in r:
                    values[f"{m}_low.{r['variant']}"] = r[f"{m}_low"]
                    values[f"{m}_high.{r['variant']}"] = r[f"{m}_high"]
        if isinstance(r.get(LOOPHOLE_GAP), (int, float)):
            values[f"loophole_gap.{r['variant']}"] = r[LOOPHOLE_GAP]
        tracker.log_metrics(run_id, values)
    tracker.log_metrics(run_id, {"variants_failed": len(report.failed)})
    for path in files.values():
        tracker.log_artifact(run_id, path, "report")
