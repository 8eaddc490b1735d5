"""Budgets: drawn from the official budget / cheapest-plan ratios (default), or estimated from sandbox
prices as the original generator did (reference §5; `BudgetConfig.method`).

Ratio method: the certified minimum cost times a ratio drawn from the official quantiles of the
query's level and length (3-day budgets are far tighter than 5/7-day ones in the official data), so the budget constraint binds as often as on the real queries (the formula's
budgets on the official database sit at a median 7.7 / 9.8 / 3.3 x the cheapest plan by level,
the official queries' at 4.0 / 4.3 / 2.1). Formula method: lowest / average / highest trip costs come from the price lists of the destination (a city for
3 days, every city of the state for 5/7), then a per-level, per-length formula picks the budget.
The certified plan's cost is a hard floor: a budget below it is raised to it, rounded up, so
every synthetic query is solvable within its budget.
"""

from __future__ import annotations

import math
import random
import statistics

from star.sandbox.rows import Database
from star.synthesis.config import BudgetConfig

LEGS = {3: 2, 5: 3, 7: 4}
NIGHTS = {3: 3, 5: 5, 7: 7}  # the original multiplies hotel prices by days, not nights
MEALS = {3: 9, 5: 15, 7: 21}


def r100(x: float, step: int = 100) -> int:
    """Python's round(x/100)*100 (banker's rounding at .5), the original's rounding."""
    return int(round(x / step) * step)


def price_lists(db: Database, elements: dict) -> tuple[list[float], list[float], list[float]]:
    """(transport, hotel, restaurant) price lists the statistics run over."""
    org, dest, days = elements["org"], elements["dest"], int(elements["days"])
    people = int(elements.get("people_number") or 1)
    cities = [dest] if days == 3 else list(db.state_cities.get(dest, []))
    dates = set(elements.get("date") or [])
    flights: list[float] = []
    hotels: list[float] = []
    rests: list[float] = []
    for c in cities:
        for f in db.flights_by_route.get((org, c), ()):
            # city grain takes every date; state grain only the query's dates (as the original)
            if days == 3 or f.date in dates:
                flights.append(float(f.price))
        hotels.extend(float(a.price) for a in db.accommodations_by_city.get(c, ())
                      if a.maximum_occupancy >= people)
        rests.extend(float(r.avg_cost) for r in db.restaurants_by_city.get(c, ()))
    if not hotels:  # no listing takes the whole group: price the rooms it needs
        for c in cities:
            hotels.extend(a.price * math.ceil(people / a.maximum_occupancy) / people
                          for a in db.accommodations_by_city.get(c, ()))
    if not flights:
        # The partial flight table often has no flight for a route; a drive prices the leg instead.
        for c in cities:
            d = db.distances.get((org, c))
            if d is not None:
                for mode in ("self-driving", "taxi"):
                    cost = d.cost(mode)
                    if cost is not None:
                        flights.append(float(cost))
    return flights, hotels, rests


def trip_costs(db: Database, elements: dict) -> dict[str, float]:
    """lowest / average / highest single-traveller trip cost (0 for a missing price list)."""
    days = int(elements["days"])
    flights, hotels, rests = price_lists(db, elements)
    out = {}
    for name, stat in (("lowest", min), ("highest", max), ("average", statistics.fmean)):
        out[name] = (stat(flights) * LEGS[days] if flights else 0.0) \
            + (stat(hotels) * NIGHTS[days] if hotels else 0.0) \
            + (stat(rests) * MEALS[days] if rests else 0.0)
    return out


def formula_budget(db: Database, elements: dict, cfg: BudgetConfig | None = None) -> int:
    """The original per-level budget (reference §5 table), before the plan-cost floor."""
    cfg = cfg or BudgetConfig()
    days, level = int(elements["days"]), elements.get("level", "easy")
    people = int(elements.get("people_number") or 1)
    c = trip_costs(db, elements)
    step = cfg.round_to
    if days == 3:
        base = (c["average"] + c["lowest"]) / 2
    elif days == 5:
        base = c["average"]
    else:
        base = r100((c["average"] + c["highest"]) / 2, step)
    if level == "easy":
        return r100(base, step)
    factor = cfg.medium_factor if level == "medium" else cfg.hard_factor
    return r100(base * people * factor, step)


def estimate_budget(db: Database, elements: dict, plan_cost: float | None, cfg: BudgetConfig | None = None) -> int:
    """Formula budget, raised to the certified plan's cost (rounded up) when it falls below it."""
    cfg = cfg or BudgetConfig()
    budget = formula_budget(db, elements, cfg)
    if plan_cost is not None:
        if cfg.max_over_min is not None:
            # tighter budgets make harder queries; the cap never goes below the plan cost (floor below)
            budget = min(budget, int(math.ceil(plan_cost * cfg.max_over_min / cfg.round_to) * cfg.round_to))
        floor = int(math.ceil(plan_cost / cfg.round_to) * cfg.round_to)
        budget = max(budget, floor)
    return max(budget, cfg.round_to)


def ratio_draw(level: str, days: int, rng: random.Random, cfg: BudgetConfig | None = None) -> float:
    """A budget / cheapest-plan ratio for a `level` query of `days` days: the official quantile function at a
    uniform draw."""
    cfg = cfg or BudgetConfig()
    knots = cfg.ratio_quantiles.get(f"{level}-{days}")
    if knots is None:
        raise ValueError(f"no budget ratio quantiles for {level}-{days}; expected one of {sorted(cfg.ratio_quantiles)}")
    u = rng.random() * (len(knots) - 1)
    i = min(int(u), len(knots) - 2)
    return knots[i] + (u - i) * (knots[i + 1] - knots[i])


def ratio_budget(plan_cost: float, level: str, days: int, rng: random.Random, cfg: BudgetConfig | None = None) -> int:
    """The certified cost times a drawn ratio, rounded as the original (r100), never below the cost."""
    cfg = cfg or BudgetConfig()
    if not plan_cost > 0:
        raise ValueError(f"the ratio budget needs the certified plan's cost, got {plan_cost!r}")
    budget = r100(plan_cost * ratio_draw(level, days, rng, cfg), cfg.round_to)
    return max(budget, int(math.ceil(plan_cost / cfg.round_to) * cfg.round_to), cfg.round_to)


def draw_budget(db: Database, elements: dict, plan_cost: float | None, rng: random.Random,
                cfg: BudgetConfig | None = None) -> int:
    """The budget of a synthetic query by `cfg.method` (ratio: `ratio_budget`; formula: `estimate_budget`)."""
    cfg = cfg or BudgetConfig()
    if cfg.method == "formula" or plan_cost is None:
        return estimate_budget(db, elements, plan_cost, cfg)
    return ratio_budget(plan_cost, elements.get("level", "easy"), int(elements["days"]), rng, cfg)
