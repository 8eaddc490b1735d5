"""The feasibility solver: optimal plans on hand-made worlds, proofs of infeasibility, real/generated data."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from star.sandbox.rows import Distance, Restaurant
from star.synthesis.config import SolverConfig
from star.synthesis.elements import sample_elements
from star.synthesis.solver import solve

from synth_rules import plan_problems, plan_total
from synth_world import acc, distance_rows, query, restaurants_for, tiny_world


def _ok(db, q, res, budget=None):
    assert res.status == "optimal", res
    assert plan_problems(db, q, res.plan, budget) == []
    assert res.cost == pytest.approx(plan_total(db, q, res.plan))


def test_three_day_trip_takes_the_cheapest_mix_of_drive_stay_and_meals():
    db, q = tiny_world(), query()
    res = solve(db, q)
    _ok(db, q, res)
    # drive 15 + 15, Alpha Loft 80 x 2 nights, the three cheapest restaurants 10 + 20 + 30
    assert res.cost == 250
    assert res.plan[0]["transportation"].startswith("Self-driving, from Origin to Alpha")
    assert res.plan[1]["attraction"] == "Alpha Sight 0, Alpha;"
    assert res.plan[2]["current_city"] == "from Alpha to Origin" and res.plan[2]["accommodation"] == "-"


def test_no_self_driving_uses_the_flights_of_the_query_dates():
    db = tiny_world()
    q = query(local_constraint={"transportation": "no self-driving"})
    res = solve(db, q)
    _ok(db, q, res)
    assert res.cost == 100 + 120 + 160 + 60
    assert "Flight Number: F0000001" in res.plan[0]["transportation"]
    assert "Flight Number: F0000002" in res.plan[2]["transportation"]


def test_a_flight_out_and_a_taxi_back_is_a_legal_mix_but_drive_plus_flight_is_not():
    # no road Origin->Alpha: the only way out is the flight; the way back is a taxi (or the flight)
    db = tiny_world(distances=distance_rows(missing={("Origin", "Alpha")}),
                    flights=[tiny_world().flights[0]])
    q = query()
    res = solve(db, q)
    _ok(db, q, res)
    assert res.plan[0]["transportation"].startswith("Flight Number")
    assert res.plan[2]["transportation"].startswith("Taxi")
    assert res.cost == 100 + 300 + 160 + 60
    banned = solve(db, query(local_constraint={"transportation": "no flight"}))
    assert banned.status == "infeasible" and banned.plan is None


def test_group_size_multiplies_meals_and_needs_enough_rooms_and_cars():
    db = tiny_world()
    q = query(people_number=5, level="medium")
    res = solve(db, q)
    _ok(db, q, res)
    # one car (<= 5 people) 30; Loft sleeps 4 -> 2 units x 80 x 2 nights; meals x 5
    assert res.cost == 30 + 2 * 80 * 2 + 60 * 5


SUITE, LOFT = "Alpha Suite, Alpha", "Alpha Loft, Alpha"


@pytest.mark.parametrize("lc, listing", [
    ({"room type": "private room"}, SUITE),
    ({"room type": "entire room"}, LOFT),
    ({"room type": "not shared room"}, LOFT),
    ({"house rule": "pets"}, SUITE),       # the Loft says "No pets"
    ({"house rule": "smoking"}, LOFT),     # the Suite says "No smoking"
])
def test_room_type_and_house_rule_pick_the_cheapest_allowed_listing(lc, listing):
    db = tiny_world()
    q = query(people_number=2, level="medium", local_constraint=lc)
    res = solve(db, q)
    _ok(db, q, res)
    assert res.plan[0]["accommodation"] == listing
    night = 120 if listing == SUITE else 80
    assert res.cost == 30 + night * 2 + 60 * 2


@pytest.mark.parametrize("why, db_kwargs, q_kwargs", [
    ("no shared room anywhere", {}, {"local_constraint": {"room type": "shared room"}}),
    ("every listing needs 3 nights", {"accommodations": [acc("Alpha Loft", "Alpha", 80, min_nights=3)]}, {}),
    ("no attraction for the full day", {"attractions": []}, {}),
    ("only two restaurants for three meals", {"restaurants": restaurants_for("Alpha", costs=(10, 20))}, {}),
    ("cuisine not served", {}, {"local_constraint": {"cuisine": ["French"]}}),
    ("no road and no flight", {"distances": [], "flights": []}, {}),
    ("car-free but no flight back or taxi", {"distances": [Distance("Origin", "Alpha", "3 hours 5 mins", "300 km")],
                                             "flights": tiny_world().flights[:1]},
     {"local_constraint": {"transportation": "no self-driving"}}),
])
def test_infeasible_queries_are_proved_infeasible(why, db_kwargs, q_kwargs):
    db = tiny_world(**db_kwargs)
    res = solve(db, query(**q_kwargs))
    assert res.status == "infeasible", why
    assert res.plan is None and res.reason


def test_a_drive_longer_than_a_day_is_not_a_route():
    db = tiny_world(distances=[Distance(a, b, "1 day 2 hours", "2,900 km") for a, b in
                               [("Origin", "Alpha"), ("Alpha", "Origin")]], flights=[])
    assert solve(db, query()).status == "infeasible"


def test_cuisines_beyond_the_full_day_meals_are_eaten_on_travel_days():
    four = [Restaurant(f"{c} House", "Alpha", c, 100 + 10 * i, 4.0)
            for i, c in enumerate(["Chinese", "Italian", "Mexican", "Indian"])]
    db = tiny_world(restaurants=restaurants_for("Alpha") + four)
    q = query(people_number=2, level="hard",
              local_constraint={"cuisine": ["Chinese", "Italian", "Mexican", "Indian"]})
    res = solve(db, q)
    _ok(db, q, res)
    travel_meals = [d[m] for d in (res.plan[0], res.plan[2]) for m in ("breakfast", "lunch", "dinner") if d[m] != "-"]
    assert len(travel_meals) == 1
    assert res.cost == 30 + 80 * 2 + (100 + 110 + 120 + 130) * 2
    assert solve(db, q, cfg=SolverConfig(travel_day_meals=False)).status == "infeasible"


def test_one_restaurant_serving_two_cuisines_beats_two_dearer_ones():
    rs = [Restaurant("Fusion", "Alpha", "Chinese, Italian", 45, 4.0), Restaurant("Wok", "Alpha", "Chinese", 40, 4.0),
          Restaurant("Trattoria", "Alpha", "Italian", 40, 4.0)] + restaurants_for("Alpha", costs=(10, 20, 30))
    db = tiny_world(restaurants=rs)
    q = query(people_number=2, level="medium", local_constraint={"cuisine": ["Chinese", "Italian"]})
    res = solve(db, q)
    _ok(db, q, res)
    meals = {res.plan[1][m] for m in ("breakfast", "lunch", "dinner")}
    assert meals == {"Fusion, Alpha", "Alpha Diner 0, Alpha", "Alpha Diner 1, Alpha"}


def test_a_listing_the_evaluator_would_confuse_with_an_earlier_one_is_never_used():
    # The evaluator finds "Cozy Loft" inside "Cozy Loft Deluxe" first and would charge 500 for it.
    db = tiny_world(accommodations=[acc("Cozy Loft Deluxe", "Alpha", 500), acc("Cozy Loft", "Alpha", 50)])
    q = query()
    res = solve(db, q)
    _ok(db, q, res)
    assert res.plan[0]["accommodation"] == "Cozy Loft Deluxe, Alpha"
    assert res.cost == 30 + 1000 + 60


def test_a_search_cut_short_says_so_instead_of_guessing(generated_db):
    q = sample_elements(generated_db, "easy", random.Random(0), days=7)
    res = solve(generated_db, q, cfg=SolverConfig(max_nodes=1))
    assert res.status == "limit" and res.plan is None


def test_a_listing_stored_with_stray_spaces_is_written_trimmed_and_still_used():
    # Real listings end in spaces ("Peaceful, beautiful home away "); the plan writes the trimmed name.
    db = tiny_world(accommodations=[acc("Dear Place", "Alpha", 300), acc("Peaceful, cheap home ", "Alpha", 20)])
    q = query()
    res = solve(db, q)
    _ok(db, q, res)
    assert res.plan[0]["accommodation"] == "Peaceful, cheap home, Alpha" and res.cost == 30 + 40 + 60


def test_budget_bounds_the_search_and_equality_passes():
    db, q = tiny_world(), query()
    assert solve(db, q, budget=250).status == "optimal"
    over = solve(db, q, budget=249)
    assert over.status == "over_budget" and over.cost == 250 and over.plan is None


def _brute_force(db, q):
    """Every transport family, ordered route and split of nights; the cheapest per-city choices."""
    P, days, k = q["people_number"], q["days"], q["visiting_city_number"]
    lc = q["local_constraint"]
    cities = db.state_cities[q["dest"]] if days > 3 else [q["dest"]]
    rooms = {"entire room": {"Entire home/apt"}, "private room": {"Private room"}, "shared room": {"Shared room"},
             "not shared room": {"Private room", "Entire home/apt"}}

    def leg(modes, a, b, day):
        opts = []
        if "flight" in modes:
            opts += [f.price * P for f in db.flights_by_route_date.get((a, b, q["date"][day - 1]), [])]
        d = db.distances.get((a, b))
        for m, cap in (("self-driving", 5), ("taxi", 4)):
            if m in modes and d and d.cost(m) is not None:
                opts.append(d.cost(m) * math.ceil(P / cap))
        return min(opts) if opts else None

    def stay(c, n):
        rs = sorted({r.name: r.avg_cost for r in db.restaurants_by_city.get(c, [])}.values())
        if len({a.name for a in db.attractions_by_city.get(c, [])}) < n - 1 or len(rs) < 3 * (n - 1):
            return None
        accs = [a.price * math.ceil(P / a.maximum_occupancy) * n for a in db.accommodations_by_city.get(c, [])
                if a.minimum_nights <= n and (not lc["room type"] or a.room_type in rooms[lc["room type"]])
                and (not lc["house rule"] or f"No {lc['house rule']}" not in a.house_rules)]
        return min(accs) + sum(rs[:3 * (n - 1)]) * P if accs else None

    best = math.inf
    fams = [("self-driving",), ("flight", "taxi")]
    for fam in fams:
        for route in itertools.permutations([c for c in cities if c != q["org"]], k):
            for nights in itertools.product(range(1, days), repeat=k):
                if sum(nights) != days - 1:
                    continue
                total, day, prev = 0.0, 1, q["org"]
                for c, n in zip(route, nights):
                    lg, st = leg(fam, prev, c, day), stay(c, n)
                    if lg is None or st is None:
                        break
                    total += lg + st
                    day, prev = day + n, c
                else:
                    back = leg(fam, prev, q["org"], days)
                    if back is not None:
                        best = min(best, total + back)
    return best


@pytest.mark.parametrize("seed", range(12))
def test_branch_and_bound_matches_exhaustive_enumeration_on_the_generated_world(generated_db, seed):
    rng = random.Random(seed)
    level = ["easy", "medium"][seed % 2]
    q = sample_elements(generated_db, level, rng, days=[3, 5, 7][seed % 3])
    if q["local_constraint"]["cuisine"]:
        q["local_constraint"]["cuisine"] = None  # the brute force prices meals without a cuisine constraint
    # names in the generated world resolve to themselves, so the brute force may use every row
    res = solve(generated_db, q)
    brute = _brute_force(generated_db, q)
    if brute == math.inf:
        assert res.status == "infeasible"
    else:
        _ok(generated_db, q, res)
        assert res.cost == pytest.approx(brute)


def test_solver_plans_on_sampled_queries_satisfy_every_rule(any_db):
    rng = random.Random(7)
    solved = 0
    for i in range(120):
        q = sample_elements(any_db, ["easy", "medium", "hard"][i % 3], rng)
        res = solve(any_db, q)
        assert res.status in ("optimal", "infeasible")
        if res.ok:
            solved += 1
            assert plan_problems(any_db, q, res.plan) == [], q
            assert res.cost == pytest.approx(plan_total(any_db, q, res.plan))
    assert solved >= 10


def test_solver_plans_pass_the_project_evaluator_in_both_modes(any_db):
    ev = pytest.importorskip("star.evaluation.evaluator")
    rng = random.Random(11)
    checked = 0
    for i in range(45):
        q = sample_elements(any_db, ["easy", "medium", "hard"][i % 3], rng)
        res = solve(any_db, q)
        if not res.ok:
            continue
        q["budget"] = math.ceil(res.cost)
        for mode in ("official", "strict"):
            score = ev.evaluate_plan(q, res.plan, any_db, mode=mode)
            assert score.success, (mode, q, score.commonsense, score.hard)
        assert ev.plan_cost(q, res.plan, any_db) == pytest.approx(res.cost)
        checked += 1
    assert checked >= 8


@pytest.mark.parametrize("split, least", [("train", 45), ("validation", 179)])
def test_official_queries_are_solved_within_their_budgets(real_db, queries_dir, split, least):
    import json

    from star.evaluation.evaluator import evaluate_plan
    from star.synthesis.pipeline import normalize

    rows = [normalize(json.loads(line)) for line in open(queries_dir / f"{split}.jsonl", encoding="utf-8")]
    solved = [(q, r) for q in rows if (r := solve(real_db, q, q["budget"])).ok]
    assert len(solved) >= least
    assert all(evaluate_plan(q, r.plan, real_db, mode="official").success for q, r in solved)
