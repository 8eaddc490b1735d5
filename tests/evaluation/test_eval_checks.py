"""Every commonsense check and hard constraint, passing and failing, in both evaluator modes.

Each case breaks one thing in a known-good trip and states which check should fail in official
mode and in strict mode (None = passes). Quirk cases are where the two modes disagree.
"""

from __future__ import annotations

import copy

import pytest

from star.evaluation.evaluator import evaluate_plan, plan_cost

OTHER = "__other_city__"  # replaced by a real city different from org and dest


def _other_city(db, q):
    return next(c for c in db.city_states if c not in (q["org"], q["dest"]) and db.city_states[c] != db.city_states[q["dest"]])


def _set(day, key, value):
    def mutate(q, p, db):
        p[day][key] = value(q, p, db) if callable(value) else value
    return mutate


def _q(key, value):
    def mutate(q, p, db):
        if key in q["local_constraint"]:
            q["local_constraint"][key] = value(q, p, db) if callable(value) else value
        else:
            q[key] = value(q, p, db) if callable(value) else value
    return mutate


def _swap_dest(q, p, db):
    """Quirk case: the whole trip goes to another city than the query's destination."""
    new = _other_city(db, q)
    dest = q["dest"]
    # Rebuild the trip towards `new` only where the evaluator reads cities: the route.
    for d in p:
        d["current_city"] = d["current_city"].replace(dest, new)
    q["_swapped_to"] = new


def _room_rule_broken(q, p, db):
    rules = q["_parts"]["stay"].house_rules
    rule = next(r for r in ("smoking", "parties", "children under 10", "visitors", "pets") if f"No {r}" in rules)
    q["local_constraint"]["house rule"] = rule


def _room_rule_kept(q, p, db):
    rules = q["_parts"]["stay"].house_rules
    q["local_constraint"]["house rule"] = next(
        r for r in ("smoking", "parties", "children under 10", "visitors", "pets") if f"No {r}" not in rules)


def _room_type(wrong: bool):
    def mutate(q, p, db):
        t = q["_parts"]["stay"].room_type
        match = {"Shared room": "shared room", "Private room": "private room", "Entire home/apt": "entire room"}[t]
        other = {"Shared room": "not shared room", "Private room": "entire room", "Entire home/apt": "shared room"}[t]
        q["local_constraint"]["room type"] = other if wrong else match
    return mutate


def _cuisine_served(q, p, db):
    q["local_constraint"]["cuisine"] = [q["_parts"]["rest"][1].cuisines.split(", ")[0]]


def _cuisine_origin_skip(q, p, db):
    """Day 1 breakfast in the origin city: official skips the rest of day 1 (the dinner's cuisine)."""
    p[0]["breakfast"] = f"{q['_parts']['org_rest'][0].name}, {q['org']}"
    dinner_cuisines = q["_parts"]["rest"][1].cuisines.split(", ")
    others = set()
    for r in q["_parts"]["rest"][2:6]:
        others |= set(r.cuisines.split(", "))
    # A cuisine only day 1's dinner serves, among the meals the trip has outside the origin.
    only = [c for c in dinner_cuisines if c not in others and c not in q["_parts"]["rest"][0].cuisines]
    if not only:
        pytest.skip("no cuisine unique to day 1's dinner in this database")
    q["local_constraint"]["cuisine"] = [only[0]]


def _lower_self_driving(q, p, db):
    a, b = q["org"], q["dest"]
    p[0]["transportation"] = f"self-driving, from {a} to {b}"
    p[2]["transportation"] = f"self-driving, from {b} to {a}"
    q["local_constraint"]["transportation"] = "no self-driving"
    if db.distances.get((a, b)) is None or db.distances[(a, b)].cost("self-driving") is None \
            or db.distances.get((b, a)) is None or db.distances[(b, a)].cost("self-driving") is None:
        pytest.skip("no drivable route for this trip")


def _wrong_date_flight(q, p, db):
    out = q["_parts"]["out"]
    other = next((f for f in db.flights_by_route[(out.origin, out.dest)]
                  if f.date != out.date and db.flights_by_number[f.number] is f), None)
    if other is None:
        pytest.skip("no flight on another date")
    p[0]["transportation"] = p[0]["transportation"].replace(out.number, other.number)


def _repeat_attraction(q, p, db):
    p[1]["attraction"] = p[0]["attraction"] + p[1]["attraction"]


