"""The built-in generated world: a small, plausible TravelPlanner database made from a seed.

`generate_world(seed)` returns a `Database` with the official schema and value formats
(reference §1): 53 real US cities in 16 states (world_data.py), ~41K flights covering every day
of March 2022 (hub trunks daily, thin routes some weekdays only), a road distance matrix derived
from the cities' coordinates, and per city 15-42 restaurants, 4-20 attractions and 10-30
accommodations. It is what tests and the default run use, so it must be fast (~0.3 s) and
deterministic: every draw comes from a `random.Random` seeded with the seed and a component
name (never from hash order), so one component's changes do not shift another's.

The world is built so that every query the official generator can draw (reference §5) has
feasible and infeasible instances: some cities lack a cuisine, some forbid a house rule in every
listing, some have no short-stay listing of a room type, shared rooms are rare, the islands can
only be reached by air, some short pairs have no flight, and some far pairs have no route at all.
Within a state, flights are rare and a few city pairs have no road, as in the shipped database, so
a multi-city route must be checked before its cities are committed to.
"""

from __future__ import annotations

import math
import random
from datetime import date, timedelta

from star.sandbox import world_data as wd
from star.sandbox.rows import HOUSE_RULES, ROOM_TYPES, Accommodation, Attraction, Database, Distance, Flight, Restaurant

MARCH_2022 = tuple((date(2022, 3, 1) + timedelta(days=i)).isoformat() for i in range(31))
LONG_STAY_NIGHTS = (7.0, 10.0, 14.0, 30.0)
"""Minimum nights of listings kept out of reach: a 7-day trip never stays more than 6 nights anywhere."""
SHORT_STAY_NIGHTS = (1.0, 2.0)
"""Minimum nights of the listings a city guarantees: they fit a two-night stay."""
MIN_FLIGHT_MILES = 110.0
"""Shorter mainland hops are left to the road, so some drivable pairs have no flight."""
# The shipped database connects a state's cities sparsely: a flight route joins 4.9% of its
# within-state city pairs and many pairs have no road row at all. These three shares make the
# generated world as hard for the built-in teacher as the real one (bench/fidelity.py; docs/fidelity.md).
WITHIN_STATE_FLIGHT_SHARE = 0.1
"""Share of within-state flight routes kept, island hops aside (they are the islands' only link)."""
WITHIN_STATE_ROAD_GAP = 0.08
"""Chance that a within-state city pair has no road row (both directions)."""
CROSS_STATE_ROAD_GAP = 0.38
"""Chance that a cross-state ordered pair is absent from the distance matrix."""

_EARTH_KM = 6371.0088
_KM_PER_MILE = 1.609344
_TIMES = tuple(f"{m // 60:02d}:{m % 60:02d}" for m in range(1440))
# The official flight table always says "hours", even for 0 or 1 (e.g. "1 hours 46 minutes").
_ELAPSED = tuple(f"{m // 60} hours {m % 60} minutes" for m in range(24 * 60))


# -- geometry and text formats -----------------------------------------------------------------

def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance in km."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * _EARTH_KM * math.asin(math.sqrt(a))


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def format_duration(minutes: int) -> str:
    """Google-style drive time: `45 mins`, `1 hour 0 mins`, `10 hours 55 mins`, `1 day 3 hours`."""
    if minutes >= 24 * 60:
        days, rest = divmod(minutes, 24 * 60)
        return f"{_plural(days, 'day')} {_plural(round(rest / 60) if rest < 23.5 * 60 else 23, 'hour')}"
    hours, mins = divmod(minutes, 60)
    if hours == 0:
        return _plural(max(mins, 1), "min")
    return f"{_plural(hours, 'hour')} {_plural(mins, 'min')}"


def parse_duration_minutes(text: str) -> int:
    """Inverse of `format_duration` (to the minute; day strings to the hour)."""
    words = text.split()
    total = 0
    for value, unit in zip(words[::2], words[1::2]):
        total += int(value) * {"day": 1440, "hour": 60, "min": 1}[unit.rstrip("s")]
    return total


def format_km(km: float) -> str:
    """Google-style distance text: `98.6 km` under 100 km, else `901 km` / `1,144 km`."""
    return f"{km:.1f} km" if km < 100 else f"{round(km):,} km"


