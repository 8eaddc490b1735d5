"""The ablation report itself: every variant's headline metrics with intervals, paired tests against the baseline."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from star import stats
from star.evaluation.rewards import DEFAULT_CURRICULUM, REWARDS, SCHEDULED
from star.report import paper_results as paper
from star.report.config import ReportConfig
from star.report.load import VariantResult
from star.report.metrics import HEADLINE, LOOPHOLE_GAP, ReportError, per_query_metrics


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
    overrides: str = ""                                   # star.ablations.overrides_label of the run ('' for none)
    verdict: list[dict[str, Any]] = field(default_factory=list)  # per variant: updates, RL vs SFT, format errors
    separating: list[str] = field(default_factory=list)   # HEADLINE keys whose Holm-adjusted test is < 0.05


_TIMING = ("_time_s", "_per_s")  # wall-clock curves differ between identical runs


def _training_trace(v: VariantResult) -> tuple | None:
    """A variant's GRPO step curves without the timings: equal traces mean the same updates, the same model."""
    kept = {k: tuple(c) for k, c in v.curves.items() if not k.endswith(_TIMING)}
    return tuple(sorted(kept.items())) if kept else None


_NO_UPDATE = ("no update",)  # every variant GRPO never updated keeps the SFT model, whatever its rewards read


def trained_alike(variants: list[VariantResult]) -> dict[str, str]:
    """variant -> the earlier variant whose model it has: one it trained exactly as (same rewards, losses and
    updates at every step, e.g. a curriculum still on its first reward), or, for a variant GRPO never updated,
    the first other such variant (both are the SFT model, even where their rewards paid differently)."""
    first: dict[tuple, str] = {}
    alike = {}
    for v in variants:
        trace = _NO_UPDATE if variant_verdict(v)["optimizer_steps"] == 0 else _training_trace(v)
        if trace is None:
            continue
        if trace in first:
            alike[v.name] = first[trace]
        else:
            first[trace] = v.name
    return alike


def variant_verdict(v: VariantResult) -> dict[str, Any]:
    """What a variant's training did, read before any metric: GRPO's optimizer steps (0: the RL model is the
    SFT model, unchanged), and the share of its final evaluation's episodes that broke the format."""
    steps = v.curves.get("optimizer_steps")
    n_opt = int(sum(x for _, x in steps)) if steps else None
    reasons = v.metrics.get("finish_reasons") or {}
    total = sum(reasons.values())
    return {"variant": v.name, "optimizer_steps": n_opt, "rl_differs_from_sft": None if n_opt is None else n_opt > 0,
            "format_error": reasons.get("format_error", 0) / total if total else None}


def _verdicts(variants: list[VariantResult]) -> list[dict[str, Any]]:
    alike = trained_alike(variants)
    return [{**variant_verdict(v), "trained_as": alike.get(v.name)} for v in variants]


def _scoring_reward(cfg: ReportConfig, variants: list[VariantResult], baseline: str) -> str:
    """The one reward every variant's trajectories are scored with (so the mean rewards compare):
    the configured one, else the baseline's training reward (a curriculum's final stage), else sum."""
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
    separating = sorted({t["metric"] for t in test_rows if t.get("p_holm") is not None and t["p_holm"] < 0.05},
                        key=list(HEADLINE).index)
    return Report(ablation, description, paper_table, axes, eval_set, evaluator_mode, len(ids), rows, test_rows,
                  effects, paper_rows, notes, cfg.confidence, metric_names,
                  reward if "mean_reward" in metric_names else None, failed, profile, overrides,
                  _verdicts(variants), separating)