def _min_nights(q, p, db):
    rows = db.accommodations_by_city[q["dest"]]
    for i, r in enumerate(rows):
        if r.minimum_nights >= 3 and "," not in r.name and sum(r.name in o.name for o in rows) == 1:
            p[0]["accommodation"] = p[1]["accommodation"] = f"{r.name}, {q['dest']}"
            return
    pytest.skip("no uniquely named listing with minimum nights >= 3")


def _prefix_restaurant(q, p, db):
    name = q["_parts"]["rest"][3].name
    p[1]["lunch"] = f"{name[: max(3, len(name) // 2)]}, {q['dest']}"


CASES = [
    # name, mutation, key, failing in official?, failing in strict?
    ("good trip", None, None, False, False),
    ("route starts elsewhere", _set(0, "current_city", lambda q, p, db: f"from {_other_city(db, q)} to {q['dest']}"),
     "is_reasonable_visiting_city", True, True),
    ("route not closed", _set(2, "current_city", lambda q, p, db: f"from {q['dest']} to {_other_city(db, q)}"),
     "is_reasonable_visiting_city", True, True),
    ("3-day trip to another city (quirk)", _swap_dest, "is_reasonable_visiting_city", False, True),
    ("unknown city", _set(1, "current_city", "Atlantis"), "is_reasonable_visiting_city", True, True),
    ("repeated restaurant", _set(1, "dinner", lambda q, p, db: p[1]["breakfast"]), "is_valid_restaurants", True, True),
    ("repeated restaurant, other spelling (quirk)", _set(1, "dinner", lambda q, p, db: p[1]["breakfast"].replace(", ", ",")),
     "is_valid_restaurants", False, True),
    ("repeated attraction", _repeat_attraction, "is_valid_attractions", True, True),
    ("repeated attraction without trailing ';' (quirk)",
     _set(1, "attraction", lambda q, p, db: p[1]["attraction"] + p[0]["attraction"].rstrip(";")),
     "is_valid_attractions", False, True),
    ("minimum nights broken", _min_nights, "is_valid_accommodation", True, True),
    ("conflicting transport", _set(2, "transportation", lambda q, p, db: f"Self-driving, from {q['dest']} to {q['org']}"),
     "is_valid_transportation", True, True),
    ("no transport on day 1", _set(0, "transportation", "-"), "is_valid_transportation", True, True),
    ("taxi + flight allowed", _set(2, "transportation", lambda q, p, db: f"Taxi, from {q['dest']} to {q['org']}"),
     "is_valid_transportation", False, False),
    ("two legs in one day that do not chain (quirk)",
     _set(0, "transportation", lambda q, p, db: f"Taxi, from {q['org']} to {q['dest']}; " + p[0]["transportation"]),
     "is_valid_information_in_current_city", False, True),
    ("travel-day meal elsewhere", _set(0, "dinner", lambda q, p, db: f"{q['_parts']['rest'][1].name}, {_other_city(db, q)}"),
     "is_valid_information_in_current_city", True, True),
    ("stay-day meal elsewhere (quirk)", _set(1, "dinner", lambda q, p, db: f"{q['_parts']['rest'][4].name}, Qxz"),
     "is_valid_information_in_current_city", False, True),
    ("hallucinated flight", _set(0, "transportation", lambda q, p, db: f"Flight Number: F0000000, from {q['org']} to {q['dest']}"),
     "is_valid_information_in_sandbox", True, True),
    ("flight on another date (quirk)", _wrong_date_flight, "is_valid_information_in_sandbox", False, True),
    ("'Self driving' without hyphen next to a flight (quirk)",
     _set(0, "transportation", lambda q, p, db: f"Self driving, from {q['org']} to {q['dest']}"),
     "is_valid_transportation", False, True),
    ("unrecognised transport text (quirk)", _set(0, "transportation", lambda q, p, db: f"Boat, from {q['org']} to {q['dest']}"),
     "is_valid_information_in_sandbox", False, True),
    ("hallucinated restaurant", _set(1, "lunch", lambda q, p, db: f"Imaginary Diner 123, {q['dest']}"),
     "is_valid_information_in_sandbox", True, True),
    ("restaurant name prefix (quirk)", _prefix_restaurant, "is_valid_information_in_sandbox", False, True),
    ("hallucinated attraction without ';' (quirk)", _set(1, "attraction", lambda q, p, db: f"Imaginary Museum, {q['dest']}"),
     "is_valid_information_in_sandbox", False, True),
    ("hallucinated accommodation", _set(1, "accommodation", lambda q, p, db: f"Castle in the Air, {q['dest']}"),
     "is_valid_information_in_sandbox", True, True),
    ("plan too short", lambda q, p, db: p.pop(), "is_not_absent", True, True),
    ("no meal on a stay day", _set(1, "lunch", "-"), "is_not_absent", True, True),
    ("no attraction on a stay day", _set(1, "attraction", "-"), "is_not_absent", True, True),
    ("None counts as present (quirk)", _set(1, "lunch", None), "is_not_absent", False, True),
    ("wrong number of cities", _q("visiting_city_number", 2), "is_not_absent", True, True),
    ("over budget", _q("budget", lambda q, p, db: q["_parts"]["cost"] - 1), "valid_cost", True, True),
    ("budget met exactly", _q("budget", lambda q, p, db: q["_parts"]["cost"]), "valid_cost", False, False),
    ("house rule broken", _room_rule_broken, "valid_room_rule", True, True),
    ("house rule kept", _room_rule_kept, "valid_room_rule", False, False),
    ("room type wrong", _room_type(True), "valid_room_type", True, True),
    ("room type right", _room_type(False), "valid_room_type", False, False),
    ("cuisine unmet", _q("cuisine", ["Nonexistent Cuisine"]), "valid_cuisine", True, True),
    ("cuisine met", _cuisine_served, "valid_cuisine", False, False),
    ("cuisine after an origin-city breakfast (quirk)", _cuisine_origin_skip, "valid_cuisine", True, False),
    ("no flight, flights taken", _q("transportation", "no flight"), "valid_transportation", True, True),
    ("no self-driving in lower case (quirk)", _lower_self_driving, "valid_transportation", False, True),
]


