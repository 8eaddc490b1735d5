"""Benchmark: our evaluator vs a pandas per-lookup baseline (the official code's way), same plans.

    .venv/bin/python bench/evaluate.py [--db DIR] [--queries DIR] [--repeat 1]

Plans: the 180 validation example plans (validation.jsonl queries) and the 45 train gold plans,
on the real database (--db, else $STAR_DB, else ../shared/travelplanner/database). The baseline
runs the same check code with every row lookup done the way the official evaluator does it: a
fresh DataFrame filter per lookup (`Name.str.contains(re.escape(name)) & City == city` for the
official rule, string equality over whole columns for the strict rule), no index, no memo. Ours
uses the in-memory indexes (`Lookup`), built from scratch inside the timed region. Every
verdict and reason of every plan must be identical; the script prints a table with both timings
and the speed ratio per mode (target >= 50x) and exits non-zero on any difference.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from star.evaluation.evaluator import evaluate_plan  # noqa: E402
from star.evaluation.lookup import Lookup  # noqa: E402
from star.evaluation.queries import load_queries  # noqa: E402
from star.sandbox.database import load_database
from star.sandbox.rows import Database  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "travelplanner"


class PandasLookup:
    """The `Lookup` interface answered by per-call pandas filtering, as the official evaluator does."""

    def __init__(self, db: Database):
        import pandas as pd

        self.db = db
        self.frames = {
            "restaurants": pd.DataFrame({"Name": [r.name for r in db.restaurants], "City": [r.city for r in db.restaurants]}),
            "attractions": pd.DataFrame({"Name": [r.name for r in db.attractions], "City": [r.city for r in db.attractions]}),
            "accommodations": pd.DataFrame({"NAME": [r.name for r in db.accommodations],
                                            "city": [r.city for r in db.accommodations]}),
        }
        self.normalised: dict = {}
        self.rows = {"restaurants": db.restaurants, "attractions": db.attractions, "accommodations": db.accommodations}
        self.flights = pd.DataFrame({"Flight Number": [f.number for f in db.flights],
                                     "OriginCityName": [f.origin for f in db.flights],
                                     "DestCityName": [f.dest for f in db.flights]})
        self.distances = pd.DataFrame({"origin": [d.origin for d in db.distance_rows],
                                       "destination": [d.dest for d in db.distance_rows]})

    def _substring(self, table: str, name: str, city: str) -> list:
        df = self.frames[table]
        name_col, city_col = df.columns
        hit = df[df[name_col].astype(str).str.contains(re.escape(name)) & (df[city_col] == city)]
        return [self.rows[table][i] for i in hit.index]

    def restaurants(self, name, city):
        return self._substring("restaurants", name, city)

    def attractions(self, name, city):
        return self._substring("attractions", name, city)

    def accommodations(self, name, city):
        return self._substring("accommodations", name, city)

    def exact(self, table, name, city):
        # Normalised columns are computed once; each lookup is still a whole-table filter.
        df = self.normalised.get(table)
        if df is None:
            src = self.frames[table]
            norm = lambda s: s.astype(str).str.split().str.join(" ").str.casefold()  # noqa: E731
            df = self.normalised[table] = src.assign(key_name=norm(src.iloc[:, 0]), key_city=norm(src.iloc[:, 1]))
        key = lambda v: " ".join(v.split()).casefold()  # noqa: E731
        hit = df[(df["key_name"] == key(name)) & (df["key_city"] == key(city))]
        return [self.rows[table][i] for i in hit.index]

    def flights_numbered(self, number):
        hit = self.flights[self.flights["Flight Number"] == number]
        return [self.db.flights[i] for i in hit.index]

    def flight_on_route(self, number, origin, dest):
        f = self.flights
        return len(f[(f["Flight Number"] == number) & (f["OriginCityName"] == origin) & (f["DestCityName"] == dest)]) > 0

    def distance_cost(self, origin, dest, mode):
        d = self.distances
        hit = d[(d["origin"] == origin) & (d["destination"] == dest)]
        return None if len(hit) == 0 else self.db.distance_rows[hit.index[0]].cost(mode)


def load_cases(queries_dir: Path) -> list[tuple[dict, list]]:
    cases = []
    val_q = load_queries(queries_dir / "validation.jsonl")
    with open(queries_dir / "validation_example_plans.jsonl", encoding="utf-8") as fh:
        cases += [(q, json.loads(line)["plan"]) for q, line in zip(val_q, fh)]
    for q in load_queries(queries_dir / "train.jsonl"):
        cases.append((q, ast.literal_eval(q["annotated_plan"])[1]))
    return cases


def run_all(cases, db, mode, lookup, progress: str | None = None):
    from tqdm import tqdm

    return [evaluate_plan(q, p, db, mode, lookup=lookup)
            for q, p in tqdm(cases, desc=progress, disable=progress is None, leave=False)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--db", default=os.environ.get("STAR_DB") or str(SHARED / "database"))
    ap.add_argument("--queries", type=Path, default=SHARED / "queries")
    ap.add_argument("--repeat", type=int, default=1, help="passes over the plans for our evaluator (best of)")
    args = ap.parse_args(argv)

    db = load_database(args.db)
    cases = load_cases(args.queries)
    rows, ok = [], True
    for mode in ("official", "strict"):
        t0 = time.perf_counter()
        base = run_all(cases, db, mode, PandasLookup(db), progress=f"pandas baseline ({mode})")
        t_pandas = time.perf_counter() - t0
        best = float("inf")
        for _ in range(max(1, args.repeat)):
            t0 = time.perf_counter()
            ours = run_all(cases, db, mode, Lookup(db))  # fresh indexes: build time included
            best = min(best, time.perf_counter() - t0)
        same = all(a.to_dict() == b.to_dict() for a, b in zip(base, ours))
        ok &= same
        rows.append((mode, len(cases), t_pandas, best, t_pandas / best, same))
    print(f"database: {db.source}  plans: {len(cases)} (180 validation examples + 45 train gold)")
    print(f"{'mode':<10}{'plans':>7}{'pandas s':>11}{'ours s':>10}{'ms/plan ours':>14}{'speed-up':>10}{'identical':>11}")
    for mode, n, tp, to, ratio, same in rows:
        print(f"{mode:<10}{n:>7}{tp:>11.3f}{to:>10.4f}{to / n * 1000:>14.3f}{ratio:>9.0f}x{str(same):>11}")
    target = all(r[4] >= 50 for r in rows)
    print(f"target >= 50x: {'met' if target else 'NOT met'}; verdicts identical: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
