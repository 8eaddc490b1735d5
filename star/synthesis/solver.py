"""Feasibility solver: the minimum-cost plan that passes every evaluator check, or a proof there is none.

The search is exact. A plan is fixed by (a) a transport family — all legs self-driving, or each
leg a flight or a taxi (the only mixes the non-conflicting-transport rule allows) — (b) an
ordered route of distinct cities with a number of nights in each, and (c) per city, one
accommodation for all its nights, one attraction per full day and three meals per full day.
Given (a) and (b) the per-city choices are independent except for a cuisine constraint, which
couples the restaurant choice across cities; that part is a small exact DP over coverage masks.
(a)+(b) are enumerated by depth-first branch and bound with admissible lower bounds, so an
exhausted search with no plan is a proof of infeasibility.

Only rows the evaluator resolves to themselves are used: its lookup is a substring match taking
the first row, so a listing whose name is contained in an earlier, different listing would be
priced and checked as that other row.

Plan shape (what "infeasible" is proved over): day 1 travels from the origin (the official
check requires transport on day 1), the last day returns to it, and each visited city is
entered by one travel day; meals and attractions are in the current city, names resolve to
themselves. Plans that only pass by exploiting evaluator blind spots are not considered.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from star.sandbox.rows import Accommodation, Database, Flight
from star.synthesis.config import SolverConfig

INF = float("inf")
ROOM_TYPE_MATCH = {
    "shared room": ("Shared room",),
    "not shared room": ("Private room", "Entire home/apt"),
    "private room": ("Private room",),
    "entire room": ("Entire home/apt",),
}
MEALS = ("breakfast", "lunch", "dinner")


@dataclass
class SolveResult:
    plan: list[dict] | None
    """The certified day-by-day plan (official structured form), or None."""
    cost: float | None
    """The plan's total cost as the official evaluator computes it."""
    status: str
    """optimal | over_budget (feasible, but every plan costs more than the budget) | infeasible | limit."""
    reason: str | None = None
    """Why no plan exists (infeasible) in a few words."""
    nodes: int = 0
    """Branch-and-bound nodes visited."""

    @property
    def ok(self) -> bool:
        return self.status == "optimal"


# -- per-database index of rows the evaluator resolves to themselves -------------------------------

@dataclass
class _Rest:
    name: str
    cost: int
    cuisines: str


@dataclass
class _Index:
    restaurants: dict[str, list[_Rest]] = field(default_factory=dict)
    attractions: dict[str, list[str]] = field(default_factory=dict)
    accommodations: dict[str, list[Accommodation]] = field(default_factory=dict)
    legs: dict[tuple[str, str, str], tuple] = field(default_factory=dict)
    """(origin, destination, date) -> unit transport options, filled lazily."""


def _first_substring_match(rows, name: str, key):
    for r in rows:
        if name in key(r):
            return r
    return None


def _norm(s: str) -> str:
    """The strict evaluator's name equality: whitespace-collapsed, case-folded."""
    return " ".join(s.split()).casefold()


def _first_norm_match(rows, name: str, key):
    n = _norm(name)
    for r in rows:
        if _norm(key(r)) == n:
            return r
    return None


def _clean_name(name: str) -> bool:
    # ';' splits attraction lists, newlines break the text format, '-' alone means "none".
    return bool(name) and ";" not in name and "\n" not in name and name != "-"


_INDEXES: dict[int, tuple[Database, _Index]] = {}


