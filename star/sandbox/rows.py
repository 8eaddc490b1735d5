"""The TravelPlanner database's rows: the official file layout, typed rows and the in-memory indexes.

Every lookup a tool or the evaluator makes is a dictionary access on the indexes built here; nothing
scans a table per call. Loading (CSV layout or the generated world) is star.sandbox.database's job.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

# Official file layout, relative to the database root (reference §1).
FILES = {
    "accommodations": "accommodations/clean_accommodations_2022.csv",
    "attractions": "attractions/attractions.csv",
    "restaurants": "restaurants/clean_restaurant_2022.csv",
    "distances": "googleDistanceMatrix/distance.csv",
    "flights": "flights/clean_Flights_2022.csv",
    "city_set": "background/citySet.txt",
    "city_states": "background/citySet_with_states.txt",
    "state_set": "background/stateSet.txt",
}

FLIGHT_COLUMNS = ["Flight Number", "Price", "DepTime", "ArrTime", "ActualElapsedTime", "FlightDate",
                  "OriginCityName", "DestCityName", "Distance"]
RESTAURANT_COLUMNS = ["Name", "City", "Cuisines", "Average Cost", "Aggregate Rating"]
ATTRACTION_COLUMNS = ["Name", "Latitude", "Longitude", "Address", "Phone", "Website", "City"]
ACCOMMODATION_COLUMNS = ["NAME", "room type", "price", "minimum nights", "review rate number", "house_rules",
                         "maximum occupancy", "city"]
DISTANCE_COLUMNS = ["origin", "destination", "cost", "duration", "distance"]

ROOM_TYPES = ("Entire home/apt", "Private room", "Shared room")
HOUSE_RULES = ("smoking", "parties", "children under 10", "visitors", "pets")
CUISINES = ("Chinese", "American", "Italian", "Mexican", "Indian", "Mediterranean", "French")


class DatabaseError(Exception):
    """A database directory or file is missing or malformed; the message names the file."""


@dataclass(frozen=True, slots=True)
class Flight:
    number: str
    price: int
    dep_time: str
    arr_time: str
    elapsed: str
    date: str
    origin: str
    dest: str
    distance: float


@dataclass(frozen=True, slots=True)
class Restaurant:
    name: str
    city: str
    cuisines: str
    avg_cost: int
    rating: float


@dataclass(frozen=True, slots=True)
class Attraction:
    name: str
    latitude: float
    longitude: float
    address: str
    phone: str
    website: str
    city: str


@dataclass(frozen=True, slots=True)
class Accommodation:
    name: str
    room_type: str
    price: float
    minimum_nights: float
    review_rate: float
    house_rules: str
    maximum_occupancy: int
    city: str


@dataclass(frozen=True, slots=True)
class Distance:
    origin: str
    dest: str
    duration: str | None
    distance: str | None

    @property
    def km(self) -> float | None:
        """Distance in km parsed from text like '1,144 km'; None when empty."""
        if not self.distance:
            return None
        return float(self.distance.replace(",", "").replace("km", "").strip())

    def cost(self, mode: str) -> int | None:
        """The official tool's cost rule (reference §2.3); None when invalid (empty or over a day)."""
        if not self.duration or not self.distance or "day" in self.duration:
            return None
        km = self.km
        if "driving" in mode:
            return int(km * 0.05)
        if mode == "taxi":
            return int(km)
        return None


