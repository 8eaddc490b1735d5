"""The reward-ordering table of docs/evaluation-modes.md: certified plans and their hand-made degradations.

    .venv/bin/python scripts/reward_table.py --db $STAR_DB --n 12 --days 3 --out docs/experiments/data/reward-ordering

Synthesises N certified queries (their reference plans meet every constraint), writes queries.jsonl and one
plans file per degradation (star.evaluation.degrade) under --out, scores each file as `star evaluate --mode
strict --reward NAME` does (its Python entry, `evaluate_files`) for every registered reward, and prints the
mean per plan as a markdown table. Any cell can be re-run by hand:

    star evaluate --queries OUT/queries.jsonl --plans OUT/plans/one-wrong-item.jsonl --db $STAR_DB --reward quality --out r.json
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path


def slug(name: str) -> str:
    """A row's plans file name: `skeleton (cities + transport)` -> `skeleton-cities-transport`."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", required=True, help="database directory, or generated[:SEED]")
    ap.add_argument("--n", type=int, default=12, help="certified queries")
    ap.add_argument("--days", type=int, nargs="+", default=[3], choices=(3, 5, 7), help="trip lengths to draw")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--out", required=True, help="folder for queries.jsonl and plans/*.jsonl")
    args = ap.parse_args(argv)

    from star.evaluation.cli_evaluate import evaluate_files
    from star.evaluation.degrade import DEGRADATIONS, degraded_plans, order_violations
    from star.evaluation.rewards import ORDERED, REWARDS
    from star.jsonl import write_jsonl
    from star.sandbox.database import load_database
    from star.synthesis.config import SynthesisConfig
    from star.synthesis.pipeline import synthesize

    db = load_database(args.db)
    cfg = SynthesisConfig.model_validate({"sampling": {"day_choices": args.days}})
    queries = synthesize(db, args.n, seed=args.seed, cfg=cfg)
    out = Path(args.out)
    (out / "plans").mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "queries.jsonl", queries)
    plans = [degraded_plans(q, db) for q in queries]
    for name in DEGRADATIONS:
        write_jsonl(out / "plans" / f"{slug(name)}.jsonl", [{"idx": i, "plan": p[name]} for i, p in enumerate(plans)])
    means = {name: {} for name in DEGRADATIONS}
    per_query = {r: [dict() for _ in queries] for r in REWARDS}
    for name in DEGRADATIONS:
        for reward in REWARDS:
            report = evaluate_files(out / "queries.jsonl", out / "plans" / f"{slug(name)}.jsonl", args.db, "strict",
                                    progress=False, reward=reward)
            means[name][reward] = report["reward"]["mean"]
            for p in report["per_plan"]:
                per_query[reward][p["query_index"]][name] = p["reward"]
    ordered = {r: sum(not order_violations(v) for v in per_query[r]) for r in REWARDS}
    print(f"{len(queries)} certified {'/'.join(map(str, args.days))}-day queries on {db.source}, strict mode, "
          "mean reward per plan:\n")
    print("| plan | " + " | ".join(f"`{r}`" for r in REWARDS) + " |")
    print("|---|" + "---|" * len(REWARDS))
    for name in DEGRADATIONS:
        print(f"| {name} | " + " | ".join(f"{means[name][r]:.3f}" for r in REWARDS) + " |")
    print("| queries ranked in the quality order | " + " | ".join(
        f"{ordered[r]}/{len(queries)}" + (" (claims it)" if r in ORDERED else "") for r in REWARDS) + " |")
    (out / "table.json").write_text(json.dumps({"means": means, "ordered": ordered, "db": str(db.source),
                                                "days": args.days, "seed": args.seed}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