def db_index(db: Database) -> _Index:
    """Per-database candidate rows, each under the name a plan writes (the stored name, stripped).

    A row is a candidate only if both evaluator modes resolve that written name back to a row with
    the same attributes: the official first substring match, and the strict normalised equality.
    """
    hit = _INDEXES.get(id(db))
    if hit is not None and hit[0] is db:
        return hit[1]
    idx = _Index()
    rest_key = lambda x: x.name  # noqa: E731
    for city, rows in db.restaurants_by_city.items():
        seen, out = set(), []
        for r in rows:
            w = r.name.strip()
            if _norm(w) in seen or not _clean_name(w):
                continue
            sub = _first_substring_match(rows, w, rest_key)
            ex = _first_norm_match(rows, w, rest_key)
            if all(m is not None and m.avg_cost == r.avg_cost and m.cuisines == r.cuisines for m in (sub, ex)):
                seen.add(_norm(w))
                out.append(_Rest(w, r.avg_cost, r.cuisines))
        out.sort(key=lambda x: (x.cost, x.name))
        idx.restaurants[city] = out
    for city, rows in db.attractions_by_city.items():
        seen, out = set(), []
        for a in rows:
            w = a.name.strip()
            if _norm(w) not in seen and _clean_name(w):
                seen.add(_norm(w))
                out.append(w)
        idx.attractions[city] = out
    for city, rows in db.accommodations_by_city.items():
        out = []
        names = set()
        for a in rows:
            w = a.name.strip()
            if _norm(w) in names or not _clean_name(w):
                continue
            sub = _first_substring_match(rows, w, rest_key)
            ex = _first_norm_match(rows, w, rest_key)
            if all(m is not None and (m.price, m.room_type, m.house_rules, m.maximum_occupancy, m.minimum_nights)
                   == (a.price, a.room_type, a.house_rules, a.maximum_occupancy, a.minimum_nights) for m in (sub, ex)):
                names.add(_norm(w))
                out.append(a if w == a.name else dataclasses.replace(a, name=w))
        idx.accommodations[city] = out
    _INDEXES[id(db)] = (db, idx)
    return idx


# -- cost pieces ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Leg:
    mode: str  # flight | self-driving | taxi
    cost: float
    a: str
    b: str
    row: object  # the Flight or Distance row the text is written from

    @property
    def text(self) -> str:
        """The canonical transportation string (reference §4.1); built only for the legs a plan uses."""
        if self.mode == "flight":
            f = self.row
            return (f"Flight Number: {f.number}, from {self.a} to {self.b}, Departure Time: {f.dep_time}, "
                    f"Arrival Time: {f.arr_time}")
        d = self.row
        unit = d.cost(self.mode)
        name = "Self-driving" if self.mode == "self-driving" else "Taxi"
        return f"{name}, from {self.a} to {self.b}, duration: {d.duration}, distance: {d.distance}, cost: {unit}"


def _unit_options(db: Database, a: str, b: str, day: str) -> tuple:
    """Per-person flight price and per-vehicle drive/taxi costs for one leg, independent of the group."""
    best: Flight | None = None
    best_price = INF
    for f in db.flights_by_route_date.get((a, b, day), ()):
        ref = db.flights_by_number.get(f.number)
        # The evaluator prices a flight by the first row with its number; use that price.
        price = ref.price if ref is not None else f.price
        if price < best_price:
            best, best_price = f, price
    d = db.distances.get((a, b))
    drive = d.cost("self-driving") if d is not None else None
    taxi = d.cost("taxi") if d is not None else None
    return best, best_price, d, drive, taxi


def _leg_options(db: Database, a: str, b: str, day: str, people: int, unit: tuple | None = None) -> dict[str, Leg]:
    best, best_price, d, drive, taxi = unit or _unit_options(db, a, b, day)
    out: dict[str, Leg] = {}
    if best is not None:
        out["flight"] = Leg("flight", best_price * people, a, b, best)
    if drive is not None:
        out["self-driving"] = Leg("self-driving", drive * math.ceil(people / 5), a, b, d)
    if taxi is not None:
        out["taxi"] = Leg("taxi", taxi * math.ceil(people / 4), a, b, d)
    return out


def _families(transportation: str | None) -> list[tuple[str, ...]]:
    """Allowed per-leg mode sets: self-driving excludes flights and taxis (non-conflicting rule)."""
    fams = []
    if transportation != "no self-driving":
        fams.append(("self-driving",))
    fams.append(("taxi",) if transportation == "no flight" else ("flight", "taxi"))
    return fams


def _cuisine_mask(cuisines: str, wanted: tuple[str, ...]) -> int:
    m = 0
    for i, c in enumerate(wanted):
        if c in cuisines:  # the evaluator's substring test
            m |= 1 << i
    return m


