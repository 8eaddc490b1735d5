"""Element sampling per difficulty level, following the original generator (reference §5).

An element set is the official query fields without text and budget: org, dest, days,
visiting_city_number, date, people_number, local_constraint, level. Feasibility is not decided
here; the solver certifies (or refutes) each draw and the pipeline resamples.
"""

from __future__ import annotations

import calendar
import random
from collections import Counter
from datetime import date, timedelta

from star.sandbox.rows import CUISINES, HOUSE_RULES, Database
from star.synthesis.config import LEVELS, SamplingConfig

ROOM_TYPE_VALUES = ("shared room", "not shared room", "private room", "entire room")
# Groups larger than two only ask for a private or entire room (the original generator's rule).
GROUP_ROOM_TYPE_VALUES = ("private room", "entire room")
TRANSPORT_VALUES = ("no flight", "no self-driving")
CONSTRAINT_TYPES = ("house rule", "cuisine", "room type", "transportation")
CITIES_FOR_DAYS = {3: 1, 5: 2, 7: 3}


def empty_constraints() -> dict:
    return {"house rule": None, "cuisine": None, "room type": None, "transportation": None}


def sample_dates(days: int, rng: random.Random, month: str = "2022-03") -> list[str]:
    """`days` consecutive dates inside `month`, the start uniform over the starts that fit."""
    year, mon = (int(x) for x in month.split("-"))
    last = calendar.monthrange(year, mon)[1]
    if days > last:
        raise ValueError(f"a {days}-day trip does not fit in {month}")
    start = date(year, mon, rng.randint(1, last - days + 1))
    return [(start + timedelta(days=i)).isoformat() for i in range(days)]


def sample_people(level: str, rng: random.Random) -> int:
    if level == "easy":
        return 1
    return 2 if rng.random() < 0.5 else rng.randint(3, 8)


def _constraint_value(kind: str, people: int, level: str, rng: random.Random, cfg: SamplingConfig):
    if kind == "house rule":
        return rng.choice(HOUSE_RULES)
    if kind == "cuisine":
        return rng.sample(list(CUISINES), cfg.hard_cuisines if level == "hard" else cfg.medium_cuisines)
    if kind == "room type":
        return rng.choice(ROOM_TYPE_VALUES if people <= 2 else GROUP_ROOM_TYPE_VALUES)
    if kind == "transportation":
        return rng.choice(TRANSPORT_VALUES)
    raise ValueError(f"unknown constraint type {kind!r}")


def _weighted_without_replacement(items, weights, k: int, rng: random.Random) -> list:
    """numpy.choice(replace=False, p=...) semantics: draw, remove, renormalise."""
    items, weights, out = list(items), list(weights), []
    for _ in range(k):
        pick = rng.choices(range(len(items)), weights=weights)[0]
        out.append(items.pop(pick))
        weights.pop(pick)
    return out


def sample_constraints(level: str, people: int, rng: random.Random, cfg: SamplingConfig | None = None) -> dict:
    cfg = cfg or SamplingConfig()
    lc = empty_constraints()
    if level == "easy":
        return lc
    if level == "medium":
        kinds = [rng.choice(("house rule", "cuisine", "room type"))]
    elif level == "hard":
        kinds = _weighted_without_replacement(CONSTRAINT_TYPES, cfg.hard_type_probs, cfg.hard_n_types, rng)
    else:
        raise ValueError(f"unknown level {level!r}; expected one of {LEVELS}")
    for kind in kinds:
        lc[kind] = _constraint_value(kind, people, level, rng, cfg)
    return lc


REACH_BINS = 5  # reach-share bins of width 0.2; the last one includes 1.0


def reach_share(db: Database, org: str, state: str) -> float:
    """Share of `state`'s cities that `org` reaches: a drive of under a day (a valid distance-matrix entry)
    or a flight on any date. A multi-city route's first and last legs join a city of the state to `org`."""
    cities = db.state_cities.get(state) or []
    if not cities:
        return 0.0
    reached = 0
    for c in cities:
        d = db.distances.get((org, c))
        if (d is not None and d.cost("taxi") is not None) or db.flights_by_route.get((org, c)):
            reached += 1
    return reached / len(cities)


def reach_bin(share: float) -> int:
    return min(int(share * REACH_BINS), REACH_BINS - 1)


_STATE_DRAWS: dict[tuple[int, int], tuple[Database, list[list[tuple[str, str]]], list[list[float]]]] = {}


