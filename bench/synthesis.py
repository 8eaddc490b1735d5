"""Benchmark: certified queries per second, and the solver's coverage of the official queries.

    .venv/bin/python bench/synthesis.py [--db DIR] [--n 1000] [--workers 1 2] [--no-coverage]

Table 1 — for the real database (--db or $STAR_DB) and the generated world: time to synthesise
N certified queries (sample -> solve -> budget -> phrase -> round-trip -> evaluator when
installed), queries per second, and rejected draws. Target: 1,000 certified queries in under
2 minutes on the 2-core CI machine.

Table 2 — on the real database: the share of the official train (45) and validation (180)
queries the solver solves within their budgets, and the share of those plans that pass the
official-mode and strict evaluators (when star.evaluation.evaluator is installed).

Table 3 (+ optional --plot PNG) — budget slack, median budget / minimum plan cost per level, for
a synthetic pool and the official validation split: how hard the budget constraint is.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from star.sandbox.database import load_database  # noqa: E402
from star.synthesis.config import SynthesisConfig  # noqa: E402
from star.synthesis.pipeline import evaluator_available, normalize, synthesize  # noqa: E402
from star.synthesis.solver import solve  # noqa: E402

QUERIES = Path(__file__).resolve().parents[2] / "shared" / "travelplanner" / "queries"


def bench_synthesis(spec: str, n: int, workers: int) -> dict:
    db = load_database(spec)
    stats: dict = {}
    cfg = SynthesisConfig(workers=workers)
    t0 = time.perf_counter()
    recs = synthesize(db, n, seed=0, ratio="4:3:3", cfg=cfg, progress=False, stats=stats)
    dt = time.perf_counter() - t0
    rejected = sum(stats["rejections"].values())
    return {"db": "real" if not spec.startswith("generated") else spec, "workers": workers, "n": len(recs),
            "seconds": dt, "qps": len(recs) / dt, "rejected": rejected, "certified_by": stats["certified_by"]}


def coverage(db_dir: str, split: str) -> dict:
    db = load_database(db_dir)
    rows = [normalize(json.loads(line)) for line in open(QUERIES / f"{split}.jsonl", encoding="utf-8")]
    solved, statuses = [], {}
    t0 = time.perf_counter()
    for q in rows:
        res = solve(db, q, q["budget"])
        statuses[res.status] = statuses.get(res.status, 0) + 1
        if res.ok:
            solved.append((q, res))
    dt = time.perf_counter() - t0
    out = {"split": split, "queries": len(rows), "solved": len(solved), "statuses": statuses, "seconds": dt}
    if evaluator_available():
        from star.evaluation.evaluator import evaluate_plan

        for mode in ("official", "strict"):
            out[mode] = sum(evaluate_plan(q, r.plan, db, mode=mode).success for q, r in solved)
    return out


def calibration(db_dir: str, n: int = 300) -> dict[str, dict[str, float]]:
    """Median budget / minimum plan cost per level: synthetic pool vs the official validation split.

    A looser ratio means an easier budget constraint; BudgetConfig.method picks the official ratio quantiles
    (default) or the original formula (looser). bench/fidelity.py compares the quantiles per level.
    """
    import statistics

    db = load_database(db_dir)
    syn = synthesize(db, n, seed=123)
    out: dict[str, dict[str, float]] = {"synthetic": {}, "official": {}}
    for level in ("easy", "medium", "hard"):
        out["synthetic"][level] = statistics.median(r["budget"] / r["reference_cost"] for r in syn if r["level"] == level)
    rows = [normalize(json.loads(line)) for line in open(QUERIES / "validation.jsonl", encoding="utf-8")]
    ratios: dict[str, list[float]] = {"easy": [], "medium": [], "hard": []}
    for q in rows:
        res = solve(db, q)
        if res.ok:
            ratios[q["level"]].append(q["budget"] / res.cost)
    for level, values in ratios.items():
        out["official"][level] = statistics.median(values)
    return out


def plot_calibration(cal: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = ["easy", "medium", "hard"]
    fig, ax = plt.subplots(figsize=(5, 3))
    for i, (name, color) in enumerate((("official", "#4c72b0"), ("synthetic", "#dd8452"))):
        ax.bar([x + 0.38 * i for x in range(3)], [cal[name][lv] for lv in levels], width=0.38, label=name, color=color)
    ax.set_xticks([x + 0.19 for x in range(3)], levels)
    ax.set_ylabel("median budget / min plan cost")
    ax.set_title("Budget slack (real database)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=os.environ.get("STAR_DB"), help="real database directory")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--no-coverage", action="store_true")
    ap.add_argument("--plot", default=None, help="save the budget-slack comparison plot (PNG) here")
    args = ap.parse_args()
    specs = ([args.db] if args.db and not args.db.startswith("generated") else []) + ["generated:0"]
    print(f"synthesis throughput (target: 1,000 certified queries < 120 s); evaluator "
          f"{'installed' if evaluator_available() else 'NOT installed: solver certification only'}")
    print(f"| {'db':<12} | {'workers':>7} | {'queries':>7} | {'seconds':>8} | {'q/s':>7} | {'rejected':>8} | "
          f"{'< 120 s':>7} |")
    print("|" + "|".join("-" * w for w in (14, 9, 9, 10, 9, 10, 9)) + "|")
    for spec in specs:
        for w in args.workers:
            r = bench_synthesis(spec, args.n, w)
            scaled = r["seconds"] * 1000 / max(r["n"], 1)
            print(f"| {r['db']:<12} | {w:>7} | {r['n']:>7} | {r['seconds']:>8.1f} | {r['qps']:>7.1f} | "
                  f"{r['rejected']:>8} | {'yes' if scaled < 120 else 'NO':>7} |", flush=True)
    if args.no_coverage or not args.db or args.db.startswith("generated"):
        return 0
    print("\nsolver coverage of the official queries (real database; flights table is a subset)")
    print(f"| {'split':<10} | {'queries':>7} | {'solved <= budget':>16} | {'official pass':>13} | "
          f"{'strict pass':>11} | {'seconds':>7} | statuses")
    print("|" + "|".join("-" * w for w in (12, 9, 18, 15, 13, 9, 10)) + "|")
    for split in ("train", "validation"):
        c = coverage(args.db, split)
        share = f"{c['solved']} ({c['solved'] / c['queries']:.1%})"
        off = f"{c['official']}/{c['solved']}" if "official" in c else "n/a"
        strict = f"{c['strict']}/{c['solved']}" if "strict" in c else "n/a"
        print(f"| {split:<10} | {c['queries']:>7} | {share:>16} | {off:>13} | {strict:>11} | {c['seconds']:>7.2f} | "
              f"{c['statuses']}")
    cal = calibration(args.db)
    print("\nbudget slack: median budget / minimum plan cost (higher = easier budget constraint)")
    print(f"| {'set':<10} | {'easy':>6} | {'medium':>6} | {'hard':>6} |")
    print("|" + "|".join("-" * w for w in (12, 8, 8, 8)) + "|")
    for name in ("official", "synthetic"):
        print(f"| {name:<10} | " + " | ".join(f"{cal[name][lv]:>6.2f}" for lv in ("easy", "medium", "hard")) + " |")
    if args.plot:
        plot_calibration(cal, args.plot)
        print(f"plot: {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