class _MealTable:
    """dp[cnt][mask]: cheapest `cnt` distinct restaurants of a city whose coverage is exactly `mask`."""

    def __init__(self, rests: list[_Rest], wanted: tuple[str, ...], max_cnt: int):
        nm = 1 << len(wanted)
        self.rests, self.wanted, self.nm = rests, wanted, nm
        masks = [_cuisine_mask(r.cuisines, wanted) for r in rests]
        self.masks = masks
        dp = [[INF] * nm for _ in range(max_cnt + 1)]
        dp[0][0] = 0.0
        top = 0
        for r, rm in zip(rests, masks):
            top = min(top + 1, max_cnt)
            for cnt in range(top, 0, -1):
                prev, cur = dp[cnt - 1], dp[cnt]
                for m in range(nm):
                    v = prev[m]
                    if v < INF and v + r.cost < cur[m | rm]:
                        cur[m | rm] = v + r.cost
        self.dp = dp

    def pick(self, cnt: int, mask: int) -> list[_Rest]:
        """Reconstruct one optimal choice for (cnt, mask) by a DP with back-pointers."""
        nm, rests = self.nm, self.rests
        # best[i][c][m] over the first i restaurants; small (<= 65 x 16 x 16), run once per plan.
        best = [[[INF] * nm for _ in range(cnt + 1)] for _ in range(len(rests) + 1)]
        best[0][0][0] = 0.0
        for i, (r, rm) in enumerate(zip(rests, self.masks)):
            b0, b1 = best[i], best[i + 1]
            for c in range(cnt + 1):
                for m in range(nm):
                    v = b0[c][m]
                    if v == INF:
                        continue
                    if v < b1[c][m]:
                        b1[c][m] = v
                    if c < cnt and v + r.cost < b1[c + 1][m | rm]:
                        b1[c + 1][m | rm] = v + r.cost
        if best[len(rests)][cnt][mask] == INF:
            raise AssertionError("pick() asked for an unreachable restaurant set")
        out, c, m = [], cnt, mask
        for i in range(len(rests), 0, -1):
            r, rm = rests[i - 1], self.masks[i - 1]
            v = best[i][c][m]
            if best[i - 1][c][m] == v:
                continue
            # r was taken: find the predecessor mask
            for pm in range(nm):
                if pm | rm == m and c > 0 and best[i - 1][c - 1][pm] + r.cost == v:
                    out.append(r)
                    c, m = c - 1, pm
                    break
            else:  # pragma: no cover - defensive
                raise AssertionError("restaurant reconstruction failed")
        return out[::-1]


# -- the search ---------------------------------------------------------------------------------------

@dataclass
class _Stay:
    acc: Accommodation
    acc_cost: float  # all nights, all rooms
    meal_lb: float   # cheapest 3*(n-1) distinct restaurants, all people, cuisine ignored


