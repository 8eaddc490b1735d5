"""A hand-built Database (the real class) small enough to work out optimal plans by hand.

Origin (state Home) and five cities of state Eden on a line: Origin 0 km, Alpha 300, Beta 350,
Gamma 420, Delta 500, Omega 4000 (too far to drive within a day). Everything is overridable so a
test can remove exactly the thing that makes a query feasible.
"""

from __future__ import annotations

from star.sandbox.rows import Accommodation, Attraction, Database, Distance, Flight, Restaurant

POS = {"Origin": 0, "Alpha": 300, "Beta": 350, "Gamma": 420, "Delta": 500}
STATES = {"Origin": "Home", "Alpha": "Eden", "Beta": "Eden", "Gamma": "Eden", "Delta": "Eden"}


def restaurants_for(city: str, costs=(10, 20, 30, 40, 50, 60, 70, 80, 90), cuisines=None) -> list[Restaurant]:
    cuisines = cuisines or ["Cafe", "Pizza", "Bakery", "Tea", "BBQ", "Seafood", "Desserts", "Fast Food", "Cafe"]
    return [Restaurant(f"{city} Diner {i}", city, cuisines[i % len(cuisines)], c, 4.0) for i, c in enumerate(costs)]


def attractions_for(city: str, n: int = 4) -> list[Attraction]:
    return [Attraction(f"{city} Sight {i}", 0.0, 0.0, "addr", "Unknown", "Unknown", city) for i in range(n)]


def acc(name, city, price, room="Entire home/apt", min_nights=1.0, rules="No pets", occ=4) -> Accommodation:
    return Accommodation(name, room, float(price), float(min_nights), 4.0, rules, occ, city)


def accommodations_for(city: str, base: int) -> list[Accommodation]:
    return [acc(f"{city} Loft", city, base), acc(f"{city} Suite", city, base + 40, room="Private room",
                                                  rules="No smoking")]


def distance_rows(pos=POS, missing=()) -> list[Distance]:
    rows = []
    for a in pos:
        for b in pos:
            if a == b:
                continue
            km = abs(pos[a] - pos[b])
            if (a, b) in missing:
                rows.append(Distance(a, b, None, None))
            else:
                hours = km // 100
                dur = f"{hours // 24} day {hours % 24} hours" if hours >= 24 else f"{hours} hours 5 mins"
                rows.append(Distance(a, b, dur, f"{km:,} km"))
    return rows


def tiny_world(*, restaurants=None, attractions=None, accommodations=None, flights=None, distances=None,
               cities=None) -> Database:
    cities = dict(STATES if cities is None else cities)
    if restaurants is None:
        restaurants = [r for c in cities if c != "Origin" for r in restaurants_for(c)]
    if attractions is None:
        attractions = [a for c in cities if c != "Origin" for a in attractions_for(c)]
    if accommodations is None:
        base = {"Alpha": 80, "Beta": 60, "Gamma": 100, "Delta": 70}
        accommodations = [a for c in cities if c in base for a in accommodations_for(c, base[c])]
    if flights is None:
        flights = [Flight("F0000001", 100, "08:00", "09:00", "1 hours 0 minutes", "2022-03-10", "Origin", "Alpha", 186.0),
                   Flight("F0000002", 120, "18:00", "19:00", "1 hours 0 minutes", "2022-03-12", "Alpha", "Origin", 186.0)]
    if distances is None:
        distances = distance_rows({c: POS[c] for c in cities if c in POS})
    return Database(cities, list(cities), sorted(set(cities.values())), flights, restaurants, attractions,
                    accommodations, distances, source="memory:tiny")


def query(**kw) -> dict:
    q = {"org": "Origin", "dest": "Alpha", "days": 3, "visiting_city_number": 1,
         "date": ["2022-03-10", "2022-03-11", "2022-03-12"], "people_number": 1,
         "local_constraint": {"house rule": None, "cuisine": None, "room type": None, "transportation": None},
         "level": "easy"}
    lc = kw.pop("local_constraint", {})
    q.update(kw)
    q["local_constraint"] = {**q["local_constraint"], **lc}
    if q["days"] != 3 and "date" not in kw:
        q["date"] = [f"2022-03-{10 + i}" for i in range(q["days"])]
        q["visiting_city_number"] = {5: 2, 7: 3}[q["days"]]
    return q