# -- the world --------------------------------------------------------------------------------

class _Geo:
    """City positions and states, plus the per-city constraint profile drawn from the seed."""

    def __init__(self, seed: int):
        self.city: dict[str, wd.City] = {}
        self.state_of: dict[str, wd.State] = {}
        for st in wd.STATES:
            for c in st.cities:
                self.city[c.name] = c
                self.state_of[c.name] = st
        self.names = [c for st in wd.STATES for c in (x.name for x in st.cities)]
        self.big_states = [st.name for st in wd.STATES if len(st.cities) > 3]
        rng = random.Random(f"{seed}:profiles")
        cities = list(self.names)

        # Cuisines a city's restaurants never serve: one big state lacks one cuisine everywhere
        # (infeasible at state grain), and each cuisine is missing in a few single cities.
        self.missing_cuisines: dict[str, set[str]] = {c: set() for c in cities}
        state_name = rng.choice(self.big_states)
        state = next(s for s in wd.STATES if s.name == state_name)
        statewide = rng.choice(("French", "Indian", "Mediterranean"))  # not American food in all of Texas
        for c in state.cities:
            self.missing_cuisines[c.name].add(statewide)
        for cuisine in wd.MAIN_CUISINES:
            for c in rng.sample([c for c in cities if len(self.missing_cuisines[c]) < 2], 3):
                self.missing_cuisines[c].add(cuisine)

        # House rules every listing of a city carries ("No pets" on the islands: quarantine).
        self.strict_rules: dict[str, set[str]] = {c: set() for c in cities}
        for st in wd.STATES:
            if st.name in wd.ISLAND_STATES:
                for c in st.cities:
                    self.strict_rules[c.name].add("pets")
        for rule in HOUSE_RULES:
            for c in rng.sample([c for c in cities if len(self.strict_rules[c]) < 2], 3):
                self.strict_rules[c].add(rule)

        # Room-type profiles: which short-stay room types a city offers (small towns only).
        pool = [c for c in cities if not self.city[c].hub]
        rng.shuffle(pool)
        self.no_private = set(pool[0:2])
        self.no_entire = set(pool[2:4])
        self.shared_only = set(pool[4:6])
        shared_state = rng.choice(self.big_states)
        # Shared rooms are rare: a quarter of the cities, plus every city of one big state.
        self.has_shared = {c for c in cities
                           if c in self.shared_only or self.state_of[c].name == shared_state or rng.random() < 0.25}

        order = list(cities)
        random.Random(f"{seed}:order").shuffle(order)  # file order, as the official files are unordered
        self.order = order

    def km(self, a: str, b: str) -> float:
        ca, cb = self.city[a], self.city[b]
        return haversine_km(ca.lat, ca.lon, cb.lat, cb.lon)

    def utc_offset(self, c: str) -> int:
        own = self.city[c].utc_offset
        return self.state_of[c].utc_offset if own is None else own

    def same_state(self, a: str, b: str) -> bool:
        return self.state_of[a].name == self.state_of[b].name

    def island(self, c: str) -> bool:
        return self.state_of[c].name in wd.ISLAND_STATES


def generate_world(seed: int) -> Database:
    """The embedded default database for `seed` (deterministic; see the module docstring)."""
    seed = int(seed)
    geo = _Geo(seed)
    city_states = {c: geo.state_of[c].name for c in geo.order}
    state_order = list(dict.fromkeys(city_states.values()))
    return Database(
        city_states=city_states,
        city_set=list(geo.order),
        # The official stateSet.txt carries a literal "None" line; consumers must cope with it.
        state_set=state_order + ["None"],
        flights=_flights(geo, seed),
        restaurants=_restaurants(geo, seed),
        attractions=_attractions(geo, seed),
        accommodations=_accommodations(geo, seed),
        distance_rows=_distances(geo, seed),
        source=f"generated:{seed}",
    )


# -- flights ----------------------------------------------------------------------------------