class _Problem:
    def __init__(self, db: Database, q: dict, cfg: SolverConfig):
        self.db, self.cfg = db, cfg
        self.idx = db_index(db)
        self.org = q["org"]
        self.days = int(q["days"])
        if self.days not in (3, 5, 7):
            raise ValueError(f"trip length must be 3, 5 or 7 days, got {self.days}")
        self.k = int(q.get("visiting_city_number") or {3: 1, 5: 2, 7: 3}[self.days])
        if len(q["date"]) != self.days:
            raise ValueError(f"query lists {len(q['date'])} dates for {self.days} days")
        self.dates = list(q["date"])
        self.P = int(q["people_number"])
        lc = q.get("local_constraint") or {}
        self.rule = lc.get("house rule")
        self.room = lc.get("room type")
        self.transport = lc.get("transportation")
        cuisine = lc.get("cuisine") or ()
        self.cuisines: tuple[str, ...] = (cuisine,) if isinstance(cuisine, str) else tuple(cuisine)
        self.full_mask = (1 << len(self.cuisines)) - 1
        if self.days > 3 or self.k > 1:
            self.cities = [c for c in db.state_cities.get(q["dest"], []) if c != self.org]
        else:
            self.cities = [q["dest"]] if q["dest"] != self.org else []
        self.nodes = 0
        self._leg_cache: dict = {}
        self._fam_cache: dict = {}
        self._stay_cache: dict = {}
        self._meal_tables: dict = {}
        self.max_nights = self.days - 1 - (self.k - 1)
        self.max_meals = 3 * (self.max_nights - 1) + (6 if cfg.travel_day_meals else 0)

    # pieces
    def leg(self, fam: tuple[str, ...], a: str, b: str, day_no: int) -> Leg | None:
        fkey = (fam, a, b, day_no)
        if fkey in self._fam_cache:
            return self._fam_cache[fkey]
        self._fam_cache[fkey] = best = self._best_leg(fam, a, b, day_no)
        return best

    def _best_leg(self, fam: tuple[str, ...], a: str, b: str, day_no: int) -> Leg | None:
        key = (a, b, day_no)
        opts = self._leg_cache.get(key)
        if opts is None:
            date = self.dates[day_no - 1]
            ukey = (a, b, date)
            unit = self.idx.legs.get(ukey)
            if unit is None:  # shared by every query on this database
                unit = self.idx.legs[ukey] = _unit_options(self.db, a, b, date)
            opts = self._leg_cache[key] = _leg_options(self.db, a, b, date, self.P, unit)
        best = None
        for mode in fam:
            o = opts.get(mode)
            if o is not None and (best is None or o.cost < best.cost):
                best = o
        return best

    def eligible_accs(self, city: str) -> list[tuple[float, Accommodation]]:
        key = ("acc", city)
        hit = self._stay_cache.get(key)
        if hit is not None:
            return hit
        out = []
        for a in self.idx.accommodations.get(city, ()):
            if self.room and a.room_type not in ROOM_TYPE_MATCH.get(self.room, ()):
                continue
            if self.rule and f"No {self.rule}" in a.house_rules:
                continue
            out.append((a.price * math.ceil(self.P / a.maximum_occupancy), a))
        out.sort(key=lambda t: (t[0], t[1].name))
        self._stay_cache[key] = out
        return out

    def stay(self, city: str, nights: int) -> _Stay | None:
        key = (city, nights)
        if key in self._stay_cache:
            return self._stay_cache[key]
        res = None
        full_days = nights - 1
        rests = self.idx.restaurants.get(city, [])
        if len(self.idx.attractions.get(city, ())) >= full_days and len(rests) >= 3 * full_days:
            for per_night, a in self.eligible_accs(city):
                if a.minimum_nights <= nights:
                    res = _Stay(a, per_night * nights, sum(r.cost for r in rests[:3 * full_days]) * self.P)
                    break
        self._stay_cache[key] = res
        return res

    def meal_table(self, city: str) -> _MealTable:
        t = self._meal_tables.get(city)
        if t is None:
            t = self._meal_tables[city] = _MealTable(self.idx.restaurants.get(city, []), self.cuisines,
                                                     self.max_meals)
        return t

    # exact meal cost of a route with a cuisine constraint
    def cuisine_meals(self, route: list[tuple[str, int]]):
        """Min meal cost (all people) over routes' restaurant choices covering every cuisine.

        Travel-day slots: the day into city i has 3 meal slots shared with the previous city
        (meals in the origin city do not count for cuisine); the return day's slots go to the
        last city. State: (coverage mask, slots of the shared next travel day already used).
        Returns (cost, choice) where choice = per city (required+extras count, mask, arrival extras).
        """
        extra_ok = self.cfg.travel_day_meals
        states: dict[tuple[int, int], tuple[float, list]] = {(0, 0): (0.0, [])}
        for i, (city, nights) in enumerate(route):
            req = 3 * (nights - 1)
            table = self.meal_table(city)
            dp = table.dp
            new: dict[tuple[int, int], tuple[float, list]] = {}
            for (mask, used), (cost, hist) in states.items():
                arrive_free = 3 - used if extra_ok else 0
                depart_free = 3 if extra_ok else 0
                for e in range(0, arrive_free + depart_free + 1):
                    cnt = req + e
                    if cnt >= len(dp):
                        break
                    row = dp[cnt]
                    dep_used = max(0, e - arrive_free)
                    for m in range(table.nm):
                        v = row[m]
                        if v == INF:
                            continue
                        key = (mask | m, dep_used)
                        total = cost + v * self.P
                        if key not in new or total < new[key][0]:
                            new[key] = (total, hist + [(cnt, m, min(e, arrive_free), req)])
            states = new
        best = None
        for (mask, _), (cost, hist) in states.items():
            if mask == self.full_mask and (best is None or cost < best[0]):
                best = (cost, hist)
        return best

    # branch and bound
    def solve(self, bound: float) -> tuple[float, dict | None]:
        best_cost, best = bound, None
        if not self.cities:
            return best_cost, None
        for fam in _families(self.transport):
            cost, sol = self._search(fam, best_cost)
            if sol is not None and cost <= best_cost:
                best_cost, best = cost, sol
        return best_cost, best

    def _search(self, fam, bound):
        k, days, org = self.k, self.days, self.org
        cities = self.cities
        total_nights = days - 1
        # Admissible bounds for what is still to come.
        ret_lb = {}
        for c in cities:
            leg = self.leg(fam, c, org, days)
            ret_lb[c] = leg.cost if leg else INF
        min_ret = min(ret_lb.values()) if ret_lb else INF
        if min_ret == INF:
            return INF, None
        night_lb = INF
        meal_lb = INF
        for c in cities:
            accs = self.eligible_accs(c)
            if accs:
                night_lb = min(night_lb, accs[0][0])
            rs = self.idx.restaurants.get(c)
            if rs:
                meal_lb = min(meal_lb, rs[0].cost * self.P)
        if night_lb == INF:
            return INF, None
        best = [bound, None]
        cuis = bool(self.cuisines)

        def dfs(i, prev, day, used, partial, route, legs):
            self.nodes += 1
            if self.nodes > self.cfg.max_nodes:
                raise _Limit()
            left_nights = total_nights - (day - 1)
            remaining_after = k - i - 1
            cand = []
            for c in cities:
                if c in used:
                    continue
                leg = self.leg(fam, prev, c, day)
                if leg is None:
                    continue
                n_hi = left_nights - remaining_after
                n_lo = n_hi if remaining_after == 0 else 1
                for n in range(n_lo, n_hi + 1):
                    st = self.stay(c, n)
                    if st is None:
                        continue
                    base = partial + leg.cost + st.acc_cost + st.meal_lb
                    if remaining_after == 0:
                        r = ret_lb[c]
                        if r == INF:
                            continue
                        lb = base + r
                    else:
                        rest_nights = left_nights - n
                        lb = base + min_ret + night_lb * rest_nights + meal_lb * 3 * (rest_nights - remaining_after)
                    cand.append((lb, base, c, n, leg, st))
            cand.sort(key=lambda t: t[0])
            for lb, base, c, n, leg, st in cand:
                if lb > best[0]:
                    break
                if remaining_after == 0:
                    ret = self.leg(fam, c, org, days)
                    r_route = route + [(c, n, st)]
                    r_legs = legs + [leg, ret]
                    if cuis:
                        cm = self.cuisine_meals([(cc, nn) for cc, nn, _ in r_route])
                        if cm is None:
                            continue
                        total = lb - sum(s.meal_lb for _, _, s in r_route) + cm[0]
                        meals = cm[1]
                    else:
                        total, meals = lb, None
                    if total <= best[0]:
                        best[0], best[1] = total, {"fam": fam, "route": r_route, "legs": r_legs, "meals": meals}
                else:
                    dfs(i + 1, c, day + n, used | {c}, base, route + [(c, n, st)], legs + [leg])

        dfs(0, org, 1, frozenset(), 0.0, [], [])
        return best[0], best[1]

    # plan text
    def build_plan(self, sol: dict) -> list[dict]:
        org, days = self.org, self.days
        route, legs = sol["route"], sol["legs"]
        blank = {"breakfast": "-", "attraction": "-", "lunch": "-", "dinner": "-", "accommodation": "-"}
        plan: list[dict] = []
        # restaurants per city: required ones for full days, extras for travel days
        per_city_meals = []
        for i, (city, nights, st) in enumerate(route):
            full = 3 * (nights - 1)
            if sol["meals"] is not None:
                cnt, mask, arrive_extra, _req = sol["meals"][i]
                chosen = self.meal_table(city).pick(cnt, mask)
                chosen.sort(key=lambda r: (r.cost, r.name))  # which ones go to travel days does not matter
                extras = chosen[full:]
                per_city_meals.append((chosen[:full], extras[:arrive_extra], extras[arrive_extra:]))
            else:
                per_city_meals.append((self.idx.restaurants[city][:full], [], []))
        prev = org
        travel_meals: dict[int, list[str]] = {}
        day = 1
        for i, (city, nights, st) in enumerate(route):
            full_meals, arrive_extra, depart_extra = per_city_meals[i]
            attractions = self.idx.attractions.get(city, [])
            acc = f"{st.acc.name}, {city}"
            travel_meals.setdefault(day, []).extend(f"{r.name}, {city}" for r in arrive_extra)
            plan.append({"days": day, "current_city": f"from {prev} to {city}", "transportation": legs[i].text,
                         **blank, "accommodation": acc})
            for j in range(nights - 1):
                trio = full_meals[3 * j:3 * j + 3]
                plan.append({"days": day + 1 + j, "current_city": city, "transportation": "-",
                             "breakfast": f"{trio[0].name}, {city}", "attraction": f"{attractions[j]}, {city};",
                             "lunch": f"{trio[1].name}, {city}", "dinner": f"{trio[2].name}, {city}",
                             "accommodation": acc})
            day += nights
            travel_meals.setdefault(day, []).extend(f"{r.name}, {city}" for r in depart_extra)
            prev = city
        plan.append({"days": days, "current_city": f"from {prev} to {org}", "transportation": legs[-1].text,
                     **blank})
        for d in plan:
            for slot, meal in zip(MEALS, travel_meals.get(d["days"], [])):
                d[slot] = meal
        return plan


