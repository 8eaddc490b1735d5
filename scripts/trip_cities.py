"""Where the delivered plans of an evaluation spend their trip: at the query's destination, at its origin
(a trip that never left), or elsewhere; read from the plans alone, so result files answer it.

    .venv/bin/python scripts/trip_cities.py --queries D/queries.jsonl.gz --episodes D/sft.jsonl.gz D/rl.jsonl.gz
    .venv/bin/python scripts/trip_cities.py ... --reward quality    # each cell also the place's mean reward
    .venv/bin/python scripts/trip_cities.py ... --paired            # two files: right route, after - before

A plan's place is the city of its days without travel (3-day trips: day 2); a plan with none, or with
days in two places, is "mixed". Multi-city trips (5 and 7 days) count at the destination when every such
day is in a city of the destination state. "from the origin" counts the plans whose first day travels from
the query's origin; "right route", those of them at the destination (both ends copied from the query).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from star.evaluation import commonsense as C  # noqa: E402
from star.evaluation.lookup import Lookup  # noqa: E402
from star.evaluation.rewards import REWARDS  # noqa: E402
from star.evaluation.slots import visited_cities  # noqa: E402
from star.jsonl import read_jsonl  # noqa: E402
from star.sandbox.database import load_database  # noqa: E402

PLACES = ("destination", "origin", "elsewhere", "mixed")


def leaves_origin(query: dict, plan) -> bool:
    """Whether `plan`'s first day travels from the query's origin."""
    if not isinstance(plan, list) or not plan:
        return False
    start = C._strict_day_cities(plan[0])[0]
    return start is not None and start.casefold() == str(query["org"]).casefold()


def place(query: dict, plan, lk: Lookup) -> str | None:
    """Where `plan` stays between its travel days (None: no plan delivered)."""
    if not isinstance(plan, list) or not plan:
        return None
    stays = {C._strict_day_cities(d)[2] for d in plan if isinstance(d, dict) and C._strict_day_cities(d)[0] is None}
    stays.discard(None)
    if not stays:
        return "mixed"
    visit = visited_cities(query, lk)
    if all(c.casefold() in visit for c in stays):
        return "destination"
    if stays == {str(query["org"])} or {c.casefold() for c in stays} == {str(query["org"]).casefold()}:
        return "origin"
    return "elsewhere" if len(stays) == 1 else "mixed"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", required=True, help="the evaluation's queries (.jsonl or .jsonl.gz)")
    ap.add_argument("--episodes", nargs="+", required=True, help="result files or trajectories.jsonl")
    ap.add_argument("--db", default=None, help="database directory (default: $STAR_DB)")
    ap.add_argument("--reward", default=None, choices=list(REWARDS), help="a registered reward: each cell also gives its plans' mean "
                    "(official evaluator), so the table says where an evaluation's points come from")
    ap.add_argument("--paired", action="store_true", help="two result files of the same episodes and seeds: the "
                    "second's right-route rate minus the first's, paired per query, with its s.e. and z")
    args = ap.parse_args(argv)
    if args.paired and len(args.episodes) != 2:
        ap.error("--paired compares exactly two result files")
    import os

    db_path = args.db or os.environ.get("STAR_DB")
    if not db_path:
        ap.error("--db or STAR_DB is required")
    lk = Lookup.for_db(load_database(db_path))
    queries = {q["id"]: q for q in read_jsonl(args.queries)}
    print("| episodes | n | plans | " + " | ".join(PLACES) + " | from the origin | right route |")
    print("|---|---|---|" + "---|" * (len(PLACES) + 2))
    right_route: list[dict] = []
    for path in args.episodes:
        eps = read_jsonl(path)
        missing = [e["query_id"] for e in eps if e["query_id"] not in queries]
        if missing:
            raise SystemExit(f"{path}: {len(missing)} episodes name queries not in {args.queries} ({missing[0]}, ...)")
        places = [place(queries[e["query_id"]], e.get("plan"), lk) for e in eps]
        where = Counter(places)
        plans = len(eps) - where.pop(None, 0)
        cells = [str(where.get(p, 0)) for p in PLACES]
        if args.reward:
            earned = rewards_of(args.queries, list(queries), path, db_path, args.reward, eps)
            cells = [c + (f" ({_mean(earned, places, p):.3f})" if where.get(p) else "") for c, p in zip(cells, PLACES)]
        starts = [leaves_origin(queries[e["query_id"]], e.get("plan")) for e in eps]
        right_route.append([{**e, "sample": e.get("sample", 0), "right": s and p == "destination"}
                            for e, s, p in zip(eps, starts, places)])
        right = sum(r["right"] for r in right_route[-1])
        print(f"| {path} | {len(eps)} | {plans} | " + " | ".join(cells) + f" | {sum(starts)} | {right} |")
    if args.paired:
        from star.stats import paired_difference  # lazy: only with --paired

        d = paired_difference(*right_route, lambda r: float(r["right"]), query="query_id")
        print(f"\nright route, second - first, paired over {d['queries']} queries: {d['before']:.3f} -> "
              f"{d['after']:.3f}, {d['diff']:+.3f} +- {d['diff_se']:.3f}, z {d['z']:.2f} "
              f"({d['queries_better']} queries better, {d['queries_worse']} worse)")
    return 0


def rewards_of(queries_path, ids: list[str], episodes_path, db_path, reward: str, eps: list[dict]) -> list[float]:
    """Each episode's `reward` under the official evaluator, in the episodes' order (`ids`: the queries' ids in
    file order, to check that the scored plans line up with the episodes)."""
    from star.evaluation.cli_evaluate import evaluate_files  # lazy: only with --reward

    report = evaluate_files(queries_path, episodes_path, db_path, mode="official", reward=reward, progress=False)
    per_plan = report["per_plan"]
    if [ids[p["query_index"]] for p in per_plan] != [e["query_id"] for e in eps]:
        raise SystemExit(f"{episodes_path}: the scored plans do not line up with its episodes")
    return [float(p["reward"]) for p in per_plan]


def _mean(values: list[float], places: list, where: str) -> float:
    picked = [v for v, p in zip(values, places) if p == where]
    return sum(picked) / len(picked)


if __name__ == "__main__":
    raise SystemExit(main())