def _routes(geo: _Geo, rng: random.Random) -> list[tuple[str, str, str]]:
    """Ordered (origin, destination, kind) pairs with scheduled flights; kind sets the frequency."""
    names = geo.names
    hubs = [c for c in names if geo.city[c].hub]
    pairs: dict[tuple[str, str], str] = {}

    def miles(a: str, b: str) -> float:
        return geo.km(a, b) / _KM_PER_MILE

    def add(a: str, b: str, kind: str, both: bool = True) -> None:
        pairs.setdefault((a, b), kind)
        if both:
            pairs.setdefault((b, a), kind)

    for i, a in enumerate(hubs):
        for b in hubs[i + 1:]:
            if miles(a, b) < MIN_FLIGHT_MILES:
                continue
            # Island hubs fly daily to the western half of the mainland, a few days a week further east.
            far_island = (geo.island(a) or geo.island(b)) and max(geo.city[a].lon, geo.city[b].lon) > -100
            add(a, b, "thin" if far_island else "trunk")
    spokes = [c for c in names if not geo.city[c].hub and not geo.island(c)]
    for c in spokes:
        by_dist = sorted((h for h in hubs if not geo.island(h) and miles(c, h) >= MIN_FLIGHT_MILES),
                         key=lambda h: miles(c, h))
        near = [h for h in by_dist if miles(c, h) <= 1500]
        for h in near[:3]:
            add(c, h, "regional", both=rng.random() > 0.03)  # a few one-way routes
        for h in by_dist:
            if h not in near[:3] and rng.random() < 0.6:
                add(c, h, "thin")
    islands = [c for c in names if geo.island(c) and not geo.city[c].hub]
    for i, a in enumerate(islands):
        for h in hubs:
            if geo.island(h):
                add(a, h, "island")
        for b in islands[i + 1:]:
            add(a, b, "island")  # island hops are the only way between islands
        for h in rng.sample([h for h in hubs if not geo.island(h) and geo.city[h].lon < -110], 3):
            add(a, h, "thin")
    for i, a in enumerate(spokes):
        for b in spokes[i + 1:]:
            m = miles(a, b)
            if m >= MIN_FLIGHT_MILES and rng.random() < (0.35 if m <= 1300 else 0.45):
                add(a, b, "thin")
    return [(a, b, kind) for (a, b), kind in pairs.items()
            if kind == "island" or not geo.same_state(a, b) or rng.random() < WITHIN_STATE_FLIGHT_SHARE]


# (departures per day: choices, weights), and whether the route may skip weekdays.
_SERVICE = {"trunk": ((1, 2, 3), (3, 5, 2), False), "regional": ((1, 2), (5, 5), False),
            "island": ((2, 3), (1, 1), False), "thin": ((1,), (1,), True)}
_WEEKDAY = tuple(date.fromisoformat(d).weekday() for d in MARCH_2022)


def _flights(geo: _Geo, seed: int) -> list[Flight]:
    rng = random.Random(f"{seed}:flights")
    rnd = rng.random
    routes = _routes(geo, rng)
    rng.shuffle(routes)  # the file is grouped by route, routes in no particular order
    number = rng.randrange(1_000_000, 2_000_000)
    out: list[Flight] = []
    append = out.append
    for org, dest, kind in routes:
        miles = float(round(geo.km(org, dest) / _KM_PER_MILE))
        tz_shift = (geo.utc_offset(dest) - geo.utc_offset(org)) * 60
        block = int(25 + miles / 7.8)  # taxi and climb, then ~470 mph
        counts, weights, sparse = _SERVICE[kind]
        schedule = [(rng.randrange(5 * 60, 22 * 60 + 30), rng.uniform(0.75, 1.5))
                    for _ in range(rng.choices(counts, weights)[0])]
        base = (35 + 0.12 * miles) * rng.uniform(0.7, 1.4)
        # Thin routes fly some weekdays only, so a pair can be reachable on one date and not the next.
        weekdays = set(rng.sample(range(7), rng.randint(3, 6))) if sparse else set(range(7))
        for day, weekday in zip(MARCH_2022, _WEEKDAY):
            if weekday not in weekdays:
                continue
            weekend = 1.15 if weekday >= 4 else 1.0
            for dep, fare in schedule:
                if len(schedule) > 1 and rnd() < 0.08:
                    continue  # an occasional cancelled departure
                dep_m = (dep + int(rnd() * 21) - 10) % 1440
                elapsed = max(30, block + int(rnd() * 23) - 8)
                arr_m = (dep_m + elapsed + tz_shift) % 1440
                price = max(14, int(base * fare * weekend * (0.7 + 0.3 * (rnd() + rnd() + rnd()) / 1.5)))
                number += 1 + int(rnd() * 60)
                append(Flight(f"F{number:07d}", price, _TIMES[dep_m], _TIMES[arr_m], _ELAPSED[elapsed], day,
                              org, dest, miles))
    return out


