"""Benchmark: synthetic-query fidelity — the built-in teacher's success on synthetic vs real queries, and
budget / cheapest-plan ratios, side by side, on the real database and the generated world.

    .venv/bin/python bench/fidelity.py [--db DIR] [--n 450] [--seed 11] [--generated generated:0] [--json OUT]

Table 1 — built-in teacher success (one sample per query, strict evaluator) by level and by
(days, cities): the 180 official validation queries on the real database, and N synthetic queries
(`star synthesize --n N --seed S`) on the real database and on the generated world. Target: every
group within ±5 points of the real queries (the paper: 21.9% synthetic vs 21.1% real for its teacher).

Table 2 — budget / cheapest-plan ratio quantiles (q25 / q50 / q75) by level: the official
validation queries (cheapest plan solved on the real database) vs each synthetic set (the certified
reference cost). Target: every quantile within ±10%.

The generated world has no real queries of its own; its synthetic queries are compared with the real
queries on the real database (the difficulty a real agent meets).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from star.teachers.cli_teacher import run_teacher  # noqa: E402
from star.teachers.builtin import BuiltinTeacher  # noqa: E402
from star.evaluation.queries import load_queries  # noqa: E402
from star.sandbox.database import load_database  # noqa: E402
from star.synthesis import fidelity  # noqa: E402
from star.synthesis.config import BudgetConfig, SynthesisConfig  # noqa: E402
from star.synthesis.pipeline import synthesize  # noqa: E402
from star.synthesis.solver import solve  # noqa: E402

QUERIES = Path(__file__).resolve().parents[2] / "shared" / "travelplanner" / "queries" / "validation.jsonl"


def teacher_success(db, queries: list[dict], seed: int) -> list[float]:
    trajs = run_teacher(BuiltinTeacher(db), queries, 1, seed, progress=False)
    return [float(t.success) for t in trajs]


def synthetic_set(spec: str, n: int, seed: int, seed_teacher: int, budget_method: str) -> dict:
    db = load_database(spec)
    t0 = time.perf_counter()
    cfg = SynthesisConfig(budget=BudgetConfig(method=budget_method))
    queries = synthesize(db, n, seed=seed, cfg=cfg)
    t1 = time.perf_counter()
    success = teacher_success(db, queries, seed_teacher)
    return {"queries": queries, "success": fidelity.success_by_group(queries, success),
            "ratios": fidelity.budget_ratios(queries, [q["reference_cost"] for q in queries]),
            "synth_s": t1 - t0, "teacher_s": time.perf_counter() - t1}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=os.environ.get("STAR_DB"), help="real database directory (default $STAR_DB)")
    ap.add_argument("--queries", default=str(QUERIES), help="the real queries (official validation)")
    ap.add_argument("--generated", default="generated:0", help="generated-world spec ('' to skip)")
    ap.add_argument("--n", type=int, default=450, help="synthetic queries per database")
    ap.add_argument("--seed", type=int, default=11, help="synthesis seed")
    ap.add_argument("--teacher-seed", type=int, default=0)
    ap.add_argument("--budget-method", choices=("ratio", "formula"), default=BudgetConfig().method)
    ap.add_argument("--json", default=None, help="also write every number here")
    args = ap.parse_args()
    if not args.db or not Path(args.db).is_dir():
        print("bench/fidelity.py needs the real database (--db or $STAR_DB): the real queries run on it",
              file=sys.stderr)
        return 2
    db = load_database(args.db)
    real_q = load_queries(args.queries)
    t0 = time.perf_counter()
    real_success = fidelity.success_by_group(real_q, teacher_success(db, real_q, args.teacher_seed))
    real_ratios = fidelity.budget_ratios(real_q, [solve(db, q).cost for q in real_q])
    print(f"real: {len(real_q)} queries, teacher + solver {time.perf_counter() - t0:.1f} s", flush=True)
    sets = {"synthetic, real db": synthetic_set(args.db, args.n, args.seed, args.teacher_seed, args.budget_method)}
    if args.generated:
        sets["synthetic, generated"] = synthetic_set(args.generated, args.n, args.seed, args.teacher_seed,
                                                     args.budget_method)
    for name, s in sets.items():
        print(f"{name}: {len(s['queries'])} queries, synthesis {s['synth_s']:.1f} s, teacher {s['teacher_s']:.1f} s")
    print(f"\nbuilt-in teacher success, strict evaluator, one sample per query (budget method {args.budget_method}; "
          "target: within ±5 points of real)\n")
    print(fidelity.success_table(real_success, {k: s["success"] for k, s in sets.items()}))
    print("\nbudget / cheapest plan, q25 / q50 / q75 by level (target: within ±10% of real)\n")
    print(fidelity.budget_table(real_ratios, {k: s["ratios"] for k, s in sets.items()}))
    if args.json:
        out = {"real": {"success": real_success, "ratios": real_ratios},
               **{k: {"success": s["success"], "ratios": s["ratios"]} for k, s in sets.items()},
               "args": vars(args)}
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
