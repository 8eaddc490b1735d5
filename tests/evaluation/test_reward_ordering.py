"""Rewards that claim to rank plans by quality do, on certified plans and their hand-made degradations.

A certified plan (synthesis' reference plan: it meets every constraint) > the same with one wrong item >
the same with its last day dropped > each of {its first day only, a skeleton of cities and transport,
every item an invented name} >= every field "-" >= 0, and each of those > a whole trip of real places in
the wrong city (at home, or a city the query does not name), for every query tried, on both databases.
"""

from __future__ import annotations

import pytest

from star.agent.env import score_plan
from star.evaluation.degrade import DEGRADATIONS, degraded_plans, order_violations
from star.evaluation.rewards import ORDERED, compute_reward
from star.synthesis.pipeline import synthesize


@pytest.fixture(scope="module")
def certified(any_db):
    queries = synthesize(any_db, 12, seed=11)
    assert {q["days"] for q in queries} == {3, 5, 7}
    return any_db, queries


def test_the_travelplanner_profiles_train_with_an_ordered_reward():
    from star.config import resolve

    for profile in ("smoke", "cpu", "travel", "travel-small"):
        assert resolve(profile).values["rl"]["reward"] in ORDERED, profile


@pytest.mark.parametrize("reward", sorted(ORDERED))
def test_an_ordered_reward_ranks_every_degradation_of_every_certified_plan(certified, reward):
    db, queries = certified
    for q in queries:
        values = {name: compute_reward(reward, score_plan(q, plan, db, "strict"), "answer")
                  for name, plan in degraded_plans(q, db).items()}
        assert not order_violations(values), f"{q['id']} ({q['days']} days): {order_violations(values)}"


def test_a_form_of_dashes_earns_nothing_and_a_skeleton_only_its_cities_and_legs(certified):
    db, queries = certified
    q = next(q for q in queries if q["days"] == 3)
    plans = degraded_plans(q, db)
    assert compute_reward("quality", score_plan(q, plans["every field -"], db, "strict"), "answer") == 0.0
    skeleton = score_plan(q, plans["skeleton (cities + transport)"], db, "strict")
    assert skeleton["slot_credit"] == pytest.approx(5 / 11)  # 3 cities + 2 legs of 11 required slots
    assert "is_valid_restaurants" in skeleton["vacuous"] and "is_valid_accommodation" in skeleton["vacuous"]


@pytest.mark.parametrize("where", ["stays home", "another city"])
def test_a_trip_to_the_wrong_city_earns_nothing_for_its_real_places(certified, where):
    from star.evaluation.lookup import Lookup

    db, queries = certified
    lk = Lookup.for_db(db)
    for q in queries:
        plan = degraded_plans(q, db)[where]
        places = [(table, *day[k].rsplit(", ", 1)) for day in plan for k, table in (
            ("breakfast", "restaurants"), ("lunch", "restaurants"), ("dinner", "restaurants"),
            ("attraction", "attractions"), ("accommodation", "accommodations")) if day[k] != "-"]
        assert len(places) >= 4 * q["days"] - 1, "a full trip: three meals and a sight a day, a stay a night"
        assert all(lk.exact(*p) for p in places), f"{q['id']}: the wrong-city trip names only real places"
        s = score_plan(q, plan, db, "strict")
        assert s["delivered"]
        assert s["slot_credit"] == 0.0, f"{q['id']} ({q['days']} days): {where} earns {s['slot_credit']}"
        assert compute_reward("quality", s, "answer") == 0.0


def test_the_paper_rewards_keep_their_formulas_and_are_gamed_by_stubs_in_official_mode(certified):
    db, queries = certified
    q = next(q for q in queries if q["days"] == 3)
    plans = degraded_plans(q, db)
    official = {k: compute_reward("sum", score_plan(q, p, db, "official"), "answer") for k, p in plans.items()}
    # the official checks pass what a plan omits: an empty skeleton earns what one wrong restaurant earns
    assert official["skeleton (cities + transport)"] >= official["one wrong item"]
    assert official["certified"] == 5.0