# -- distance matrix --------------------------------------------------------------------------

def _drive(km_road: float, rng: random.Random) -> int:
    # Short trips crawl through town; long ones are mostly interstate (official rows: ~85-110 km/h).
    kmh = (80 + 28 * (1 - math.exp(-km_road / 350))) * rng.uniform(0.95, 1.05)
    return max(1, round(km_road / kmh * 60))


def _distances(geo: _Geo, seed: int) -> list[Distance]:
    rng = random.Random(f"{seed}:distances")
    names = geo.order
    factor: dict[tuple[str, str], float] = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            factor[(a, b)] = factor[(b, a)] = rng.uniform(1.15, 1.4)  # roads are longer than the great circle
    no_road: set[tuple[str, str]] = set()
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            if geo.same_state(a, b) and rng.random() < WITHIN_STATE_ROAD_GAP:
                no_road |= {(a, b), (b, a)}
    rows: list[Distance] = []
    dupes: list[Distance] = []
    for a in names:
        for b in names:
            if a == b:
                continue
            if geo.island(a) or geo.island(b):
                rows.append(Distance(a, b, None, None))  # no road: Google returned nothing
                continue
            same_state = geo.same_state(a, b)
            if (a, b) in no_road:
                continue
            if not same_state and rng.random() < CROSS_STATE_ROAD_GAP:
                continue  # pair absent from the matrix
            km = geo.km(a, b) * factor[(a, b)] * rng.uniform(0.996, 1.004)
            row = Distance(a, b, format_duration(_drive(km, rng)), format_km(km))
            rows.append(row)
            if rng.random() < 0.01:
                # A later, slightly different duplicate: the official lookup keeps the first row.
                km2 = km * rng.uniform(1.01, 1.05)
                dupes.append(Distance(a, b, format_duration(_drive(km2, rng)), format_km(km2)))
    return rows + dupes


# -- names ------------------------------------------------------------------------------------

def _add_unique(names: list[str], candidate: str) -> bool:
    """Add `candidate` unless it equals, contains or is contained in a name already there.

    The official evaluator finds a row by substring match within the city; keeping names
    substring-free makes that lookup return exactly the intended row.
    """
    low = candidate.lower()
    for n in names:
        nl = n.lower()
        if low in nl or nl in low:
            return False
    names.append(candidate)
    return True


def _fill(names: list[str], n: int, make, rng: random.Random, what: str, city: str) -> list[str]:
    for _ in range(n * 50):
        if len(names) >= n:
            return names
        _add_unique(names, make(rng))
    raise RuntimeError(f"could not draw {n} distinct {what} names for {city}")


