"""Element sampling follows the original generator's rules per level and trip length."""

from __future__ import annotations

import random
from collections import Counter
from datetime import date

import pytest

from star.sandbox.rows import CUISINES, HOUSE_RULES
from star.synthesis.elements import ROOM_TYPE_VALUES, TRANSPORT_VALUES, element_key, sample_elements
from star.synthesis.pipeline import level_counts, slot_levels


def _draws(db, level, n=300, seed=0, **kw):
    rng = random.Random(seed)
    return [sample_elements(db, level, rng, **kw) for _ in range(n)]


def test_dates_are_consecutive_days_of_march_2022(any_db):
    for q in _draws(any_db, "easy", 200):
        ds = [date.fromisoformat(d) for d in q["date"]]
        assert len(ds) == q["days"] and all(d.year == 2022 and d.month == 3 for d in ds)
        assert all((b - a).days == 1 for a, b in zip(ds, ds[1:]))


def test_three_day_trips_go_to_a_city_in_another_state(any_db):
    for q in _draws(any_db, "medium", 200, days=3):
        assert q["visiting_city_number"] == 1
        assert q["dest"] in any_db.city_states
        assert any_db.city_states[q["dest"]] != any_db.city_states[q["org"]]


@pytest.mark.parametrize("days, cities", [(5, 2), (7, 3)])
def test_longer_trips_visit_a_state_with_more_than_three_cities(any_db, days, cities):
    for q in _draws(any_db, "hard", 200, days=days):
        assert q["visiting_city_number"] == cities
        assert q["dest"] in any_db.state_cities and len(any_db.state_cities[q["dest"]]) > 3
        assert q["dest"] != any_db.city_states[q["org"]]


def test_easy_is_one_person_with_no_local_constraint(any_db):
    for q in _draws(any_db, "easy"):
        assert q["people_number"] == 1 and q["level"] == "easy"
        assert set(q["local_constraint"].values()) == {None}


def test_medium_is_a_group_with_exactly_one_non_transport_constraint(any_db):
    draws = _draws(any_db, "medium", 600)
    people = Counter(q["people_number"] for q in draws)
    assert set(people) <= set(range(2, 9)) and 0.4 < people[2] / len(draws) < 0.6
    kinds = Counter()
    for q in draws:
        present = {k: v for k, v in q["local_constraint"].items() if v is not None}
        assert len(present) == 1 and "transportation" not in present
        kind, value = next(iter(present.items()))
        kinds[kind] += 1
        if kind == "cuisine":
            assert len(value) == 2 and len(set(value)) == 2 and set(value) <= set(CUISINES)
        elif kind == "room type":
            allowed = ROOM_TYPE_VALUES if q["people_number"] <= 2 else ("private room", "entire room")
            assert value in allowed
        else:
            assert value in HOUSE_RULES
    assert all(c > 120 for c in kinds.values())  # uniform over the three kinds


def test_hard_draws_three_kinds_with_cuisine_the_rarest(any_db):
    draws = _draws(any_db, "hard", 900)
    kinds = Counter()
    for q in draws:
        present = {k: v for k, v in q["local_constraint"].items() if v is not None}
        assert len(present) == 3 and q["people_number"] >= 2
        kinds.update(present.keys())
        if "cuisine" in present:
            assert len(present["cuisine"]) == 4
        if "transportation" in present:
            assert present["transportation"] in TRANSPORT_VALUES
    # weights 0.3/0.1/0.3/0.3 without replacement: cuisine is in roughly 40% of queries, the others ~87%
    assert kinds["cuisine"] < 0.55 * len(draws)
    assert min(kinds["house rule"], kinds["room type"], kinds["transportation"]) > 0.75 * len(draws)


def test_same_seed_same_elements_and_keys_tell_duplicates(generated_db):
    a, b = _draws(generated_db, "hard", 20, seed=5), _draws(generated_db, "hard", 20, seed=5)
    assert a == b
    assert element_key(a[0]) == element_key(dict(a[0]))
    assert len({element_key(q) for q in a}) == len(a)


def test_level_ratio_allocation_and_balanced_lengths():
    assert level_counts(1000, "4:3:3") == {"easy": 400, "medium": 300, "hard": 300}
    assert sum(level_counts(7, "4:3:3").values()) == 7
    slots = slot_levels(90, "1:1:1", seed=0)
    assert Counter(d for _, d in slots) == {3: 30, 5: 30, 7: 30}
    with pytest.raises(ValueError, match="three parts"):
        level_counts(10, "4:3")


def test_reach_share_counts_cities_reached_by_road_or_flight(generated_db):
    from star.synthesis.elements import reach_bin, reach_share

    db = generated_db
    state = next(s for s, cs in db.state_cities.items() if len(cs) >= 4)
    org = next(c for c, s in db.city_states.items() if s != state)
    cities = db.state_cities[state]
    expected = sum(1 for c in cities if ((d := db.distances.get((org, c))) is not None and d.cost("taxi") is not None)
                   or db.flights_by_route.get((org, c))) / len(cities)
    assert reach_share(db, org, state) == expected
    assert [reach_bin(x) for x in (0.0, 0.19, 0.2, 0.79, 0.8, 1.0)] == [0, 0, 1, 3, 4, 4]


def test_multi_city_draws_follow_the_reach_share_weights(any_db):
    """With all the weight on one bin, every multi-city draw comes from it; with None, the original draws."""
    from star.synthesis.config import SamplingConfig
    from star.synthesis.elements import _state_draws, reach_bin, reach_share, sample_route

    pairs, _ = _state_draws(any_db, 4)
    filled = [b for b in range(5) if pairs[b]]
    for b in filled[:2]:
        cfg = SamplingConfig(reach_share_weights=tuple(1.0 if i == b else 0.0 for i in range(5)))
        rng = random.Random(b)
        for _ in range(40):
            org, state = sample_route(any_db, 5, rng, cfg)
            assert reach_bin(reach_share(any_db, org, state)) == b
            assert any_db.city_states[org] != state and len(any_db.state_cities[state]) >= 4
    original = SamplingConfig(reach_share_weights=None)
    assert sample_route(any_db, 7, random.Random(3), original) == sample_route(any_db, 7, random.Random(3), original)


def test_sampling_cities_restrict_where_trips_start_and_where_three_day_trips_go(generated_db):
    from star.synthesis.config import SamplingConfig
    from star.synthesis.elements import sample_route

    cities = ("Chicago", "Atlanta", "Dallas", "Denver")
    cfg = SamplingConfig(cities=cities)
    rng = random.Random(0)
    three = {sample_route(generated_db, 3, rng, cfg) for _ in range(200)}
    assert all(org in cities and dest in cities and org != dest for org, dest in three)
    assert len(three) == 12  # every ordered pair of the four (each in its own state) is drawn
    for days in (5, 7):
        org, state = sample_route(generated_db, days, rng, cfg)
        assert org in cities and generated_db.city_states[org] != state


def test_sampling_cities_outside_the_database_are_named(generated_db):
    from star.synthesis.config import SamplingConfig
    from star.synthesis.elements import sample_route

    with pytest.raises(ValueError, match="Atlantis"):
        sample_route(generated_db, 3, random.Random(0), SamplingConfig(cities=("Chicago", "Atlantis")))