class _Limit(Exception):
    pass


def solve(db: Database, elements: dict, budget: float | None = None, cfg: SolverConfig | None = None) -> SolveResult:
    """The minimum-cost plan for `elements` (official query fields), or why none exists.

    With a budget, only plans costing at most the budget count; if plans exist but all cost
    more, the status is `over_budget` (cost = the true minimum, plan = None).
    """
    cfg = cfg or SolverConfig()
    prob = _Problem(db, elements, cfg)
    if not prob.cities:
        return SolveResult(None, None, "infeasible", "no destination city to visit", 0)
    if len(prob.cities) < prob.k:
        return SolveResult(None, None, "infeasible", f"state has fewer than {prob.k} visitable cities", 0)
    bound = INF if budget is None else float(budget)
    try:
        cost, sol = prob.solve(bound)
        if sol is None and budget is not None:
            cost2, sol2 = prob.solve(INF)
            if sol2 is not None:
                return SolveResult(None, cost2, "over_budget", f"cheapest plan costs {cost2:g} > budget {budget}",
                                   prob.nodes)
    except _Limit:
        return SolveResult(None, None, "limit", f"search exceeded {cfg.max_nodes} nodes", prob.nodes)
    if sol is None:
        return SolveResult(None, None, "infeasible", "no route, transport, stay and meal combination exists",
                           prob.nodes)
    plan = prob.build_plan(sol)
    return SolveResult(plan, plan_cost(db, elements, plan), "optimal", None, prob.nodes)