@pytest.mark.parametrize("mode", ["official", "strict"])
@pytest.mark.parametrize("name,mutate,key,fail_official,fail_strict", CASES, ids=[c[0] for c in CASES])
def test_check_verdicts(any_db, trip, mode, name, mutate, key, fail_official, fail_strict):
    q, p = trip(any_db)
    if mutate is not None:
        mutate(q, p, any_db)
    score = evaluate_plan(q, p, any_db, mode=mode)
    expect_fail = fail_official if mode == "official" else fail_strict
    assert score.delivered and score.aborted is None
    if key is None:
        assert score.success, (score.commonsense, score.hard)
        return
    box = score.commonsense if key.startswith("is_") else score.hard
    assert box is not None, f"hard box gated out: {score.commonsense}"
    ok, reason = box[key]
    if expect_fail:
        assert ok is False and reason or key == "valid_cost" and ok is False, (name, box[key])
    else:
        assert ok is True, (name, mode, box[key])


def test_hard_box_gated_by_sandbox_and_completeness(generated_db, trip):
    q, p = trip(generated_db)
    p[1]["lunch"] = f"Imaginary Diner 123, {q['dest']}"
    for mode in ("official", "strict"):
        score = evaluate_plan(q, p, generated_db, mode=mode)
        assert score.hard is None and not score.hard_macro and not score.success


def test_hard_box_not_gated_by_other_checks(generated_db, trip):
    q, p = trip(generated_db)
    p[1]["dinner"] = p[1]["breakfast"]  # repeated restaurant: commonsense fails, hard still scored
    score = evaluate_plan(q, p, generated_db, mode="official")
    assert score.commonsense["is_valid_restaurants"][0] is False
    assert score.hard is not None and score.hard_macro and not score.success


def test_undelivered_plans(generated_db, trip):
    q, _ = trip(generated_db)
    for plan in (None, [], ""):
        score = evaluate_plan(q, plan, generated_db, mode="official")
        assert not score.delivered and score.commonsense is None and score.cs_micro == 0 and not score.success


def test_coverage_is_the_share_of_the_querys_days_the_plan_fills(generated_db, trip):
    q, p = trip(generated_db)
    n = q["days"]
    for mode in ("official", "strict"):
        assert evaluate_plan(q, p, generated_db, mode=mode).coverage == 1.0
        stub = evaluate_plan(q, p[:1], generated_db, mode=mode)  # a one-day stub of the trip
        assert stub.coverage == pytest.approx(1 / n) and stub.to_dict()["coverage"] == pytest.approx(1 / n)
        blank = copy.deepcopy(p)
        blank[-1]["current_city"] = "-"  # a day without a city is not covered
        assert evaluate_plan(q, blank, generated_db, mode=mode).coverage == pytest.approx((n - 1) / n)
        longer = p + [copy.deepcopy(p[-1])]  # days past the query's do not count
        assert evaluate_plan(q, longer, generated_db, mode=mode).coverage == 1.0
        assert evaluate_plan(q, None, generated_db, mode=mode).coverage == 0.0


