"""`star evaluate`: score a plans file against its queries and write the metrics + per-plan verdicts.

    star evaluate --queries Q.jsonl --plans P.jsonl [--db DIR|generated] [--mode strict|official]
                  [--reward NAME] --out R.json

`--reward NAME` (a reward of star.evaluation.rewards) writes each plan's reward into `per_plan` (key `reward`)
and the mean into the report (`reward`), scored on the report's mode; a plan file has no finish reason, so
each plan is scored as an answer.
"""

from __future__ import annotations

import json
import sys

from star.cli_args import literal_choices
from star.evaluation.audit import audit_scores, audit_table, hacking_audit, hacking_table, score_both
from star.evaluation.config import DEFAULTS, SPLIT_DENOMINATORS, FormatterConfig
from star.evaluation.evaluator import aggregate
from star.evaluation.llm_formatter import LLMFormatter
from star.evaluation.lookup import Lookup
from star.evaluation.plans_io import PlanFileError, match_plans, read_plan_lines
from star.evaluation.queries import QueryError, load_queries
from star.evaluation.rewards import REWARDS, compute_reward
from star.jsonl import atomic_write_text
from star.sandbox.database import load_database
from star.sandbox.rows import DatabaseError


def add_arguments(parser) -> None:
    parser.add_argument("--queries", required=True, help="queries: JSONL or the official CSV layout")
    parser.add_argument("--plans", required=True, help='plans JSONL: one {"idx": …, "plan": [...] | null} per line')
    parser.add_argument("--db", default=None, help="database directory, `generated` or `generated:SEED` (default $STAR_DB)")
    parser.add_argument("--mode", choices=literal_choices(DEFAULTS, "mode"), default=DEFAULTS.mode,
                        help="strict (loopholes closed) or official (official-evaluator parity)")
    parser.add_argument("--split", choices=literal_choices(DEFAULTS, "split"), default=DEFAULTS.split,
                        help="denominators: own plans (default) or an official split's fixed N/8N/H")
    parser.add_argument("--match", choices=("auto", "idx", "order"), default="auto",
                        help="pair plans with queries by idx, by line order, or decide from the file (auto)")
    parser.add_argument("--reward", choices=list(REWARDS), default=None,
                        help="score every plan with this reward too (per_plan[].reward and its mean)")
    parser.add_argument("--out", required=True, help="where to write the JSON report (written atomically)")
    parser.add_argument("--formatter-url", default=None,
                        help="optional OpenAI-compatible endpoint (…/v1) that rewrites free-form text plans")
    parser.add_argument("--formatter-model", default=DEFAULTS.formatter.model, help="model name for --formatter-url")


def evaluate_files(queries_path, plans_path, db_spec=None, mode: str = "strict", split: str = "own",
                   match: str = "auto", progress: bool = True, formatter=None, reward: str | None = None) -> dict:
    """The report `star evaluate` writes (also usable from Python)."""
    from tqdm import tqdm

    queries = load_queries(queries_path)
    lines = read_plan_lines(plans_path, formatter)
    pairs, rule = match_plans(lines, len(queries), match)
    db = load_database(db_spec)
    if mode not in ("official", "strict"):
        raise ValueError(f"unknown evaluator mode {mode!r}; expected 'official' or 'strict'")
    lookup = Lookup.for_db(db)
    scores, both, per_plan = [], [], []
    # every plan in both modes: the report's mode for the aggregates, both for the loophole audit
    for qi, ln in tqdm(pairs, desc=f"evaluate ({mode} + loophole audit)", disable=not progress, unit="plan"):
        both.append(score_both(queries[qi], ln.plan, db, lookup))
        score = both[-1][mode]
        scores.append(score)
        per_plan.append({"line": ln.line, "idx": ln.idx, "query_index": qi, "error": ln.error, **score.to_dict()})
    rewards = {name: [compute_reward(name, p, "answer") for p in per_plan] for name in REWARDS}
    for p, value in zip(per_plan, rewards.get(reward, [])):
        p["reward"] = value
    report = {
        "mode": mode, "split": split, "queries": str(queries_path), "plans": str(plans_path), "db": db.source,
        "matched_by": rule, "aggregates": aggregate(scores, split=split),
        "audit": {**audit_scores(both), **hacking_audit([b["strict"].to_dict() for b in both], rewards)},
        "errors": [ln.error for ln in lines if ln.error], "per_plan": per_plan,
    }
    if reward:
        report["reward"] = {"name": reward, "mean": sum(rewards[reward]) / max(len(per_plan), 1)}
    return report


def format_table(agg: dict) -> str:
    keys = ("delivery_rate", "commonsense_micro", "commonsense_macro", "hard_micro", "hard_macro", "success_rate")
    levels = list(agg.get("per_level", {}))
    header = f"{'metric':<20}{'all':>9}" + "".join(f"{lvl:>9}" for lvl in levels)
    rows = [header, "-" * len(header)]
    for k in keys:
        rows.append(f"{k:<20}{agg[k] * 100:>8.1f}%" + "".join(f"{agg['per_level'][lvl][k] * 100:>8.1f}%" for lvl in levels))
    rows.append(f"{'plans':<20}{agg['n']:>9}" + "".join(f"{agg['per_level'][lvl]['n']:>9}" for lvl in levels))
    return "\n".join(rows)


def run(args) -> int:
    formatter = None
    if args.formatter_url:
        formatter = LLMFormatter(FormatterConfig(base_url=args.formatter_url, model=args.formatter_model))
    try:
        report = evaluate_files(args.queries, args.plans, args.db, args.mode, args.split, args.match,
                                formatter=formatter, reward=args.reward)
    except (QueryError, PlanFileError, DatabaseError) as exc:
        print(f"star evaluate: {exc}", file=sys.stderr)
        return 2
    for err in report["errors"]:
        print(f"star evaluate: skipped {err}", file=sys.stderr)
    atomic_write_text(args.out, json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    agg = report["aggregates"]
    print(f"mode={args.mode} split={args.split} plans={agg['n']} matched_by={report['matched_by']} "
          f"bad_lines={len(report['errors'])} official_aborts={agg['aborted']}")
    print(format_table(agg))
    print("\nloophole audit (every plan scored in both evaluator modes):\n" + audit_table(report["audit"]))
    print("\n" + hacking_table(report["audit"]))
    if args.reward:
        print(f"\nmean reward ({args.reward}): {report['reward']['mean']:.3f} over {agg['n']} plans")
    print(f"wrote {args.out}")
    return 0
