"""The slots a query requires of a plan, and which of them a plan fills with a valid item.

A query of D days visiting k cities needs k + 1 travel legs (out, between cities, home), so
F = D - (k + 1) full days. Its required slots: a current city every day, a transportation on each
of the k + 1 travel days, an accommodation every night (D - 1), an attraction and three meals every
full day. Travel days' meals and sights are optional: they are not counted, so an extra one cannot
stand in for a wrong or missing one on a full day.

The trip's route: day 1 leaves the origin for a city the query visits (its destination, or a city of
its destination state), day D comes home from one, and every day between is spent in one (a travel day
between two). A day whose route is not that (a day at home, a city the query never names) fills its
city slot with an invalid city, and its leg, meals, sight and stay are invalid too: a dinner in the wrong
city is no part of the trip asked for. Otherwise an item is valid when the strict evaluator would accept
it on its own: it exists in the database under its exact name and city, lies in the day's city, is not a
repeat of an earlier item, and (a stay) meets the hotel's minimum nights. Slot credit = valid slots /
required slots, in [0, 1]: one reading in both evaluator modes, since it is not a check of the official
script.

The strict evaluator uses `empty` to refuse vacuous passes: a check that passed only because the
plan left its slots out (no meals, no stays, no return leg) does not pass in strict mode.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from star.evaluation import commonsense as C
from star.evaluation import fields as F
from star.evaluation.lookup import Lookup

CATEGORIES = ("city", "transportation", "accommodation", "attraction", "meal")
# Which slots each strict commonsense check examines: the check passes vacuously when they are empty.
CHECK_SLOTS = {
    "is_reasonable_visiting_city": "city", "is_valid_information_in_current_city": "city",
    "is_valid_information_in_sandbox": "city", "is_valid_transportation": "transportation",
    "is_valid_accommodation": "accommodation", "is_valid_attractions": "attraction",
    "is_valid_restaurants": "meal",
}
VACUOUS = "vacuous pass refused: "


@dataclass
class Slots:
    """Per category: slots the query requires, slots the plan fills, and filled slots that are valid."""

    required: dict[str, int]
    filled: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))
    valid: dict[str, int] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0))

    def __post_init__(self) -> None:
        for box in (self.filled, self.valid):  # extra items (e.g. meals on travel days) never exceed the need
            for k in CATEGORIES:
                box[k] = min(box.get(k, 0), self.required[k])

    @property
    def n_required(self) -> int:
        return sum(self.required.values())

    @property
    def credit(self) -> float:
        return sum(self.valid.values()) / max(self.n_required, 1)

    def empty(self, category: str | None = None) -> int:
        """Required slots the plan leaves empty (in one category, or all)."""
        cats = CATEGORIES if category is None else (category,)
        return sum(self.required[k] - self.filled[k] for k in cats)


def required_slots(query: dict) -> dict[str, int]:
    days = int(query["days"])
    legs = min(int(query.get("visiting_city_number") or 1) + 1, days)
    full = max(days - legs, 0)
    return {"city": days, "transportation": legs, "accommodation": max(days - 1, 0),
            "attraction": full, "meal": 3 * full}


def visited_cities(query: dict, lk: Lookup) -> set[str]:
    """Casefolded cities the query visits: its destination city, or its destination state's cities; never
    the origin."""
    dest = str(query["dest"])
    if int(query["days"]) <= 3:
        allowed = {dest}
    else:
        allowed = {c for c, state in lk.db.city_states.items() if state == dest} or {dest}
    return {c.casefold() for c in allowed} - {str(query["org"]).casefold()}


def _route_ok(a: str | None, b: str | None, city: str | None, i: int, n: int, org: str, visit: set) -> bool:
    """Day i's current city is the query's route: out from the origin, home to it, a visited city between."""
    def visited(c: str | None) -> bool:
        return c is not None and c.casefold() in visit

    if a is None:  # a day without travel: in a visited city, and neither the first nor the last day
        return 0 < i < n - 1 and visited(city)
    start = C._same(a, org) if i == 0 else visited(a)
    end = C._same(b, org) if i == n - 1 else visited(b)
    return start and end


def _alone(day: dict, key: str, value: str) -> dict:
    """The day with only its city and one item: the strict per-day checks then judge that item alone."""
    return {"current_city": day.get("current_city"), key: value}


def _ok(q: dict, day: dict, i: int, lk: Lookup) -> bool:
    return C._strict_current_city(day, i) is None and C._strict_sandbox_day(q, day, i, lk) is None


def plan_slots(query: dict, plan, lk: Lookup) -> Slots:
    """Which required slots `plan` fills, and with how many valid items (strict reading, never raises)."""
    required = required_slots(query)
    if not isinstance(plan, list):
        return Slots(required=required)
    n = int(query["days"])
    days = [d if isinstance(d, dict) else {} for d in plan[:n]]
    canon = C._canonical_cities(lk)
    visit = visited_cities(query, lk)
    org = str(query["org"])
    filled = dict.fromkeys(CATEGORIES, 0)
    valid = dict.fromkeys(CATEGORIES, 0)
    seen_meals: set = set()
    seen_sights: set = set()
    kinds: list[set] = []  # the kinds of each valid leg's day
    on_route: list[bool] = []  # per day: its current city is the query's route (its items may then count)
    for i, day in enumerate(days):
        a, b, city = C._strict_day_cities(day)
        cities = [a, b] if a is not None else [city]
        known = cities != [None] and all(c is not None and c.casefold() in canon for c in cities)
        route = known and _route_ok(a, b, city, i, n, org, visit)
        on_route.append(route)
        if cities != [None]:
            filled["city"] += 1
            valid["city"] += route
        t = C._s(day.get("transportation"))
        if t is not None:
            filled["transportation"] += 1
            if route and _ok(query, _alone(day, "transportation", t), i, lk):
                valid["transportation"] += 1
                kinds.append({F.transport_kind(seg, strict=True) for seg in F.strict_segments(t)})
        full = a is None  # a travel day's meals and sights are optional: not counted, but a repeat of them is
        for meal in C.MEALS:
            v = C._s(day.get(meal))
            if v is None:
                continue
            key = C._strict_key(v)
            if full:
                filled["meal"] += 1
                valid["meal"] += route and key not in seen_meals and _ok(query, _alone(day, meal, v), i, lk)
            seen_meals.add(key)
        v = C._s(day.get("attraction"))
        if v is not None:
            keys = [C._strict_key(p) for p in F.strict_attraction_pieces(v)]
            if full:
                filled["attraction"] += 1
                valid["attraction"] += route and bool(keys) and not any(k in seen_sights for k in keys) \
                    and len(set(keys)) == len(keys) and _ok(query, _alone(day, "attraction", v), i, lk)
            seen_sights.update(keys)
    # Self-driving excludes flights and taxis: in a conflicting plan its days are the invalid ones.
    used = set().union(*kinds)
    if "Self-driving" in used and used & {"Flight", "Taxi"}:
        valid["transportation"] -= sum(1 for k in kinds if "Self-driving" in k)
    _stays(query, days, on_route, lk, filled, valid)
    return Slots(required=required, filled=filled, valid=valid)


def _stays(query: dict, days: list[dict], on_route: list[bool], lk: Lookup, filled: dict, valid: dict) -> None:
    """Nights 1..D-1: a run of one hotel counts its valid nights when the run meets the hotel's minimum."""
    runs: list[list] = []  # [key, first value, [night valid?, ...]]
    for i, day in enumerate(days[: max(int(query["days"]) - 1, 0)]):
        v = C._s(day.get("accommodation"))
        if v is None:
            runs.append([None, None, []])
            continue
        filled["accommodation"] += 1
        key, ok = C._strict_key(v), on_route[i] and _ok(query, _alone(day, "accommodation", v), i, lk)
        if runs and runs[-1][0] == key:
            runs[-1][2].append(ok)
        else:
            runs.append([key, v, [ok]])
    for key, v, nights in runs:
        nc = F.strict_name_city(v) if key is not None else None
        rows = lk.exact("accommodations", *nc) if nc else []
        if rows and len(nights) >= rows[0].minimum_nights:
            valid["accommodation"] += sum(nights)