@dataclass
class Database:
    """All sandbox tables plus the indexes the tools and the evaluator read."""

    city_states: dict[str, str]
    """citySet_with_states.txt in file order: city -> state (the evaluator's city set)."""
    city_set: list[str]
    """citySet.txt in file order: the cities the agent's searches accept."""
    state_set: list[str]
    """stateSet.txt lines as in the file."""
    flights: list[Flight]
    restaurants: list[Restaurant]
    attractions: list[Attraction]
    accommodations: list[Accommodation]
    """Only rows with every field present (the official loader's dropna)."""
    distance_rows: list[Distance]
    """distance.csv rows in file order, duplicates included."""
    source: str = "memory"
    """Where the tables came from: a directory path or 'generated:SEED'."""

    state_cities: dict[str, list[str]] = field(init=False)
    flights_by_route_date: dict[tuple[str, str, str], list[Flight]] = field(init=False)
    flights_by_number: dict[str, Flight] = field(init=False)
    flights_by_route: dict[tuple[str, str], list[Flight]] = field(init=False)
    restaurants_by_city: dict[str, list[Restaurant]] = field(init=False)
    attractions_by_city: dict[str, list[Attraction]] = field(init=False)
    accommodations_by_city: dict[str, list[Accommodation]] = field(init=False)
    distances: dict[tuple[str, str], Distance] = field(init=False)
    _row_cells: object = field(init=False, default=None, repr=False, compare=False)
    """star.sandbox.render.row_cells' cache: the rows' observation pieces, formatted on first use."""

    def __post_init__(self) -> None:
        self.state_cities = defaultdict(list)
        for city, state in self.city_states.items():
            self.state_cities[state].append(city)
        self.state_cities = dict(self.state_cities)
        self.flights_by_route_date = _group(self.flights, lambda f: (f.origin, f.dest, f.date))
        self.flights_by_route = _group(self.flights, lambda f: (f.origin, f.dest))
        self.flights_by_number = {}
        for f in self.flights:
            self.flights_by_number.setdefault(f.number, f)  # first row wins, as in the official lookup
        self.restaurants_by_city = _group(self.restaurants, lambda r: r.city)
        self.attractions_by_city = _group(self.attractions, lambda a: a.city)
        self.accommodations_by_city = _group(self.accommodations, lambda a: a.city)
        self.distances = {}
        for d in self.distance_rows:
            self.distances.setdefault((d.origin, d.dest), d)  # first row wins (reference §2.3)

    # -- small conveniences shared by tools, evaluator, solver -------------------------------
    def state_of(self, city: str) -> str | None:
        return self.city_states.get(city)

    def summary(self) -> dict[str, int]:
        return {
            "cities": len(self.city_states), "states": len(self.state_cities), "flights": len(self.flights),
            "restaurants": len(self.restaurants), "attractions": len(self.attractions),
            "accommodations": len(self.accommodations), "distances": len(self.distances),
        }

    def save(self, root: str | Path) -> Path:
        """Write the tables in the official CSV layout, so `load_database(root)` reads them back."""
        root = Path(root)
        for rel in FILES.values():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
        with _writer(root / FILES["flights"], FLIGHT_COLUMNS) as w:
            for f in self.flights:
                w.writerow([f.number, f.price, f.dep_time, f.arr_time, f.elapsed, f.date, f.origin, f.dest,
                            _num(f.distance)])
        with _writer(root / FILES["restaurants"], [""] + RESTAURANT_COLUMNS) as w:
            for i, r in enumerate(self.restaurants):
                w.writerow([i, r.name, r.city, r.cuisines, r.avg_cost, _num(r.rating)])
        with _writer(root / FILES["attractions"], ATTRACTION_COLUMNS) as w:
            for a in self.attractions:
                w.writerow([a.name, _num(a.latitude), _num(a.longitude), a.address, a.phone, a.website, a.city])
        with _writer(root / FILES["accommodations"], [""] + ACCOMMODATION_COLUMNS) as w:
            for i, a in enumerate(self.accommodations):
                w.writerow([i, a.name, a.room_type, _num(a.price), _num(a.minimum_nights), _num(a.review_rate),
                            a.house_rules, a.maximum_occupancy, a.city])
        with _writer(root / FILES["distances"], DISTANCE_COLUMNS) as w:
            for d in self.distance_rows:
                w.writerow([d.origin, d.dest, "", d.duration or "", d.distance or ""])
        (root / FILES["city_set"]).write_text("".join(c + "\n" for c in self.city_set), encoding="utf-8")
        # No trailing newline: the official evaluator splits on "\n" without stripping.
        (root / FILES["city_states"]).write_text("\n".join(f"{c}\t{s}" for c, s in self.city_states.items()),
                                                 encoding="utf-8")
        (root / FILES["state_set"]).write_text("".join(s + "\n" for s in self.state_set), encoding="utf-8")
        return root


def _num(x: float) -> str:
    return repr(float(x))


class _writer:
    def __init__(self, path: Path, header: list[str]):
        self.path, self.header = path, header

    def __enter__(self):
        self.fh = open(self.path, "w", newline="", encoding="utf-8")
        w = csv.writer(self.fh, lineterminator="\n")
        w.writerow(self.header)
        return w

    def __exit__(self, *exc):
        self.fh.close()


def _group(rows, key) -> dict:
    out: dict = defaultdict(list)
    for r in rows:
        out[key(r)].append(r)
    return dict(out)
