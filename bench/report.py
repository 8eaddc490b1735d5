"""Benchmark: the comparison report on a 2x2 grid of real episodes (every headline metric).

    .venv/bin/python bench/report.py [--db DIR] [--queries FILE] [--limit N] [--samples 2] [--out DIR]

Variants: the built-in teacher on the validation queries (real database: --db, else $STAR_DB, else
../shared/travelplanner/database) under a 2x2 grid, tool budget {60, 12} x tool failure rate
{0, 0.3}, each episode scored by the evaluator in official mode, written the way eval-agent writes
them (metrics/eval/rl/trajectories.jsonl). Then `build_report` with the default report settings
(2000 bootstrap resamples, 10000 sign flips, factorial effects for every metric), once with the
grid's axes and once without (no factorial analysis), and `write_report`. Prints the wall time of
each and the report's headline table; target: the whole report under 60 s on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from star.report.build import build_report
from star.report.load import VariantResult, load_variant_dir
from star.report.write import write_report  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "travelplanner"


def episodes(db, queries: list[dict], budget: int, failure: float, samples: int) -> list:
    from star.agent.config import AgentConfig
    from star.teachers.builtin import BuiltinTeacher

    teacher = BuiltinTeacher(db, AgentConfig(eval_mode="official", tool_budget=budget, failure_rate=failure))
    return [teacher.run(q, str(q.get("id", i)), s, seed=1000 * i + s) for i, q in enumerate(queries)
            for s in range(samples)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=os.environ.get("STAR_DB") or str(SHARED / "database"))
    ap.add_argument("--queries", default=str(SHARED / "queries" / "validation.jsonl"))
    ap.add_argument("--limit", type=int, default=None, help="first N queries (default all)")
    ap.add_argument("--samples", type=int, default=2, help="episodes per query")
    ap.add_argument("--out", default="/tmp/star-bench-report", help="where the variants and the report go")
    args = ap.parse_args()

    from star.agent.trajectory import write_trajectories
    from star.evaluation.queries import load_queries
    from star.sandbox.database import load_database

    db = load_database(args.db)
    queries = load_queries(args.queries)[:args.limit]
    out = Path(args.out)
    t0 = time.perf_counter()
    variants: list[VariantResult] = []
    for budget in (60, 12):
        for failure in (0.0, 0.3):
            name = f"budget={budget},failure={failure}"
            root = out / name.replace("=", "-").replace(",", "_")
            write_trajectories(root / "metrics/eval/rl/trajectories.jsonl",
                               episodes(db, queries, budget, failure, args.samples))
            (root / "params.yaml").write_text(f"run: {{variant: '{name}'}}\nrl: {{reward: sum}}\n")
            variants.append(load_variant_dir(root, name, {"budget": str(budget), "failure": str(failure)}))
    t_episodes = time.perf_counter() - t0

    t0 = time.perf_counter()
    report = build_report(variants, "teacher-grid", "built-in teacher, tool budget x tool failures")
    t_grid = time.perf_counter() - t0
    flat = [VariantResult(v.name, {}, v.outcomes, samples=v.samples, reward=v.reward) for v in variants]
    t0 = time.perf_counter()
    build_report(flat, "teacher-grid")
    t_flat = time.perf_counter() - t0
    t0 = time.perf_counter()
    files = write_report(report, variants, out / "report")
    t_write = time.perf_counter() - t0

    md = files["markdown"].read_text()
    print(md[md.index("## Headline"):md.index("## Paired")])
    print(f"{len(variants)} variants x {report.n_queries} queries x {args.samples} samples, "
          f"{len(report.tests)} paired tests, {len(report.effects)} factorial terms")
    print("| step | wall s |\n|---|---|")
    print(f"| teacher episodes (not the report) | {t_episodes:.1f} |")
    print(f"| build_report, intervals + tests | {t_flat:.1f} |")
    print(f"| build_report, + factorial effects | {t_grid:.1f} |")
    print(f"| write_report (md, json, 3 plots) | {t_write:.1f} |")
    total = t_grid + t_write
    print(f"report total {total:.1f} s (target < 60 s): {'ok' if total < 60 else 'SLOW'}; files in {out / 'report'}")
    return 0 if total < 60 else 1


if __name__ == "__main__":
    raise SystemExit(main())
