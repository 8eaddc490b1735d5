"""The ablation report as markdown: the headline table, the paired tests, the paper's rows."""

from __future__ import annotations

import math
from typing import Any

from star.report.build import Report
from star.report.load import VariantResult
from star.report.metrics import HEADLINE, LOOPHOLE_GAP
from star.report import paper_results as paper


def _value(x: float | None) -> str:
    """A value to three decimals: rates as fractions in [0, 1], the unit of metrics.json, MLflow and
    `star experiments` (one unit everywhere), other metrics as they are."""
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _paper(x: float | None) -> str:
    """A paper number (published in %) in the report's unit."""
    return "—" if x is None else _value(x / 100)


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
            cells.append(_paper(value))
        lines.append([f"paper {scale}", *cells])
    by_reward = {r.get("reward", r["variant"]): r for r in report.rows}
    scale = next((v.setting.get("scale") for v in variants if v.setting), "ours")
    ours = []
    for c in cols:
        if c in ("base", "sft"):
            vals = [v.baselines.get(c, {}).get("success_rate") for v in variants if v.baselines.get(c)]
            ours.append(_value(vals[0]) if vals else "—")
        else:
            r = by_reward.get(c)
            ours.append(_cell(r, "success") if r else "—")
    lines.append([f"ours ({scale})", *ours])
    return _md_table(["scale", "Base", "SFT", "Sum", "Macro", "Success", "Curriculum"], lines)


def _cell(row: dict[str, Any], metric: str) -> str:
    """'value [low, high]', or the bare value when only the aggregate is known."""
    if metric not in row:
        return "—"
    if f"{metric}_low" not in row:
        return _value(row[metric])
    return f"{_value(row[metric])} [{_value(row[metric + '_low'])}, {_value(row[metric + '_high'])}]"


def _diff(x: float) -> str:
    return f"{x:+.3f}"


def _one_line(text: str, limit: int = 400) -> str:
    """An error message fit for a table cell (the full text stays in report.json)."""
    flat = " ".join(str(text).split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def verdict_lines(report: Report) -> list[str]:
    """The report's first section: what training did per variant, and what the tests can separate; one line
    when no variant made an update (every RL model is its SFT model, so nothing below can differ)."""
    if not report.verdict:
        return []
    known = [v for v in report.verdict if v["optimizer_steps"] is not None]
    if known and len(known) == len(report.verdict) and not any(v["rl_differs_from_sft"] for v in known):
        return ["## Verdict", "", f"**No variant made a GRPO update: every RL model is its SFT model, so the "
                f"{len(known)} variants cannot differ and every test below compares copies of one model.**", ""]
    rows = [[v["variant"], "—" if v["optimizer_steps"] is None else v["optimizer_steps"],
             {None: "unknown", True: "yes", False: "no (no update)"}[v["rl_differs_from_sft"]],
             _value(v["format_error"]), v.get("trained_as") or "—"] for v in report.verdict]
    seps = ", ".join(HEADLINE[m].label for m in report.separating)
    alike = {v["variant"]: v["trained_as"] for v in report.verdict if v.get("trained_as")}
    return ["## Verdict", "", _md_table(["variant", "optimizer steps", "RL model differs from SFT",
                                         "format error rate", "same model as"], rows), "",
            *([f"Variants trained exactly as another (same rewards, losses and updates at every step), or never "
               f"updated like another (both the SFT model), are copies of its model: "
               f"{', '.join(f'{v} = {o}' for v, o in alike.items())}.", ""] if alike else []),
            (f"Separated at this size (Holm-adjusted p < 0.05): {seps}." if seps else
             f"No metric separates the variants at this size ({report.n_queries} queries): read the differences "
             "below as unresolved, not as equal."), ""]


def render_markdown(report: Report, variants: list[VariantResult] | None = None) -> str:
    out = [f"# Ablation `{report.ablation}`", ""]
    if report.description:
        out += [report.description, ""]
    if report.profile or report.overrides:
        out += [f"Profile `{report.profile or 'default'}`; overrides: "
                + (f"`{report.overrides}`" if report.overrides else "none") + ".", ""]
    out += verdict_lines(report)
    shown = [m for m in HEADLINE if any(m in r for r in report.rows)]
    if report.rows:
        reward = f"; mean reward scored with the `{report.reward}` reward" if report.reward else ""
        out += [f"Evaluation set: {report.eval_set} ({report.n_queries} queries, same queries for every variant); "
                f"evaluator mode: `{report.evaluator_mode}`. Rates are fractions in [0, 1] (as in MLflow and "
                f"metrics.json; paper numbers, published in %, are divided by 100){reward}; each value is the mean "
                "over queries "
                f"of the per-query mean over samples, with its {round(report.confidence * 100)}% bootstrap "
                "interval over queries.", ""]
        gap = any(LOOPHOLE_GAP in r for r in report.rows)
        header = ["variant", *report.axes, *[f"{HEADLINE[m].label} [CI]" if m in report.metrics else HEADLINE[m].label
                                             for m in shown], *([LOOPHOLE_GAP] if gap else []), "paper success"]
        rows = [[r["variant"], *[r.get(a, "") for a in report.axes], *[_cell(r, m) for m in shown],
                 *([_value(r.get(LOOPHOLE_GAP))] if gap else []),
                 _paper(r["paper_success"])] for r in report.rows]
        out += ["## Headline metrics by variant", "", _md_table(header, rows), ""]
        if gap:
            out += [f"{LOOPHOLE_GAP}: share of plans that pass the official evaluator but fail the strict one "
                    "(a policy can learn the official mode's loopholes).", ""]
    if report.tests:
        out += ["## Paired comparisons (same queries)", "",
                "Variant minus baseline per metric (rates as differences of fractions), "
                f"{round(report.confidence * 100)}% paired "
                f"bootstrap interval; p-values Holm-adjusted over all {len(report.tests)} tests.", ""]
        trows = [[HEADLINE[t["metric"]].label, t["variant"], t["baseline"],
                  f"{_diff(t['difference'])} [{_diff(t['difference_low'])}, {_diff(t['difference_high'])}]",
                  f"{t['baseline_only']}/{t['variant_only']}" if t["method"] == "exact McNemar" else "",
                  f"{t['p_value']:.3g}", f"{t['p_holm']:.3g}", t["method"]] for t in report.tests]
        out += [_md_table(["metric", "variant", "vs", "Δ [CI]", "discordant", "p", "p (Holm)", "test"], trows), ""]
    if report.effects:
        out += ["## Factorial effects", "", "Effects are deviations from the grand mean (main effects) or from the "
                "additive model (interactions), rates as differences of fractions.", ""]
        erows = [[HEADLINE[e["metric"]].label, e["term"],
                  ", ".join(f"{k}: {_diff(v)}" for k, v in e["levels"].items()),
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