def _state_draws(db: Database, min_state_cities: int) -> tuple[list[list[tuple[str, str]]], list[list[float]]]:
    """The original generator's multi-city (org, state) distribution, split by reach-share bin:
    per bin the pairs and their probabilities (org a uniform line; state that of a uniform line of
    another state with enough cities). Computed once per database."""
    key = (id(db), min_state_cities)
    hit = _STATE_DRAWS.get(key)
    if hit is not None and hit[0] is db:
        return hit[1], hit[2]
    lines = list(db.city_states.items())
    big = {s for s, cs in db.state_cities.items() if len(cs) >= min_state_cities}
    pairs: list[list[tuple[str, str]]] = [[] for _ in range(REACH_BINS)]
    probs: list[list[float]] = [[] for _ in range(REACH_BINS)]
    for org, org_state in lines:
        candidates = [s for c, s in lines if c != org and s != org_state and s in big]
        for state, count in sorted(Counter(candidates).items()):
            b = reach_bin(reach_share(db, org, state))
            pairs[b].append((org, state))
            probs[b].append(count / len(candidates) / len(lines))
    _STATE_DRAWS[key] = (db, pairs, probs)
    return pairs, probs


def _allowed_cities(db: Database, cfg: SamplingConfig) -> set[str] | None:
    """`cfg.cities` checked against the database (None: no restriction)."""
    if cfg.cities is None:
        return None
    unknown = [c for c in cfg.cities if c not in db.city_states]
    if unknown:
        raise ValueError(f"synthesis.sampling.cities: {unknown} are not cities of database {db.source}")
    return set(cfg.cities)


def sample_route(db: Database, days: int, rng: random.Random, cfg: SamplingConfig | None = None) -> tuple[str, str]:
    """(org, dest): dest a city of another state for 3 days, else a state with enough cities.

    Lines of citySet_with_states are drawn uniformly, so states are weighted by their size, as in
    the original generator. With `reach_share_weights`, a multi-city draw first picks a reach-share bin
    by those weights (among the bins the generator can reach), then an (org, state) pair of that bin
    with the generator's probabilities: the generator's distribution reweighted so that origins reach
    the state's cities as often as in the real queries.
    """
    cfg = cfg or SamplingConfig()
    allowed = _allowed_cities(db, cfg)
    if days != 3 and cfg.reach_share_weights is not None:
        pairs, probs = _state_draws(db, cfg.min_state_cities)
        if allowed is not None:
            kept = [[(p, w) for p, w in zip(pairs[b], probs[b]) if p[0] in allowed] for b in range(REACH_BINS)]
            pairs, probs = [[p for p, _ in k] for k in kept], [[w for _, w in k] for k in kept]
        weights = [w if pairs[b] else 0.0 for b, w in enumerate(cfg.reach_share_weights)]
        if sum(weights) > 0:
            b = rng.choices(range(REACH_BINS), weights=weights)[0]
            return rng.choices(pairs[b], weights=probs[b])[0]
    every = list(db.city_states.items())
    lines = [(c, s) for c, s in every if allowed is None or c in allowed]
    big_states = {s for s, cs in db.state_cities.items() if len(cs) >= cfg.min_state_cities}
    for _ in range(10_000):
        org, org_state = rng.choice(lines)
        if days == 3:
            candidates = [c for c, s in lines if s != org_state]
            if candidates:
                return org, rng.choice(candidates)
        else:  # a multi-city trip's state is any big one: `cities` restricts only where it starts
            candidates = [s for c, s in every if c != org and s != org_state and s in big_states]
            if candidates:
                return org, rng.choice(candidates)
    raise ValueError(f"database {db.source}: no origin/destination pair fits a {days}-day trip"
                     + (f" among synthesis.sampling.cities {list(cfg.cities)}" if cfg.cities else ""))


def sample_elements(db: Database, level: str, rng: random.Random, cfg: SamplingConfig | None = None,
                    days: int | None = None) -> dict:
    """One element set of `level` (official query fields, no text/budget); `days` fixed or drawn."""
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {LEVELS}")
    cfg = cfg or SamplingConfig()
    if days is None:
        days = rng.choice(cfg.day_choices)
    if days not in CITIES_FOR_DAYS:
        raise ValueError(f"unsupported trip length {days}; expected one of {sorted(CITIES_FOR_DAYS)}")
    org, dest = sample_route(db, days, rng, cfg)
    people = sample_people(level, rng)
    return {
        "org": org,
        "dest": dest,
        "days": days,
        "visiting_city_number": CITIES_FOR_DAYS[days],
        "date": sample_dates(days, rng, cfg.month),
        "people_number": people,
        "local_constraint": sample_constraints(level, people, rng, cfg),
        "level": level,
    }


def element_key(q: dict) -> tuple:
    """The identity of an element set: two queries with the same key ask the same thing."""
    lc = q.get("local_constraint") or {}
    cuisine = lc.get("cuisine")
    return (q["org"], q["dest"], int(q["days"]), tuple(q["date"]), int(q["people_number"]),
            lc.get("house rule"), tuple(sorted(cuisine)) if cuisine else None, lc.get("room type"),
            lc.get("transportation"))
