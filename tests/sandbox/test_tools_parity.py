"""`official` style is byte for byte what the official pandas tools + ReAct agent print.

The reference is real pandas: `bench/sandbox.py`'s OfficialPandasTools reads the same CSV files
the way the official tools do (read_csv + dropna + column selection), filters per call and prints
with `to_string(index=False)`. Our renderer never imports pandas, so these tests are what keeps
its fixed-width formatting honest.
"""

from __future__ import annotations

import importlib.util
import random
from operator import itemgetter
from pathlib import Path

import pytest

from star.sandbox import render
from star.sandbox.tools import Toolbox

pd = pytest.importorskip("pandas")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "sandbox.py"


def _bench_module():
    spec = importlib.util.spec_from_file_location("bench_sandbox", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bench():
    return _bench_module()


@pytest.fixture(scope="module", params=["generated", "real"])
def db_and_pandas(request, bench, tmp_path_factory):
    """(database, the official pandas tools over the same CSV files) for each database."""
    db = request.getfixturevalue("generated_db" if request.param == "generated" else "real_db")
    root = db.source if Path(db.source).is_dir() else db.save(tmp_path_factory.mktemp("db"))
    return db, bench.OfficialPandasTools(root)


def _assert_same(db, baseline, calls):
    ours = Toolbox(db, style="official")
    for name, args in calls:
        expected = baseline.call(name, args)
        assert ours.call(name, args) == expected, (name, args)


def test_city_tables_match_pandas_for_every_city(db_and_pandas):
    db, baseline = db_and_pandas
    calls = [(tool, {"city": city}) for city in db.city_set
             for tool in ("RestaurantSearch", "AttractionSearch", "AccommodationSearch")]
    _assert_same(db, baseline, calls)


def test_flight_tables_match_pandas(db_and_pandas):
    db, baseline = db_and_pandas
    rng = random.Random(0)
    keys = rng.sample(sorted(db.flights_by_route_date), min(150, len(db.flights_by_route_date)))
    calls = [("FlightSearch", {"departure": o, "destination": d, "date": date}) for o, d, date in keys]
    # routes without a flight that day, a bad date and an unknown city
    calls += [("FlightSearch", {"departure": rng.choice(db.city_set), "destination": rng.choice(db.city_set),
                                "date": "2022-03-05"}) for _ in range(20)]
    calls += [("FlightSearch", {"departure": keys[0][0], "destination": keys[0][1], "date": "2022-3-5"}),
              ("FlightSearch", {"departure": "Atlantis", "destination": keys[0][1], "date": keys[0][2]})]
    _assert_same(db, baseline, calls)


def test_distances_and_cities_match_the_official_strings(db_and_pandas):
    db, baseline = db_and_pandas
    rng = random.Random(1)
    pairs = rng.sample(sorted(db.distances), min(150, len(db.distances)))
    # the empty and the over-a-day entries are the ones with special messages: make sure they are in
    pairs += [k for k, d in db.distances.items() if not d.distance][:5]
    pairs += [k for k, d in db.distances.items() if d.duration and "day" in d.duration][:5]
    # the paper's argument name (departure) and the alias (origin) both print the official text
    calls = [("GoogleDistanceMatrix", {first: o, "destination": d, "mode": m})
             for o, d in pairs for m in ("self-driving", "taxi") for first in ("departure", "origin")]
    calls += [("GoogleDistanceMatrix", {"departure": pairs[0][0] + "(State)", "destination": pairs[0][1],
                                        "mode": "walking"}),
              ("GoogleDistanceMatrix", {"departure": "Atlantis", "destination": pairs[0][1], "mode": "taxi"})]
    calls += [("CitySearch", {"state": s}) for s in db.state_cities] + [("CitySearch", {"state": "Atlantis"})]
    _assert_same(db, baseline, calls)


# -- the renderer against DataFrame.to_string on awkward values -------------------------------------------

AWKWARD = [
    # (column kinds, rows): each row a tuple, each kind str/int/float
    ((render.STR, render.FLOAT), [("a", 1.5), ("bb", 2.25), ("ccc", 10.0)]),
    ((render.STR, render.FLOAT), [("x", 0.0), ("y", -0.0), ("z", 3.0)]),
    ((render.FLOAT,), [(1e-7,), (2.5,)]),                      # a tiny value: exponent form
    ((render.FLOAT,), [(1e-7,), (1.25,), (0.0,)]),
    ((render.FLOAT,), [(-0.0,), (1e-7,)]),                     # a negative zero and a tiny value
    ((render.FLOAT,), [(-0.0,), (12.5,)]),
    ((render.FLOAT,), [(123456789.123456,), (2.5,)]),
    ((render.FLOAT,), [(1234567.891,), (2.5,)]),               # a huge, long value: exponent form
    ((render.FLOAT,), [(1234567.0,), (2.0,)]),                 # huge but short: fixed
    ((render.FLOAT,), [(33.12345678,), (-118.9,)]),            # rounding to six decimals
    ((render.FLOAT, render.INT), [(0.1 + 0.2, -5), (1 / 3, 12345)]),
    ((render.STR, render.STR), [("line\nbreak", "tab\there"), ("cr\rhere", "ok")]),  # escaped control chars
    ((render.STR, render.INT), [("Cozy ⭐️ room — café", 1), ("x", 22)]),              # unicode widths by len
    ((render.STR,), [("  leading and trailing  ",), ("",)]),
    ((render.STR, render.FLOAT), [("only one row", 1173.0)]),
    ((render.INT, render.STR), [(7, "a long header needs width")]),
]


@pytest.mark.parametrize("kinds, rows", AWKWARD)
def test_render_table_matches_pandas_on_awkward_values(kinds, rows):
    headers = [f"col {i}" if i % 2 else f"c{i}" for i in range(len(kinds))]
    columns = [(h, k, itemgetter(i)) for i, (h, k) in enumerate(zip(headers, kinds))]
    frame = pd.DataFrame({h: [r[i] for r in rows] for i, h in enumerate(headers)})
    for h, k in zip(headers, kinds):
        frame[h] = frame[h].astype({"str": object, "int": "int64", "float": "float64"}[k])
    assert render.render_table(columns, rows) == frame.to_string(index=False)


# -- the shipped reference information: tables printed by the official code itself -------------------------

@pytest.mark.realdb
def test_tables_equal_the_reference_information_of_the_validation_split(real_db, queries_dir):
    """Every table in validation.jsonl's reference information was printed by the official tools
    (pandas to_string, not yet stripped by the agent); ours must print the same bytes."""
    import json

    path = queries_dir / "validation.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    tables = {"Accommodations in ": (render.ACCOMMODATION_TABLE, real_db.accommodations_by_city),
              "Restaurants in ": (render.RESTAURANT_TABLE, real_db.restaurants_by_city),
              "Attractions in ": (render.ATTRACTION_TABLE, real_db.attractions_by_city)}
    checked = 0
    for line in path.read_text(encoding="utf-8").splitlines():
        for entry in json.loads(line)["reference_information"]:
            description, content = entry["Description"], entry["Content"]
            for prefix, (columns, index) in tables.items():
                if description.startswith(prefix) and index.get(description[len(prefix):]):
                    assert render.render_table(columns, index[description[len(prefix):]]) == content, description
                    checked += 1
            if description.startswith("Flight from ") and not content.startswith("There is no flight"):
                origin, rest = description[len("Flight from "):].split(" to ", 1)
                dest, date = rest.rsplit(" on ", 1)
                rows = real_db.flights_by_route_date.get((origin, dest, date), [])
                if rows and len(set(rows)) == len(rows):  # the shared flights file repeats some rows
                    assert render.render_table(render.FLIGHT_TABLE, rows) == content, description
                    checked += 1
    assert checked > 1000
