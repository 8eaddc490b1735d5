"""The generated world: deterministic, official schema and formats, rich enough for every query kind."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from star.sandbox import world_data as wd
from star.sandbox.database import load_database, load_directory
from star.sandbox.rows import CUISINES, FILES, HOUSE_RULES, ROOM_TYPES
from star.sandbox.generated import MARCH_2022, format_duration, format_km, haversine_km, parse_duration_minutes

TABLES = ("city_states", "city_set", "state_set", "flights", "restaurants", "attractions", "accommodations",
          "distance_rows")
SEEDS = (0, 1, 7)
ROOM_TYPE_VALUES = {"shared room": lambda t: t == "Shared room", "not shared room": lambda t: t != "Shared room",
                    "private room": lambda t: t == "Private room", "entire room": lambda t: t == "Entire home/apt"}
CITY = {c.name: c for st in wd.STATES for c in st.cities}
TZ = {c.name: st.utc_offset if c.utc_offset is None else c.utc_offset for st in wd.STATES for c in st.cities}
ROOT = Path(__file__).resolve().parents[2]
CLOCK = re.compile(r"([01]\d|2[0-3]):[0-5]\d")


@pytest.fixture(scope="module", params=SEEDS)
def world(request):
    return load_database(f"generated:{request.param}")  # cached per spec, shared with other tests


def tables(db) -> tuple:
    return tuple(getattr(db, t) for t in TABLES)


# -- determinism and round trip ------------------------------------------------------------

def test_same_seed_gives_identical_tables(generated_db):
    again = load_database("generated:0", cache=False)
    assert again is not generated_db and tables(again) == tables(generated_db)
    assert again.source == "generated:0"


def _digest(db) -> str:
    return hashlib.sha256(repr(tables(db)).encode()).hexdigest()


def test_same_seed_gives_identical_tables_in_another_process(generated_db):
    """Nothing may depend on set or dict-hash order, which changes with PYTHONHASHSEED."""
    code = ("import hashlib; from star.sandbox.generated import generate_world as g; db = g(0); "
            f"print(hashlib.sha256(repr(tuple(getattr(db, t) for t in {TABLES!r})).encode()).hexdigest())")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == _digest(generated_db)


def test_different_seeds_give_different_tables(generated_db):
    other = load_database("generated:1")
    for name in ("flights", "restaurants", "attractions", "accommodations", "distance_rows", "city_set"):
        assert getattr(other, name) != getattr(generated_db, name), name


def test_save_then_load_round_trips_to_an_equal_database(generated_db, tmp_path):
    loaded = load_directory(generated_db.save(tmp_path / "db"))
    for name in TABLES:
        assert getattr(loaded, name) == getattr(generated_db, name), name
    assert loaded.distances == generated_db.distances
    assert loaded.summary() == generated_db.summary()


def test_saved_world_has_the_real_files_columns_and_pandas_dtypes(generated_db, real_db, tmp_path):
    """The official loaders read our files exactly as they read theirs (same headers, same dtypes)."""
    import pandas as pd

    ours = generated_db.save(tmp_path / "db")
    for name in ("flights", "restaurants", "attractions", "accommodations", "distances"):
        mine, theirs = pd.read_csv(ours / FILES[name]), pd.read_csv(Path(real_db.source) / FILES[name])
        assert list(mine.columns) == list(theirs.columns), name
        assert dict(mine.dtypes.astype(str)) == dict(theirs.dtypes.astype(str)), name
    for name in ("city_set", "city_states", "state_set"):  # citySet_with_states has no trailing newline
        ends = [(root / FILES[name]).read_text().endswith("\n") for root in (ours, Path(real_db.source))]
        assert ends[0] == ends[1], name


# -- cities and states ---------------------------------------------------------------------

def test_city_files_agree_and_state_set_ends_with_none(world):
    assert world.city_set == list(world.city_states)
    assert world.state_set[-1] == "None"
    assert sorted(world.state_set[:-1]) == sorted(set(world.city_states.values()))
    for city in world.city_set:
        assert city == city.strip() and not re.search(r"[,;()\t\n]|\bfrom\b| to ", city), city


def test_states_have_one_to_six_cities_with_big_and_single_city_states(world):
    sizes = {s: len(cs) for s, cs in world.state_cities.items()}
    assert 12 <= len(sizes) <= 16 and 40 <= len(world.city_states) <= 60
    assert all(1 <= n <= 6 for n in sizes.values())
    assert sum(n > 3 for n in sizes.values()) >= 4  # 5/7-day queries need states with more than 3 cities
    assert sum(n == 1 for n in sizes.values()) >= 2


# -- flights ---------------------------------------------------------------------------------

def test_flights_run_every_day_of_march_2022(world):
    per_day = defaultdict(int)
    for f in world.flights:
        per_day[f.date] += 1
    assert sorted(per_day) == list(MARCH_2022)
    assert min(per_day.values()) >= 200


def test_flight_rows_have_official_formats(world):
    numbers = [f.number for f in world.flights]
    assert len(set(numbers)) == len(numbers)
    for f in world.flights:
        assert re.fullmatch(r"F\d{7}", f.number)
        assert CLOCK.fullmatch(f.dep_time) and CLOCK.fullmatch(f.arr_time)
        m = re.fullmatch(r"(\d+) hours (\d+) minutes", f.elapsed)
        assert m and int(m.group(2)) < 60
        assert isinstance(f.price, int) and 14 <= f.price <= 2000
        assert isinstance(f.distance, float) and f.origin != f.dest


def test_flight_times_and_distances_follow_geography(world):
    for f in world.flights[::7]:
        a, b = CITY[f.origin], CITY[f.dest]
        assert abs(f.distance - haversine_km(a.lat, a.lon, b.lat, b.lon) / 1.609344) <= 1.0
        h, m = (int(x) for x in re.findall(r"\d+", f.elapsed))
        minutes = h * 60 + m
        assert 0.6 * f.distance / 8 < minutes < 60 + f.distance / 6  # jet speed plus ground time
        dep, arr = (int(t[:2]) * 60 + int(t[3:]) for t in (f.dep_time, f.arr_time))
        # Times are local: arrival = departure + elapsed + the time-zone shift.
        assert (dep + minutes + 60 * (TZ[f.dest] - TZ[f.origin])) % 1440 == arr


def test_routes_have_several_flights_with_varied_prices_and_times(world):
    route = max(world.flights_by_route, key=lambda r: len(world.flights_by_route[r]))
    rows = world.flights_by_route[route]
    assert len({f.date for f in rows}) == 31 and len(rows) >= 62
    assert len({f.price for f in rows}) > 20 and len({f.dep_time for f in rows}) > 20
    assert len(world.flights_by_route) >= 300


# -- distance matrix -------------------------------------------------------------------------

def test_distance_texts_use_google_formats():
    assert format_duration(45) == "45 mins" and format_duration(60) == "1 hour 0 mins"
    assert format_duration(655) == "10 hours 55 mins" and format_duration(61) == "1 hour 1 min"
    assert format_duration(1620) == "1 day 3 hours" and format_duration(3000) == "2 days 2 hours"
    assert parse_duration_minutes("10 hours 55 mins") == 655 and parse_duration_minutes("1 day 3 hours") == 1620
    assert format_km(98.64) == "98.6 km" and format_km(1144.4) == "1,144 km" and format_km(901) == "901 km"


def test_distances_are_consistent_with_coordinates(world):
    over_a_day = 0
    for d in world.distance_rows:
        if d.distance is None:
            assert d.duration is None
            continue
        assert re.fullmatch(r"\d{1,2}\.\d km|\d{1,3}(,\d{3})* km", d.distance)
        assert re.fullmatch(r"(\d+ days? \d+ hours?)|(\d+ hours? \d+ mins?)|(\d+ mins?)", d.duration)
        a, b = CITY[d.origin], CITY[d.dest]
        ratio = d.km / haversine_km(a.lat, a.lon, b.lat, b.lon)
        assert 1.1 <= ratio <= 1.5, (d, ratio)  # roads wind a little, never shortcut the great circle
        hours = parse_duration_minutes(d.duration) / 60
        assert 70 <= d.km / hours <= 125, d  # plausible average driving speed
        assert ("day" in d.duration) == (hours >= 24)
        over_a_day += "day" in d.duration
    assert over_a_day > 0  # long pairs exist that the official tool calls invalid
    assert len(world.distance_rows) > len(world.distances)  # a few duplicate pairs: the first row wins


def test_transport_options_cover_every_combination(world):
    """Pairs with flight and road, flight only (islands), road only, and no route at all exist."""
    kinds = defaultdict(set)
    for a in world.city_set:
        for b in world.city_set:
            if world.city_states[a] == world.city_states[b]:
                continue
            fly = (a, b) in world.flights_by_route and (b, a) in world.flights_by_route
            drive = all(world.distances.get(p) and world.distances[p].cost("self-driving") is not None
                        for p in ((a, b), (b, a)))
            kinds[(fly, drive)].add((a, b))
    assert all(kinds[k] for k in ((True, True), (True, False), (False, True), (False, False))), \
        {k: len(v) for k, v in kinds.items()}


def test_a_states_cities_are_sparsely_connected_like_the_shipped_database(world):
    """Few within-state flights (real: 4.9% of pairs) and some pairs with no road, so a multi-city route
    can fail; yet most mainland states with several cities keep a connected pair to visit."""
    flown = unconnected = pairs = 0
    visitable: list[bool] = []
    for state, cities in world.state_cities.items():
        # Islands have road rows without a distance; they are reached by air only.
        mainland = [c for c in cities if any(world.distances.get((c, o)) and world.distances[(c, o)].distance
                                             for o in world.city_set)]
        connected_pairs = 0
        for a in mainland:
            for b in mainland:
                if a == b:
                    continue
                pairs += 1
                fly = (a, b) in world.flights_by_route
                d = world.distances.get((a, b))
                road = d is not None and d.cost("taxi") is not None
                flown += fly
                unconnected += not (fly or road)
                connected_pairs += fly or road
        if len(mainland) > 1:
            visitable.append(connected_pairs > 0)
    assert pairs and flown / pairs <= 0.15, flown / pairs
    assert unconnected > 0
    assert sum(visitable) >= 0.75 * len(visitable), visitable


# -- restaurants, attractions, accommodations ---------------------------------------------------

def test_every_city_has_restaurants_attractions_and_stays(world):
    for city in world.city_set:
        assert len(world.restaurants_by_city.get(city, [])) >= 12
        assert len(world.attractions_by_city.get(city, [])) >= 3
        assert len(world.accommodations_by_city.get(city, [])) >= 8


def test_restaurant_values(world):
    all_cuisines = set(CUISINES) | set(wd.OTHER_CUISINES)
    seen = set()
    for r in world.restaurants:
        tags = r.cuisines.split(", ")
        assert set(tags) <= all_cuisines and len(tags) == len(set(tags)) >= 2
        seen |= set(tags)
        assert isinstance(r.avg_cost, int) and 10 <= r.avg_cost <= 250
        assert 0.0 <= r.rating <= 5.0
    assert seen == all_cuisines


def test_accommodation_values(world):
    rule_re = "|".join(re.escape(r) for r in HOUSE_RULES)
    for a in world.accommodations:
        assert a.room_type in ROOM_TYPES
        assert re.fullmatch(rf"No ({rule_re})( & No ({rule_re}))*", a.house_rules)
        rules = a.house_rules.split(" & ")
        assert len(rules) == len(set(rules))
        assert 1 <= a.minimum_nights <= 30 and 1 <= a.maximum_occupancy <= 10
        assert a.price > 0 and 1 <= a.review_rate <= 5
    nights = [a.minimum_nights for a in world.accommodations]
    assert sum(n <= 3 for n in nights) / len(nights) > 0.6 and max(nights) == 30
    assert {a.room_type for a in world.accommodations} == set(ROOM_TYPES)
    assert {a.maximum_occupancy for a in world.accommodations} >= {1, 2, 10}


def test_attractions_sit_near_their_city(world):
    for a in world.attractions:
        c = CITY[a.city]
        assert haversine_km(a.latitude, a.longitude, c.lat, c.lon) < 25
        assert f", {a.city}, " in a.address and a.website.startswith("https://")
        assert re.fullmatch(r"\(\d{3}\) \d{3}-\d{4}", a.phone)


@pytest.mark.parametrize("table", ["restaurants_by_city", "attractions_by_city", "accommodations_by_city"])
def test_names_are_clean_and_no_name_contains_another_in_its_city(world, table):
    for city, rows in getattr(world, table).items():
        names = [r.name for r in rows]
        assert len(names) == len(set(names))
        for n in names:
            assert n == n.strip() and "\n" not in n and ";" not in n
        # The official evaluator finds a row by substring: each name must find only itself.
        for n in names:
            assert [m for m in names if n.lower() in m.lower()] == [n], (city, n)


# -- coverage: every constraint value has cities that satisfy it and cities that do not -----------

def _satisfying_cities(world, ok) -> set[str]:
    """Cities with a listing that passes `ok` and fits a two-night stay."""
    return {a.city for a in world.accommodations if a.minimum_nights <= 2 and ok(a)}


def _assert_split(world, cities: set[str], what: str) -> None:
    assert cities and cities != set(world.city_set), f"{what}: satisfied in {len(cities)} cities"


@pytest.mark.parametrize("value", list(ROOM_TYPE_VALUES))
def test_each_room_type_value_is_satisfiable_somewhere_but_not_everywhere(world, value):
    _assert_split(world, _satisfying_cities(world, lambda a: ROOM_TYPE_VALUES[value](a.room_type)), value)


@pytest.mark.parametrize("rule", HOUSE_RULES)
def test_each_house_rule_is_satisfiable_somewhere_but_not_everywhere(world, rule):
    _assert_split(world, _satisfying_cities(world, lambda a: f"No {rule}" not in a.house_rules), rule)


@pytest.mark.parametrize("cuisine", CUISINES)
def test_each_cuisine_is_served_somewhere_but_not_everywhere(world, cuisine):
    _assert_split(world, {r.city for r in world.restaurants if cuisine in r.cuisines}, cuisine)


def test_state_grain_has_feasible_and_infeasible_big_states(world):
    big = [s for s, cs in world.state_cities.items() if len(cs) > 3]
    shared = _satisfying_cities(world, lambda a: a.room_type == "Shared room")
    served = defaultdict(set)
    for r in world.restaurants:
        for c in r.cuisines.split(", "):
            served[r.city].add(c)
    # Some big state offers short-stay shared rooms in every city; some lacks a cuisine everywhere.
    assert any(set(world.state_cities[s]) <= shared for s in big)
    assert any(len(set(world.state_cities[s]) & shared) < 2 for s in big)
    assert any(all(c not in served[city] for city in world.state_cities[s]) for s in big for c in CUISINES)


# -- a tiny 3-day feasibility oracle: every level and constraint value has both outcomes ---------

def _has_stay(world, city: str, lc: dict) -> bool:
    """A listing in `city` that fits a two-night stay and meets the room-type and house-rule asks."""
    room, rule = lc.get("room type"), lc.get("house rule")
    return any(a.minimum_nights <= 2 and (room is None or ROOM_TYPE_VALUES[room](a.room_type))
               and (rule is None or f"No {rule}" not in a.house_rules)
               for a in world.accommodations_by_city.get(city, []))


def _feasible_3day(world, org: str, dest: str, d1: str, d3: str, lc: dict) -> bool:
    """Budget aside, can an org→dest→org trip of 3 days meet `lc`? (reference §4 rules; exact both ways)"""
    transport = lc.get("transportation")

    def legs(a, b, day):
        d = world.distances.get((a, b))
        road = d is not None and d.cost("taxi") is not None
        fly = transport != "no flight" and bool(world.flights_by_route_date.get((a, b, day)))
        return {"flight": fly, "taxi": road, "drive": road and transport != "no self-driving"}

    out, back = legs(org, dest, d1), legs(dest, org, d3)
    # Self-driving cannot be mixed with flights or taxis (non-conflicting transportation).
    if not ((out["flight"] or out["taxi"]) and (back["flight"] or back["taxi"]) or (out["drive"] and back["drive"])):
        return False
    if not _has_stay(world, dest, lc):
        return False
    served = {c for r in world.restaurants_by_city.get(dest, []) for c in r.cuisines.split(", ")}
    return set(lc.get("cuisine") or []) <= served and bool(world.attractions_by_city.get(dest))


CONSTRAINT_CASES = ([{}] + [{"room type": v} for v in ROOM_TYPE_VALUES] + [{"house rule": r} for r in HOUSE_RULES]
                    + [{"cuisine": [c]} for c in CUISINES]
                    + [{"transportation": t} for t in ("no flight", "no self-driving")])


@pytest.mark.parametrize("lc", CONSTRAINT_CASES, ids=lambda lc: str(lc) or "easy")
def test_every_constraint_value_has_feasible_and_infeasible_3_day_queries(generated_db, lc):
    world, outcomes = generated_db, set()
    for i, org in enumerate(world.city_set):
        for dest in world.city_set[i % 5::5]:
            if world.city_states[org] != world.city_states[dest]:
                outcomes.add(_feasible_3day(world, org, dest, "2022-03-08", "2022-03-10", lc))
    assert outcomes == {True, False}


def test_hard_queries_with_three_constraints_have_both_outcomes(generated_db):
    lc = {"house rule": "pets", "room type": "entire room", "transportation": "no flight"}
    pairs = [(o, d) for o in generated_db.city_set for d in generated_db.city_set
             if generated_db.city_states[o] != generated_db.city_states[d]]
    outcomes = {_feasible_3day(generated_db, o, d, "2022-03-20", "2022-03-22", lc) for o, d in pairs}
    assert outcomes == {True, False}


def _feasible_state_trip(world, org: str, route: tuple[str, ...], dates: list[str], lc: dict) -> bool:
    """A sufficient check for a 5/7-day trip: leave on day 1, move every second day, return on the last."""
    stops = [org, *route, org]
    travel = [0, *range(2, 2 * len(route), 2), len(dates) - 1]
    legs = [(stops[i], stops[i + 1], dates[travel[i]]) for i in range(len(stops) - 1)]
    transport = lc.get("transportation")

    def road(a, b):
        d = world.distances.get((a, b))
        return d is not None and d.cost("taxi") is not None

    by_air_or_taxi = all((transport != "no flight" and world.flights_by_route_date.get(leg)) or road(*leg[:2])
                         for leg in legs)
    by_car = transport != "no self-driving" and all(road(a, b) for a, b, _ in legs)
    return (by_air_or_taxi or by_car) and all(_has_stay(world, city, lc) for city in route)


@pytest.mark.parametrize("days", [5, 7])
@pytest.mark.parametrize("lc", [{}, {"transportation": "no flight"}], ids=["easy", "no-flight"])
def test_state_trips_have_feasible_and_provably_infeasible_instances(generated_db, days, lc):
    world = generated_db
    dates = list(MARCH_2022[9:9 + days])
    big = [s for s, cs in world.state_cities.items() if len(cs) > 3]
    feasible = infeasible = False
    for org in world.city_set[::3]:
        for state in big:
            if world.city_states[org] == state:
                continue
            cities = world.state_cities[state]
            k = {5: 2, 7: 3}[days]
            routes = [tuple(cities[i:i + k]) for i in range(len(cities) - k + 1)]
            feasible |= any(_feasible_state_trip(world, org, r, dates, lc) for r in routes)
            # Sound refutation: no city of the state can be reached from org at all, on any date.
            reachable = any((lc.get("transportation") != "no flight" and (org, c) in world.flights_by_route)
                            or (world.distances.get((org, c)) and world.distances[(org, c)].cost("taxi") is not None)
                            for c in cities)
            infeasible |= not reachable
    assert feasible and infeasible