def test_cost_counts_people_rooms_and_meals(any_db, trip):
    q, p = trip(any_db)
    for mode in ("official", "strict"):
        assert plan_cost(q, p, any_db, mode=mode) == pytest.approx(q["_parts"]["cost"])
    q["people_number"] = 5  # 5 people: meals and flights ×5, ceil(5/occupancy) rooms
    stay = q["_parts"]["stay"]
    parts = q["_parts"]
    expected = (parts["out"].price + parts["back"].price) * 5 + sum(r.avg_cost for r in parts["rest"][:6]) * 5 \
        + 2 * stay.price * -(-5 // stay.maximum_occupancy)
    assert plan_cost(q, p, any_db, mode="official") == pytest.approx(expected)


def test_official_crash_paths_are_recorded_not_raised(generated_db, trip):
    q, p = trip(generated_db)
    crashes = {
        "flight number without a route": lambda p: p[1].__setitem__("transportation", "Flight Number: F1"),
        "lower-case flight number": lambda p: p[0].__setitem__("transportation", f"flight number F1, from {q['org']} to {q['dest']}"),
        "'from' without 'to'": lambda p: p[0].__setitem__("current_city", f"from {q['org']}"),
        "empty day inside the trip": lambda p: p.__setitem__(1, {}),
        "missing transportation key": lambda p: p[1].pop("transportation"),
        "None accommodation (first run)": lambda p: p[0].__setitem__("accommodation", None),
    }
    for name, breaker in crashes.items():
        plan = [dict(d) for d in p]
        breaker(plan)
        score = evaluate_plan(q, plan, generated_db, mode="official")
        assert score.aborted, name
        assert all(ok is False and "would abort" in msg for ok, msg in score.commonsense.values()), name
        assert score.hard is None and not score.success
        strict = evaluate_plan(q, plan, generated_db, mode="strict")  # strict reports, never aborts
        assert strict.aborted is None and not strict.success, name


def test_strict_never_raises_on_garbage(generated_db, trip):
    import random

    q, p = trip(generated_db)
    rng = random.Random(0)
    junk = [None, "", "-", 3, ["x"], {"a": 1}, "from", "from  to ", "Flight Number: ", ",", ";;;", "Taxi", "(", ")("]
    for _ in range(300):
        plan = [dict(d) for d in p]
        for _ in range(rng.randint(1, 4)):
            day = rng.randrange(len(plan))
            key = rng.choice(["current_city", "transportation", "breakfast", "attraction", "lunch", "dinner", "accommodation"])
            if rng.random() < 0.1:
                plan[day].pop(key, None)
            else:
                plan[day][key] = rng.choice(junk)
        if rng.random() < 0.1:
            plan[rng.randrange(len(plan))] = rng.choice([{}, None, "day"])
        score = evaluate_plan(q, plan, generated_db, mode="strict")
        assert score.commonsense is not None
        official = evaluate_plan(q, plan, generated_db, mode="official")  # may abort, must not raise
        assert official.commonsense is not None


def test_strict_names_the_wrong_flight_date(generated_db, trip):
    q, p = trip(generated_db)
    _wrong_date_flight(q, p, generated_db)
    ok, reason = evaluate_plan(q, p, generated_db, mode="strict").commonsense["is_valid_information_in_sandbox"]
    assert ok is False and f"does not fly on {q['date'][0]}" in reason


def test_unknown_mode_is_an_error(generated_db, trip):
    q, p = trip(generated_db)
    with pytest.raises(ValueError, match="unknown evaluator mode"):
        evaluate_plan(q, p, generated_db, mode="lenient")


def test_raw_official_query_records_are_accepted_and_incomplete_ones_named(generated_db, trip):
    q, p = trip(generated_db)
    raw = dict(q, local_constraint=str(q["local_constraint"]), date=str(q["date"]))  # CSV-style literals
    assert evaluate_plan(raw, p, generated_db).success
    with pytest.raises(ValueError, match="budget"):
        evaluate_plan({k: v for k, v in q.items() if k != "budget"}, p, generated_db)
