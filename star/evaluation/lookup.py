"""Resolving plan entries to database rows, the two ways the evaluator modes need.

`official`: a row matches when its name *contains* the plan's name (literal, case-sensitive)
and its city equals the plan's city exactly; attributes come from the first match in file order
(reference §4.2). `strict`: name and city must be equal after stripping and case-folding.

Every lookup is a dictionary access on the database's per-city indexes plus, for the substring
rule, a scan of that one city's rows (tens of rows), memoised per (name, city).
"""

from __future__ import annotations

from collections import defaultdict

from star.sandbox.rows import Accommodation, Attraction, Database, Flight, Restaurant


def _norm(s: str) -> str:
    return " ".join(s.split()).casefold()


class Lookup:
    """Row resolution for one database (build once with `Lookup.for_db`)."""

    _instances: dict[int, tuple[Database, "Lookup"]] = {}

    def __init__(self, db: Database):
        self.db = db
        self._memo: dict[tuple, list] = {}
        # Built on first use: official-mode runs never pay for the strict index and vice versa.
        self._flights_by_number: dict[str, list[Flight]] | None = None
        self._exact: dict[str, dict[tuple[str, str], list]] = {}

    def _exact_index(self, table: str) -> dict[tuple[str, str], list]:
        index = self._exact.get(table)
        if index is None:
            grouped: dict[tuple[str, str], list] = defaultdict(list)
            for r in getattr(self.db, table):
                grouped[(_norm(r.name), _norm(r.city))].append(r)
            index = self._exact[table] = dict(grouped)
        return index

    @classmethod
    def for_db(cls, db: Database) -> "Lookup":
        """The shared Lookup of `db` (indexes are built on first use)."""
        hit = cls._instances.get(id(db))
        if hit is None or hit[0] is not db:
            hit = (db, cls(db))
            cls._instances[id(db)] = hit
        return hit[1]

    # -- official rule: substring name, exact city, file order -------------------------------------
    def _substring(self, table: str, by_city: dict, name: str, city: str) -> list:
        key = (table, name, city)
        hit = self._memo.get(key)
        if hit is None:
            hit = [r for r in by_city.get(city, ()) if name in r.name]
            self._memo[key] = hit
        return hit

    def restaurants(self, name: str, city: str) -> list[Restaurant]:
        return self._substring("restaurants", self.db.restaurants_by_city, name, city)

    def attractions(self, name: str, city: str) -> list[Attraction]:
        return self._substring("attractions", self.db.attractions_by_city, name, city)

    def accommodations(self, name: str, city: str) -> list[Accommodation]:
        return self._substring("accommodations", self.db.accommodations_by_city, name, city)

    # -- strict rule: equal after strip + casefold -------------------------------------------------
    def exact(self, table: str, name: str, city: str) -> list:
        """Rows of `table` whose name and city equal the given ones (case-insensitive, stripped)."""
        return self._exact_index(table).get((_norm(name), _norm(city)), [])

    # -- flights and distances ---------------------------------------------------------------------
    def flights_numbered(self, number: str) -> list[Flight]:
        """Every row with this exact flight number, in file order."""
        if self._flights_by_number is None:
            grouped: dict[str, list[Flight]] = defaultdict(list)
            for f in self.db.flights:
                grouped[f.number].append(f)
            self._flights_by_number = dict(grouped)
        return self._flights_by_number.get(number, [])

    def flight_on_route(self, number: str, origin: str, dest: str) -> bool:
        """Official sandbox test: some row has this number, origin and destination (exact)."""
        return any(f.origin == origin and f.dest == dest for f in self.flights_numbered(number))

    def distance_cost(self, origin: str, dest: str, mode: str) -> int | None:
        """The official distance-matrix cost (first row of the pair), None when absent or invalid."""
        row = self.db.distances.get((origin, dest))
        return None if row is None else row.cost(mode)
