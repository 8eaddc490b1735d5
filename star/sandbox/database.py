"""The TravelPlanner database loaded: from the official CSV layout, or the generated world (star.sandbox.rows
holds its typed rows and indexes; their names are importable from here too).

Every lookup a tool or the evaluator makes is a dictionary access on the indexes built here;
nothing scans a table per call. The official loaders' quirks that change what is *in* the
sandbox are reproduced at load time (reference §1): accommodations drop every row with any
empty field, distance pairs keep their first row.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from star.sandbox.generated import generate_world
from star.sandbox.rows import (
    ACCOMMODATION_COLUMNS,
    ATTRACTION_COLUMNS,
    DISTANCE_COLUMNS,
    FILES,
    FLIGHT_COLUMNS,
    RESTAURANT_COLUMNS,
    Accommodation,
    Attraction,
    Database,
    DatabaseError,
    Distance,
    Flight,
    Restaurant,
)

# -- loading ------------------------------------------------------------------------------------

def _read_csv(root: Path, name: str, required: list[str]) -> list[dict[str, str]]:
    path = root / FILES[name]
    if not path.is_file():
        raise DatabaseError(f"missing database file: {path} (expected the official layout under {root})")
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in required if c not in (reader.fieldnames or [])]
        if missing:
            raise DatabaseError(f"{path}: missing column(s) {missing}; header is {reader.fieldnames}")
        return list(reader)


def _read_lines(root: Path, name: str) -> list[str]:
    path = root / FILES[name]
    if not path.is_file():
        raise DatabaseError(f"missing database file: {path}")
    return path.read_text(encoding="utf-8").split("\n")


def _rows(path_name: str, rows, make):
    out = []
    for i, r in enumerate(rows):
        try:
            out.append(make(r))
        except (ValueError, TypeError) as exc:
            raise DatabaseError(f"{FILES[path_name]} data row {i + 1}: {exc}") from None
    return out


def load_directory(root: str | Path) -> Database:
    """Load a database in the official layout (reference §1) from `root`."""
    root = Path(root)
    if not root.is_dir():
        raise DatabaseError(f"database directory not found: {root}")
    city_states: dict[str, str] = {}
    for line in _read_lines(root, "city_states"):
        if not line.strip():
            continue
        city, _, state = line.partition("\t")
        city_states.setdefault(city, state)
    city_set = [c for c in _read_lines(root, "city_set") if c.strip()]
    state_set = [s for s in _read_lines(root, "state_set") if s.strip()]

    # The official loader drops a flight with any empty field of the 9 columns.
    flights = _rows("flights", (r for r in _read_csv(root, "flights", FLIGHT_COLUMNS)
                                if all(r[c] != "" for c in FLIGHT_COLUMNS)),
                    lambda r: Flight(r["Flight Number"], int(float(r["Price"])), r["DepTime"], r["ArrTime"],
                                     r["ActualElapsedTime"], r["FlightDate"], r["OriginCityName"],
                                     r["DestCityName"], float(r["Distance"])))
    restaurants = _rows("restaurants", (r for r in _read_csv(root, "restaurants", RESTAURANT_COLUMNS)
                                        if all(r[c] != "" for c in RESTAURANT_COLUMNS)),
                        lambda r: Restaurant(r["Name"], r["City"], r["Cuisines"], int(float(r["Average Cost"])),
                                             float(r["Aggregate Rating"])))
    attractions = _rows("attractions", (r for r in _read_csv(root, "attractions", ATTRACTION_COLUMNS)
                                        if all(r[c] != "" for c in ATTRACTION_COLUMNS)),
                        lambda r: Attraction(r["Name"], float(r["Latitude"]), float(r["Longitude"]), r["Address"],
                                             r["Phone"], r["Website"], r["City"]))
    # dropna() over all columns: listings with no house rules are not in the sandbox at all.
    accommodations = _rows("accommodations",
                           (r for r in _read_csv(root, "accommodations", ACCOMMODATION_COLUMNS)
                            if all(v != "" for k, v in r.items() if k)),
                           lambda r: Accommodation(r["NAME"], r["room type"], float(r["price"]),
                                                   float(r["minimum nights"]), float(r["review rate number"]),
                                                   r["house_rules"], int(float(r["maximum occupancy"])), r["city"]))
    distances = [Distance(r["origin"], r["destination"], r["duration"] or None, r["distance"] or None)
                 for r in _read_csv(root, "distances", DISTANCE_COLUMNS)]
    return Database(city_states, city_set, state_set, flights, restaurants, attractions, accommodations,
                    distances, source=str(root))


def resolve_db_spec(spec: str | os.PathLike | None = None) -> str:
    """The database to use: an explicit spec, else $STAR_DB, else the generated world.

    `env:NAME` is the directory in $NAME (a profile names the real database so without a path of
    this machine in params/); unset, it is an error rather than a silent fall-back to another world."""
    if spec is None or str(spec) == "":
        spec = os.environ.get("STAR_DB") or "generated"
    spec = str(spec)
    if spec.startswith("env:"):
        name = spec[4:]
        value = os.environ.get(name, "").strip()
        if not value:
            raise DatabaseError(f"database spec {spec!r}: ${name} is not set; point it at a database directory in "
                                f"the official layout (e.g. export {name}=/path/to/travelplanner/database)")
        return value
    return spec


_CACHE: dict[str, Database] = {}


def load_database(spec: str | os.PathLike | None = None, *, cache: bool = True) -> Database:
    """Load `spec`: a directory in the official layout, `generated` or `generated:SEED`.

    With no spec, $STAR_DB is used, then the generated world (seed 0).
    """
    spec = resolve_db_spec(spec)
    if cache and spec in _CACHE:
        return _CACHE[spec]
    if spec == "generated" or spec.startswith("generated:"):
        _, _, seed = spec.partition(":")
        try:
            seed_value = int(seed) if seed else 0
        except ValueError:
            raise DatabaseError(f"bad database spec {spec!r}: the seed after 'generated:' must be an integer") from None
        db = generate_world(seed_value)
    else:
        db = load_directory(spec)
    if cache:
        _CACHE[spec] = db
    return db