def _restaurant_name(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.3:
        return f"{rng.choice(wd.RESTAURANT_ADJ)} {rng.choice(wd.RESTAURANT_NOUN)}"
    if pick < 0.5:
        return f"The {rng.choice(wd.RESTAURANT_ADJ)} {rng.choice(wd.RESTAURANT_NOUN)} {rng.choice(wd.RESTAURANT_KIND)}"
    if pick < 0.7:
        owner = rng.choice(wd.SURNAMES)
        possessive = owner + ("'" if owner.endswith("s") else "'s")
        return f"{possessive} {rng.choice(wd.RESTAURANT_KIND)}"
    if pick < 0.85:
        a, b = rng.sample(wd.RESTAURANT_NOUN, 2)
        return f"{a} & {b}"
    return f"{rng.choice(wd.RESTAURANT_NOUN)} {rng.choice(wd.RESTAURANT_KIND)}"


def _stay_name(room_type: str, rng: random.Random) -> str:
    adj, adj2 = rng.sample(wd.STAY_ADJ, 2)
    unit = rng.choice(wd.STAY_UNIT[room_type])
    pick = rng.random()
    if pick < 0.35:
        return f"{adj} {unit} in {rng.choice(wd.STAY_AREA)}"
    if pick < 0.6:
        return f"{adj} {unit} near {rng.choice(wd.STAY_LANDMARK)}"
    if pick < 0.8:
        return f"{adj} {unit} with {rng.choice(wd.STAY_FEATURE)}"
    if pick < 0.95:
        return f"{adj} & {adj2} {unit}"
    # Commas are rare, as in the real table; get_valid_name_city splits on the last one only.
    return f"{adj}, {adj2.lower()} {unit.lower()} near {rng.choice(wd.STAY_LANDMARK)}"


def _attraction_name(city: str, rng: random.Random) -> str:
    if rng.random() < 0.35:
        return rng.choice(wd.ATTRACTION_TEMPLATES).format(city=city)
    return f"{rng.choice(wd.ATTRACTION_NAMES)} {rng.choice(wd.ATTRACTION_PLACES)}"


# -- restaurants ------------------------------------------------------------------------------

_CUISINE_WEIGHT = {c: 1.0 for c in wd.MAIN_CUISINES} | {c: 2.6 for c in wd.OTHER_CUISINES}


def _cuisines(rng: random.Random, allowed: list[str]) -> list[str]:
    k = rng.choices((2, 3, 4, 5, 6), weights=(8, 25, 34, 25, 8))[0]
    # Weighted sampling without replacement (the main cuisines are rarer, as in the real table).
    keyed = sorted(allowed, key=lambda c: -rng.random() ** (1.0 / _CUISINE_WEIGHT[c]))
    return keyed[:k]


def _restaurants(geo: _Geo, seed: int) -> list[Restaurant]:
    rng = random.Random(f"{seed}:restaurants")
    out: list[Restaurant] = []
    for city in geo.names:
        hub = geo.city[city].hub
        n = rng.randint(30, 42) if hub else rng.randint(15, 28)
        names: list[str] = []
        for chain in rng.sample(wd.CHAINS, rng.randint(2, 5)):
            _add_unique(names, chain)
        if rng.random() < 0.1:
            _add_unique(names, rng.choice(wd.COMMA_RESTAURANTS))
        _fill(names, n, _restaurant_name, rng, "restaurant", city)
        rng.shuffle(names)
        allowed = [c for c in (*wd.MAIN_CUISINES, *wd.OTHER_CUISINES) if c not in geo.missing_cuisines[city]]
        menus = [_cuisines(rng, allowed) for _ in names]
        # Every cuisine a city does not lack is served by at least two of its restaurants.
        for cuisine in wd.MAIN_CUISINES:
            if cuisine in geo.missing_cuisines[city]:
                continue
            have = sum(cuisine in m for m in menus)
            for m in rng.sample([m for m in menus if cuisine not in m], max(0, 2 - have)):
                m.insert(rng.randrange(len(m) + 1), cuisine)
        price_level = rng.uniform(0.8, 1.3) if hub else rng.uniform(0.6, 1.05)
        for name, menu in zip(names, menus):
            chain = name in wd.CHAINS
            if chain:
                cost = rng.randint(10, 30)
            else:
                cost = int(min(250, max(10, rng.lognormvariate(3.85, 0.45) * price_level)))
            rating = 0.0 if rng.random() < 0.15 else round(rng.uniform(2.5, 4.9), 1)
            out.append(Restaurant(name, city, ", ".join(menu), cost, rating))
    rng.shuffle(out)  # the official table is not grouped by city
    return out


# -- attractions ------------------------------------------------------------------------------

def _slug(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def _attractions(geo: _Geo, seed: int) -> list[Attraction]:
    rng = random.Random(f"{seed}:attractions")
    out: list[Attraction] = []
    for city in geo.names:
        c, st = geo.city[city], geo.state_of[city]
        n = rng.randint(12, 20) if c.hub else rng.randint(4, 12)
        names = _fill([], n, lambda r: _attraction_name(city, r), rng, "attraction", city)
        area = rng.randint(201, 989)
        for name in names:
            zip_code = f"{st.zip_prefix}{rng.randint(0, 9999):04d}"
            address = (f"{rng.randint(1, 9999)} {rng.choice(wd.STREETS)} {rng.choice(wd.STREET_SUFFIXES)}, "
                       f"{city}, {st.abbr} {zip_code}, USA")
            phone = f"({area}) {rng.randint(200, 999)}-{rng.randint(0, 9999):04d}"
            site = f"https://www.{_slug(name)}.{rng.choice(('org', 'com', 'gov'))}/"
            out.append(Attraction(name, round(c.lat + rng.gauss(0, 0.03), 7), round(c.lon + rng.gauss(0, 0.03), 7),
                                  address, phone, site, city))
    return out


# -- accommodations ---------------------------------------------------------------------------

_OCCUPANCY = {
    "Entire home/apt": ((2, 3, 4, 5, 6, 7, 8, 9, 10), (20, 18, 20, 12, 12, 6, 6, 3, 3)),
    "Private room": ((1, 2, 3, 4), (30, 55, 10, 5)),
    "Shared room": ((1, 2), (60, 40)),
}
_PRICE = {"Entire home/apt": (120.0, 1000.0), "Private room": (50.0, 450.0), "Shared room": (25.0, 160.0)}
_NIGHTS = ((1.0, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0, 14.0, 30.0), (32, 30, 16, 5, 4, 4, 1.5, 1.5, 6))


def _house_rules(rng: random.Random, strict: set[str]) -> str:
    k = rng.choices((1, 2, 3, 4), weights=(50, 37, 11, 2))[0]
    rules = [r for r in HOUSE_RULES if r in strict]
    rest = [r for r in HOUSE_RULES if r not in strict]
    rng.shuffle(rest)
    rules += rest[:max(0, k - len(rules))]
    rng.shuffle(rules)
    return " & ".join(f"No {r}" for r in rules)


def _accommodations(geo: _Geo, seed: int) -> list[Accommodation]:
    rng = random.Random(f"{seed}:accommodations")
    out: list[Accommodation] = []
    entire, private, shared = ROOM_TYPES
    for city in geo.names:
        hub = geo.city[city].hub
        n = rng.randint(20, 30) if hub else rng.randint(10, 18)
        # (room type, short stay?) per listing: the guaranteed short stays, then free draws (None).
        plan: list[tuple[str, bool | None]] = []
        short_types = [t for t, off in ((entire, city in geo.no_entire or city in geo.shared_only),
                                        (private, city in geo.no_private or city in geo.shared_only)) if not off]
        for t in short_types:
            plan += [(t, True)] * 3
        if city in geo.has_shared:
            plan += [(shared, True)] * (3 if city in geo.shared_only else 2)
        while len(plan) < n:
            t = rng.choices((entire, private, shared), weights=(52, 45, 3))[0]
            if t == shared and city not in geo.has_shared:
                continue
            plan.append((t, None))
        rng.shuffle(plan)
        names: list[str] = []
        level = rng.uniform(0.9, 1.4) if hub else rng.uniform(0.6, 1.1)
        for room_type, short in plan:
            allowed_short = room_type in short_types or room_type == shared
            if short:
                nights = rng.choice(SHORT_STAY_NIGHTS)
            elif not allowed_short:
                nights = rng.choice(LONG_STAY_NIGHTS)  # the profile keeps this room type out of reach
            else:
                nights = rng.choices(*_NIGHTS)[0]
            for _ in range(200):
                if _add_unique(names, _stay_name(room_type, rng)):
                    break
            else:
                raise RuntimeError(f"could not draw a distinct accommodation name for {city}")
            lo, hi = _PRICE[room_type]
            price = float(round(math.exp(rng.uniform(math.log(lo), math.log(hi))) * level))
            occupancy = rng.choices(*_OCCUPANCY[room_type])[0]
            out.append(Accommodation(names[-1], room_type, price, nights,
                                     float(rng.choices((1, 2, 3, 4, 5), weights=(1, 2, 2, 2, 2))[0]),
                                     _house_rules(rng, geo.strict_rules[city]), occupancy, city))
    rng.shuffle(out)  # the official table is not grouped by city
    return out
