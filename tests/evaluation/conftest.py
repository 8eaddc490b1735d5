"""A known-good 3-day round trip built from whichever database a test runs on.

`trip(db)` returns (query, plan): org → dest by flight, one night-pair stay, distinct restaurants
and attractions that resolve to themselves under both the substring and the exact lookup, and a
budget 100 above the plan's cost. Tests then break one thing at a time.
"""

from __future__ import annotations

import copy
from datetime import date, timedelta

import pytest


def _self_resolving(rows):
    """Rows that the official substring lookup resolves to themselves (first match in city order)."""
    out = []
    for i, r in enumerate(rows):
        if "," in r.name or r.name != r.name.strip() or not r.name:
            continue
        if any(r.name in other.name for other in rows[:i]):
            continue
        out.append(r)
    return out


def _next_day(d: str, k: int) -> str:
    return (date.fromisoformat(d) + timedelta(days=k)).isoformat()


def _covers_every_case(db, rest, out) -> bool:
    """The trip lets every case in test_eval_checks run: the route flies on another date too, it can be
    driven both ways, and day 1's dinner serves a cuisine none of the trip's other meals serves."""
    other_date = any(f.date != out.date and db.flights_by_number[f.number] is f
                     for f in db.flights_by_route[(out.origin, out.dest)])
    others = set(rest[0].cuisines.split(", ")).union(*(set(r.cuisines.split(", ")) for r in rest[2:6]))
    drivable = all(db.distances.get(p) is not None and db.distances[p].cost("self-driving") is not None
                   for p in ((out.origin, out.dest), (out.dest, out.origin)))
    return other_date and drivable and any(c not in others for c in rest[1].cuisines.split(", "))


def build_trip(db):
    """A known-good 3-day round trip by air, preferring one on which every check case can be built."""
    for every_case in (True, False):
        found = _build_trip(db, every_case)
        if found is not None:
            return found
    raise RuntimeError(f"no feasible 3-day round trip found in {db.source}")


def _build_trip(db, every_case: bool):
    for (org, dest, day1), outs in sorted(db.flights_by_route_date.items()):
        if org not in db.city_states or dest not in db.city_states or org == dest:
            continue
        if db.city_states[org] == db.city_states[dest]:
            continue
        day3 = _next_day(day1, 2)
        backs = db.flights_by_route_date.get((dest, org, day3))
        if not backs or day3[:7] != day1[:7]:
            continue
        rest = _self_resolving(db.restaurants_by_city.get(dest, []))
        attr = _self_resolving(db.attractions_by_city.get(dest, []))
        stays = [a for a in _self_resolving(db.accommodations_by_city.get(dest, []))
                 if a.minimum_nights <= 2 and a.maximum_occupancy >= 2]
        org_rest = _self_resolving(db.restaurants_by_city.get(org, []))
        if len(rest) < 6 or len(attr) < 3 or not stays or not org_rest:
            continue
        # The first matching flight row of each number must be the one used (official cost rule).
        out = next((f for f in outs if db.flights_by_number[f.number] is f), None)
        back = next((f for f in backs if db.flights_by_number[f.number] is f), None)
        if out is None or back is None or (every_case and not _covers_every_case(db, rest, out)):
            continue
        h = stays[0]
        plan = [
            {"days": 1, "current_city": f"from {org} to {dest}",
             "transportation": f"Flight Number: {out.number}, from {org} to {dest}, Departure Time: {out.dep_time}, Arrival Time: {out.arr_time}",
             "breakfast": "-", "attraction": f"{attr[0].name}, {dest};", "lunch": f"{rest[0].name}, {dest}",
             "dinner": f"{rest[1].name}, {dest}", "accommodation": f"{h.name}, {dest}"},
            {"days": 2, "current_city": dest, "transportation": "-", "breakfast": f"{rest[2].name}, {dest}",
             "attraction": f"{attr[1].name}, {dest};{attr[2].name}, {dest};", "lunch": f"{rest[3].name}, {dest}",
             "dinner": f"{rest[4].name}, {dest}", "accommodation": f"{h.name}, {dest}"},
            {"days": 3, "current_city": f"from {dest} to {org}",
             "transportation": f"Flight Number: {back.number}, from {dest} to {org}, Departure Time: {back.dep_time}, Arrival Time: {back.arr_time}",
             "breakfast": f"{rest[5].name}, {dest}", "attraction": "-", "lunch": "-", "dinner": "-", "accommodation": "-"},
        ]
        people = 2
        cost = (out.price + back.price) * people + sum(r.avg_cost for r in rest[:6]) * people + 2 * h.price * (
            -(-people // h.maximum_occupancy))
        query = {"org": org, "dest": dest, "days": 3, "visiting_city_number": 1,
                 "date": [day1, _next_day(day1, 1), day3], "people_number": people,
                 "local_constraint": {"house rule": None, "cuisine": None, "room type": None, "transportation": None},
                 "budget": int(cost) + 100, "level": "easy", "query": f"A 3-day trip from {org} to {dest}.",
                 "_parts": {"rest": rest, "attr": attr, "stay": h, "out": out, "back": back, "org_rest": org_rest,
                            "cost": cost}}
        return query, plan
    return None


_CACHE: dict[int, tuple] = {}


@pytest.fixture
def trip():
    """Factory: trip(db) -> fresh deep copies of (query, plan) for that database."""

    def make(db):
        if id(db) not in _CACHE:
            _CACHE[id(db)] = build_trip(db)
        q, p = _CACHE[id(db)]
        parts = q["_parts"]
        q = copy.deepcopy({k: v for k, v in q.items() if k != "_parts"})
        q["_parts"] = parts
        return q, copy.deepcopy(p)

    return make