def test_the_degradations_are_the_table_in_the_docs():
    text = (__import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "evaluation-modes.md").read_text()
    for name in DEGRADATIONS:
        assert f"| {name} |" in text, name


def _script(name: str):
    """A script of scripts/ imported as a module (they are not a package)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_trip_cities_tells_where_a_plan_spends_its_trip(certified):
    from star.evaluation.lookup import Lookup

    trip_cities = _script("trip_cities")
    db, queries = certified
    lk = Lookup.for_db(db)
    for q in queries:
        plans = degraded_plans(q, db)
        where = {k: trip_cities.place(q, plans[k], lk) for k in ("certified", "stays home", "another city")}
        assert where == {"certified": "destination", "stays home": "origin", "another city": "elsewhere"}, q["id"]
        assert trip_cities.place(q, None, lk) is None
        assert trip_cities.leaves_origin(q, plans["certified"]) and not trip_cities.leaves_origin(q, None)
        wrong_start = [dict(d) for d in plans["certified"]]
        wrong_start[0]["current_city"] = f"from {q['dest']} to {q['org']}"
        assert not trip_cities.leaves_origin(q, wrong_start)


def test_trip_cities_says_where_the_reward_comes_from(certified, tmp_path, capsys):
    from star.jsonl import write_jsonl

    trip_cities = _script("trip_cities")
    db, queries = certified
    three = [q for q in queries if q["days"] == 3]
    write_jsonl(tmp_path / "queries.jsonl", three)
    for name, kind in (("trips.jsonl", "certified"), ("home.jsonl", "stays home")):
        write_jsonl(tmp_path / name, [{"query_id": q["id"], "plan": degraded_plans(q, db)[kind]} for q in three])
    assert trip_cities.main(["--queries", str(tmp_path / "queries.jsonl"), "--db", db.source, "--reward", "quality",
                             "--episodes", str(tmp_path / "trips.jsonl"), str(tmp_path / "home.jsonl")]) == 0
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()[2:]]
    n = len(three)
    trips, home = rows[0][3], rows[1][4]
    assert trips.startswith(f"{n} (") and float(trips[len(f"{n} ("):-1]) > 0.5, trips
    assert home == f"{n} (0.000)", home
    assert rows[0][-2:] == [str(n), f"{n} |"], rows[0]  # every certified trip leaves the origin for the destination
    assert rows[1][-1] == "0 |", rows[1]


def test_trip_cities_pairs_the_right_route_of_two_evaluations(certified, tmp_path, capsys):
    """--paired: the second file's right-route rate minus the first's over the same episodes and seeds; files
    that ran other seeds are refused, not compared."""
    from star.jsonl import write_jsonl

    trip_cities = _script("trip_cities")
    db, queries = certified
    three = [q for q in queries if q["days"] == 3]
    write_jsonl(tmp_path / "queries.jsonl", three)
    for name, kind in (("home.jsonl", "stays home"), ("trips.jsonl", "certified")):
        write_jsonl(tmp_path / name, [{"query_id": q["id"], "sample": 0, "seed": i, "plan": degraded_plans(q, db)[kind]}
                                      for i, q in enumerate(three)])
    args = ["--queries", str(tmp_path / "queries.jsonl"), "--db", db.source, "--paired", "--episodes"]
    assert trip_cities.main([*args, str(tmp_path / "home.jsonl"), str(tmp_path / "trips.jsonl")]) == 0
    assert f"0.000 -> 1.000, +1.000 +- 0.000, z inf ({len(three)} queries better, 0 worse)" in capsys.readouterr().out
    write_jsonl(tmp_path / "other.jsonl", [{"query_id": q["id"], "sample": 0, "seed": i + 1, "plan": None}
                                           for i, q in enumerate(three)])
    with pytest.raises(ValueError, match="different seeds"):
        trip_cities.main([*args, str(tmp_path / "home.jsonl"), str(tmp_path / "other.jsonl")])