# -- cost as the official evaluator computes it (reference §4.5), for plans in our canonical form ---

def _name_city(s: str) -> tuple[str, str]:
    name, _, city = s.rpartition(",")
    return name.strip(), city.strip()


def plan_cost(db: Database, elements: dict, plan: list[dict]) -> float:
    P = int(elements["people_number"])
    total = 0.0
    for d in plan[: int(elements["days"])]:
        t = d.get("transportation") or "-"
        if t != "-":
            if "Flight Number: " in t:
                number = t.split("Flight Number: ")[1].split(",")[0]
                total += db.flights_by_number[number].price * P
            else:
                a, b = t.split(", from ", 1)[1].split(",", 1)[0].split(" to ", 1)
                dist = db.distances[(a, b)]
                if t.startswith("Self-driving"):
                    total += dist.cost("self-driving") * math.ceil(P / 5)
                elif t.startswith("Taxi"):
                    total += dist.cost("taxi") * math.ceil(P / 4)
        for meal in MEALS:
            v = d.get(meal) or "-"
            if v != "-":
                name, city = _name_city(v)
                r = _first_substring_match(db.restaurants_by_city.get(city, ()), name, lambda x: x.name)
                total += r.avg_cost * P
        v = d.get("accommodation") or "-"
        if v != "-":
            name, city = _name_city(v)
            a = _first_substring_match(db.accommodations_by_city.get(city, ()), name, lambda x: x.name)
            total += a.price * math.ceil(P / a.maximum_occupancy)
    return total
