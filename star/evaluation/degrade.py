"""Hand-made degradations of a certified plan, for holding a reward to the order of plan quality.

Each takes (query, certified plan, database) and returns a new plan; `QUALITY_ORDER` is the ranking a
reward that claims to order plans by quality must reproduce on every query
(tests/evaluation/test_reward_ordering.py, docs/evaluation-modes.md). The plans are what a weak policy
writes: one mistake, a trip that never comes home, a one-day stub, a skeleton of cities and legs, invented
names, a form of dashes, and a full plan of real places in the wrong city (at home, or a city the query does
not name: what a model that does not read the query's cities writes).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from star.evaluation import commonsense as C
from star.evaluation.lookup import Lookup
from star.evaluation.slots import visited_cities
from star.sandbox.rows import Database

ITEM_KEYS = ("breakfast", "attraction", "lunch", "dinner", "accommodation")
Degrade = Callable[[dict, list[dict], Database], list[dict]]


def _invented(kind: str, day: dict, n: int) -> str:
    _, b, city = C._strict_day_cities(day)
    return f"Invented {kind} {n}, {b or city or 'Nowhere'}"


def one_wrong_item(query: dict, plan: list[dict], db: Database) -> list[dict]:
    """The first named meal becomes a restaurant that is not in the database (its city kept)."""
    out = copy.deepcopy(plan)
    for day in out:
        for meal in C.MEALS:
            if C._s(day.get(meal)) is not None:
                city = day[meal].rsplit(",", 1)[-1].strip()
                day[meal] = f"Invented Bistro, {city}"
                return out
    raise ValueError("the plan names no meal to get wrong")


def last_day_dropped(query: dict, plan: list[dict], db: Database) -> list[dict]:
    return copy.deepcopy(plan[:-1])


def never_home(query: dict, plan: list[dict], db: Database) -> list[dict]:
    """Every day kept, but the last one stays at the destination: no return leg."""
    out = copy.deepcopy(plan)
    before = out[-2] if len(out) > 1 else out[-1]
    a, b, city = C._strict_day_cities(before)
    out[-1] = {**out[-1], "current_city": b or city or "-", "transportation": "-"}
    return out


def first_day_only(query: dict, plan: list[dict], db: Database) -> list[dict]:
    return copy.deepcopy(plan[:1])


def skeleton(query: dict, plan: list[dict], db: Database) -> list[dict]:
    """Every day, only its cities and transportation: no search needed but the flights."""
    return [{**day, **dict.fromkeys(ITEM_KEYS, "-")} for day in copy.deepcopy(plan)]


def invented_names(query: dict, plan: list[dict], db: Database) -> list[dict]:
    """Every meal, attraction and stay the plan names replaced by a name that is not in the database."""
    out = copy.deepcopy(plan)
    n = 0
    for day in out:
        for key in ITEM_KEYS:
            if C._s(day.get(key)) is not None:
                n += 1
                day[key] = _invented(key, day, n)
    return out


def dashes(query: dict, plan: list[dict], db: Database) -> list[dict]:
    """Every field "-": the form, with nothing in it."""
    return [{k: (v if k == "days" else "-") for k, v in day.items()} for day in copy.deepcopy(plan)]


def _trip_in(city: str, plan: list[dict], db: Database) -> list[dict]:
    """Every day of the plan spent in `city` with its real restaurants, sights and one stay: no travel."""
    meals = iter(sorted({r.name for r in db.restaurants_by_city.get(city, [])}))
    sights = iter(sorted({a.name for a in db.attractions_by_city.get(city, [])}))
    hotels = sorted((h for h in db.accommodations_by_city.get(city, []) if h.minimum_nights <= len(plan) - 1),
                    key=lambda h: h.name)
    out = []
    for i, day in enumerate(copy.deepcopy(plan)):
        item = {k: f"{v}, {city}" if v else "-" for k, v in (
            ("breakfast", next(meals, None)), ("attraction", next(sights, None)), ("lunch", next(meals, None)),
            ("dinner", next(meals, None)))}
        stay = f"{hotels[0].name}, {city}" if hotels and i < len(plan) - 1 else "-"
        out.append({**day, "current_city": city, "transportation": "-", **item, "accommodation": stay})
    return out


def stays_home(query: dict, plan: list[dict], db: Database) -> list[dict]:
    """Every day at the origin, with its real restaurants, sights and a stay: a trip that never leaves."""
    return _trip_in(str(query["org"]), plan, db)


def another_city(query: dict, plan: list[dict], db: Database) -> list[dict]:
    """Every day in a city the query does not name (the first, in the database's order, with places to go)."""
    skip = visited_cities(query, Lookup.for_db(db)) | {str(query["org"]).casefold()}
    city = next(c for c in db.city_states if c.casefold() not in skip and db.restaurants_by_city.get(c)
                and db.attractions_by_city.get(c) and db.accommodations_by_city.get(c))
    return _trip_in(city, plan, db)


DEGRADATIONS: dict[str, Degrade] = {
    "certified": lambda q, p, db: copy.deepcopy(p),
    "one wrong item": one_wrong_item,
    "last day dropped": last_day_dropped,
    "never comes home": never_home,
    "first day only": first_day_only,
    "skeleton (cities + transport)": skeleton,
    "invented names": invented_names,
    "every field -": dashes,
    "stays home": stays_home,
    "another city": another_city,
}
# (better, worse, strictly?) pairs: certified > one wrong > last day dropped > {first day, skeleton, invented}
# > {stays home, another city} and >= dashes >= 0 (the last as a bound, checked separately); a trip that never
# comes home costs more than one wrong restaurant too. A whole trip to the wrong place, however real its
# places, is worth less than a stub or a skeleton of the trip asked for.
_MIDDLE = ("first day only", "skeleton (cities + transport)", "invented names")
_ELSEWHERE = ("stays home", "another city")
QUALITY_ORDER: tuple[tuple[str, str, bool], ...] = (
    ("certified", "one wrong item", True),
    ("one wrong item", "last day dropped", True),
    ("one wrong item", "never comes home", True),
    *(("last day dropped", m, True) for m in _MIDDLE),
    *((m, "every field -", False) for m in _MIDDLE),
    *((m, w, True) for m in _MIDDLE for w in _ELSEWHERE),
)


def degraded_plans(query: dict, db: Database) -> dict[str, list[dict]]:
    """Every degradation of the query's certified `reference_plan` (`db`: the places of the wrong-city trips)."""
    plan = query.get("reference_plan")
    if not plan:
        raise ValueError(f"query {query.get('id')!r} has no reference_plan to degrade")
    return {name: fn(query, plan, db) for name, fn in DEGRADATIONS.items()}


def order_violations(values: dict[str, float]) -> list[str]:
    """The pairs of QUALITY_ORDER that `values` (degradation -> reward) break."""
    bad = [f"{a} ({values[a]:.3f}) {'>' if strict else '>='} {b} ({values[b]:.3f})"
           for a, b, strict in QUALITY_ORDER
           if not (values[a] > values[b] if strict else values[a] >= values[b])]
    return bad + [f"{k} ({v:.3f}) >= 0" for k, v in values.items() if v < 0]
