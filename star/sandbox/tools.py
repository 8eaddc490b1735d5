"""The six TravelPlanner tools over the in-memory database, in `official` or `compact` style.

Every call is a dictionary lookup on the database indexes; the text is joined from each row's
pieces, formatted once per database (`render.row_cells`), and the answer is memoised per
(database, style, tool, arguments) and shared by all toolboxes on that database, so a repeated
search costs one more lookup. A call never raises: a bad call
(unknown tool, wrong arguments, unknown city, bad date or mode) comes back as an observation
with `ok=False` and an error kind, worded as the official ReAct agent words it in `official`
style (reference §3) and as a short, actionable message in `compact` style.
"""

from __future__ import annotations

import difflib
import weakref
from collections.abc import Mapping
from dataclasses import dataclass

from star.sandbox import render
from star.sandbox.config import DEFAULTS
from star.sandbox.rows import Database
from star.sandbox.failures import FailureInjector, unavailable_message

# canonical name -> argument names, in the order the official agent reads them
TOOL_ARGUMENTS: dict[str, tuple[str, ...]] = {
    "SearchCity": ("state",),
    "SearchFlight": ("departure", "destination", "date"),
    "GoogleDistanceMatrix": ("departure", "destination", "mode"),
    "SearchRestaurant": ("city",),
    "SearchAttraction": ("city",),
    "SearchAccommodation": ("city",),
}
# Other argument names accepted for a tool's argument: the STAR paper's schema names the distance
# tool's first argument `departure`; `origin` (this project's earlier schema) still works.
ARGUMENT_ALIASES: dict[str, dict[str, str]] = {"GoogleDistanceMatrix": {"origin": "departure"}}
# the official spellings
ALIASES: dict[str, str] = {
    "CitySearch": "SearchCity", "FlightSearch": "SearchFlight", "RestaurantSearch": "SearchRestaurant",
    "AttractionSearch": "SearchAttraction", "AccommodationSearch": "SearchAccommodation",
}
CANONICAL: dict[str, str] = {**{n: n for n in TOOL_ARGUMENTS}, **ALIASES}

_STRING = {"type": "string"}
TOOL_SPECS: list[dict] = [
    {"name": "SearchCity",
     "description": "List the cities of a US state that the database covers.",
     "parameters": {"type": "object", "properties": {
         "state": {**_STRING, "description": "State name, e.g. Texas"}},
         "required": ["state"], "additionalProperties": False}},
    {"name": "SearchFlight",
     "description": "Flights from one city to another on a date: number, price, times, duration, distance.",
     "parameters": {"type": "object", "properties": {
         "departure": {**_STRING, "description": "Departure city, e.g. Dallas"},
         "destination": {**_STRING, "description": "Destination city, e.g. New York"},
         "date": {**_STRING, "description": "Date as YYYY-MM-DD, e.g. 2022-03-16"}},
         "required": ["departure", "destination", "date"], "additionalProperties": False}},
    {"name": "GoogleDistanceMatrix",
     "description": "Driving duration, distance and cost between two cities by self-driving or taxi.",
     "parameters": {"type": "object", "properties": {
         "departure": {**_STRING, "description": "Departure city, e.g. Houston"},
         "destination": {**_STRING, "description": "Destination city, e.g. Austin"},
         "mode": {**_STRING, "enum": ["self-driving", "taxi"], "description": "self-driving or taxi"}},
         "required": ["departure", "destination", "mode"], "additionalProperties": False}},
    {"name": "SearchRestaurant",
     "description": "Restaurants in a city: name, average cost per person, cuisines, rating.",
     "parameters": {"type": "object", "properties": {"city": {**_STRING, "description": "City name"}},
                    "required": ["city"], "additionalProperties": False}},
    {"name": "SearchAttraction",
     "description": "Attractions in a city: name and address.",
     "parameters": {"type": "object", "properties": {"city": {**_STRING, "description": "City name"}},
                    "required": ["city"], "additionalProperties": False}},
    {"name": "SearchAccommodation",
     "description": ("Accommodations in a city: name, price per night, room type, house rules, "
                     "minimum nights, maximum occupancy, rating."),
     "parameters": {"type": "object", "properties": {"city": {**_STRING, "description": "City name"}},
                    "required": ["city"], "additionalProperties": False}},
]

# The official agent's catch-all message per tool, for calls it cannot even parse (reference §3).
_OFFICIAL_ILLEGAL = {
    "SearchCity": "Illegal City Search. Please try again.",
    "SearchFlight": "Illegal Flight Search. Please try again.",
    "GoogleDistanceMatrix": "Illegal GoogleDistanceMatrix. Please try again.",
    "SearchRestaurant": "Illegal Restaurant Search. Please try again.",
    "SearchAttraction": "Illegal Attraction Search. Please try again.",
    "SearchAccommodation": "Illegal Accommodation Search. Please try again.",
}
STYLES = ("compact", "official")
ERROR_KINDS = ("unknown_tool", "bad_arguments", "bad_date", "unknown_city", "unknown_state", "bad_mode",
               "unavailable", "internal")


@dataclass(frozen=True, slots=True)
class ToolResult:
    """One tool call's outcome: the observation text plus what an agent or teacher may read from it."""

    text: str
    ok: bool
    tool: str | None
    """Canonical tool name, or None when the name is unknown."""
    rows: tuple = ()
    """The typed rows behind the text (Flight, Restaurant, ... ; city names for SearchCity)."""
    error: str | None = None
    """One of ERROR_KINDS, or None."""


_CACHES: dict[tuple[int, str], dict] = {}


def _shared_cache(db: Database, style: str) -> tuple[dict, bool]:
    """One answer cache per (database, style), so toolboxes made per episode share their renders;
    and whether it was made just now (shared with later toolboxes)."""
    key = (id(db), style)
    cache = _CACHES.get(key)
    if cache is not None:
        return cache, False
    try:
        weakref.finalize(db, _CACHES.pop, key, None)  # freed with the database; ids are then reusable
    except TypeError:  # not weak-referenceable: this toolbox keeps a cache of its own
        return {}, False
    cache = _CACHES[key] = {}
    return cache, True


def resolve_tool_name(name: object) -> str | None:
    """Canonical name for either spelling, None when unknown."""
    return CANONICAL.get(name) if isinstance(name, str) else None


class Toolbox:
    """The six tools over one database. `call` gives the text, `run` the full `ToolResult`."""

    def __init__(self, db: Database, style: str = DEFAULTS.style, failure_rate: float = DEFAULTS.failure_rate,
                 seed: int = DEFAULTS.seed, precompute_limit: int = DEFAULTS.precompute_limit):
        if style not in STYLES:
            raise ValueError(f"unknown observation style {style!r}; expected one of {STYLES}")
        self.db = db
        self.style = style
        self.official = style == "official"
        self.failures = FailureInjector(failure_rate, seed)
        self._cache, new_cache = _shared_cache(db, style)
        self._cells = render.row_cells(db)
        self._city_set = frozenset(db.city_set)
        self._city_list_text: str | None = None  # str(citySet list), built on the first city error
        # A small database (the real one: ~2.9K answers, 0.06 s) is rendered whole by its first toolbox,
        # so every call after is one dict lookup; a large one renders each answer on first use.
        self.precompute_limit = precompute_limit
        if new_cache:
            self.prepare()

    # -- public API ------------------------------------------------------------------------------
    def call(self, name: str, arguments: Mapping | None = None) -> str:
        return self.run(name, arguments).text

    def run(self, name: str, arguments: Mapping | None = None) -> ToolResult:
        tool = resolve_tool_name(name)
        if tool is None:
            text = render.INVALID_ACTION if self.official else (
                f"Error: unknown tool {_short(name)}. Available tools: {', '.join(TOOL_ARGUMENTS)}.")
            return ToolResult(text, False, None, (), "unknown_tool")
        if self.failures.should_fail():
            return ToolResult(unavailable_message(name), False, tool, (), "unavailable")
        arguments = _canonical_arguments(tool, arguments)
        problem = self._check_arguments(tool, arguments)
        if problem is not None:
            text = _OFFICIAL_ILLEGAL[tool] if self.official else f"Error: {name} {problem}"
            return ToolResult(text, False, tool, (), "bad_arguments")
        key = (tool, *(arguments[a] for a in TOOL_ARGUMENTS[tool]))
        result = self._cache.get(key)
        if result is None:
            try:
                result = getattr(self, "_" + tool)(*key[1:])
            except Exception as exc:  # a bug here must not end an episode: report it as an observation
                return ToolResult(f"Error: {name} failed: {type(exc).__name__}: {exc}", False, tool, (), "internal")
            if result.rows and result.error is None:  # only answers backed by rows: bounded by the database
                self._cache[key] = result
        return result

    def prepare(self) -> int:
        """Render every answer when the database has at most `precompute_limit` of them; returns how many
        were added (0 for a larger database, whose answers are rendered on first use)."""
        calls = self._answer_calls()
        return self._render_into_cache(calls) if len(calls) <= self.precompute_limit else 0

    def answer_count(self) -> int:
        """How many row-backed answers the database has (city tables and flight route-dates of known cities)."""
        return len(self._answer_calls())

    def _answer_calls(self) -> list[tuple[str, tuple]]:
        """(tool, arguments) of every row-backed answer: the calls whose result `run` memoises."""
        calls = [(tool, (city,)) for tool, index in (("SearchRestaurant", self.db.restaurants_by_city),
                                                     ("SearchAttraction", self.db.attractions_by_city),
                                                     ("SearchAccommodation", self.db.accommodations_by_city))
                 for city in index if city in self._city_set]
        # a flight touching a city outside the city set is an "unknown city" answer, never memoised
        return calls + [("SearchFlight", key) for key in self.db.flights_by_route_date
                        if key[0] in self._city_set and key[1] in self._city_set]

    def precompute(self) -> int:
        """Render every city-table and flight answer into the shared cache (answers are otherwise
        rendered on first use; a render costs about as much as 10 cached calls); returns how many were
        added. Same code path as a call, so the text is identical."""
        return self._render_into_cache(self._answer_calls())

    def _render_into_cache(self, calls: list[tuple[str, tuple]]) -> int:
        added = 0
        for tool, args in calls:
            key = (tool, *args)
            if key in self._cache:
                continue
            result = getattr(self, "_" + tool)(*args)
            if result.rows and result.error is None:  # the same rule as run()'s memo
                self._cache[key] = result
                added += 1
        return added

    def clear_cache(self) -> None:
        """Forget rendered answers (shared by every toolbox on this database and style)."""
        self._cache.clear()

    # -- argument checks -------------------------------------------------------------------------
    @staticmethod
    def _check_arguments(tool: str, arguments: object) -> str | None:
        expected = TOOL_ARGUMENTS[tool]
        if not isinstance(arguments, Mapping):
            return (f"needs a JSON object of arguments {{{', '.join(repr(a) for a in expected)}}}, "
                    f"got {type(arguments).__name__}.")
        missing = [a for a in expected if a not in arguments]
        if missing:
            return (f"is missing argument(s) {', '.join(map(repr, missing))}; "
                    f"it takes {', '.join(map(repr, expected))}.")
        extra = [a for a in arguments if a not in expected]
        if extra:
            return (f"got unexpected argument(s) {', '.join(map(_short, extra[:5]))}; "
                    f"it takes {', '.join(map(repr, expected))}.")
        for a in expected:
            if not isinstance(arguments[a], str):
                value = arguments[a]
                return f"argument {a!r} must be a string, got {type(value).__name__} {_short(value)}."
        return None

    def _unknown_city(self, tool: str, city: str) -> ToolResult:
        if self.official:
            if self._city_list_text is None:
                self._city_list_text = str(list(self.db.city_set))
            text = f"{city} is not valid city in {self._city_list_text}."
        else:
            text = f"Error: unknown city {_short(city)}{_suggestion(city, self.db.city_set)}."
        return ToolResult(text, False, tool, (), "unknown_city")

    # -- the tools (arguments already checked to be strings) --------------------------------------
    def _SearchCity(self, state: str) -> ToolResult:
        cities = self.db.state_cities.get(state)
        if cities is None:
            text = "Invalid State" if self.official else (
                f"Error: unknown state {_short(state)}{_suggestion(state, list(self.db.state_cities))}.")
            return ToolResult(text, False, "SearchCity", (), "unknown_state")
        text = str(list(cities)) if self.official else render.compact_cities(state, cities)
        return ToolResult(text, True, "SearchCity", tuple(cities))

    def _SearchFlight(self, departure: str, destination: str, date: str) -> ToolResult:
        # Same order of checks as the official agent: date format, then each city.
        if not render.DATE_RE.match(date):
            text = (f"'{date}' is not in the format YYYY-MM-DD" if self.official
                    else f"Error: date {_short(date)} is not in the format YYYY-MM-DD.")
            return ToolResult(text, False, "SearchFlight", (), "bad_date")
        for city in (departure, destination):
            if city not in self._city_set:
                return self._unknown_city("SearchFlight", city)
        rows = self.db.flights_by_route_date.get((departure, destination, date), ())
        if not rows:
            return ToolResult(f"There is no flight from {departure} to {destination} on {date}.", True,
                              "SearchFlight")
        text = (self._cells.render_official(render.FLIGHT_TABLE, rows) if self.official
                else render.compact_flights(rows, self._cells.compact_lines(rows)))
        return ToolResult(text, True, "SearchFlight", tuple(rows))

    def _GoogleDistanceMatrix(self, departure: str, destination: str, mode: str) -> ToolResult:
        # The official tool cuts '(State)' suffixes and checks no city; its cost rule defines a valid mode.
        departure, destination = render.before_parenthesis(departure), render.before_parenthesis(destination)
        good_mode = "driving" in mode or mode == "taxi"
        error = None if good_mode else "bad_mode"
        row = self.db.distances.get((departure, destination))
        if not self.official and not good_mode:
            return ToolResult(f"Error: mode must be 'self-driving' or 'taxi', got {_short(mode)}.", False,
                              "GoogleDistanceMatrix", (), "bad_mode")
        rows = (row,) if row is not None else ()
        if not self.official:
            return ToolResult(render.compact_distance(mode, departure, destination, row), True,
                              "GoogleDistanceMatrix", rows)
        if row is None:
            text = f"{mode}, from {departure} to {destination}, no valid information."
        elif not row.duration or not row.distance or "day" in row.duration:
            text = "No valid information."
        else:
            text = (f"{mode}, from {departure} to {destination}, duration: {row.duration}, "
                    f"distance: {row.distance}, cost: {row.cost(mode)}")
        return ToolResult(text, good_mode, "GoogleDistanceMatrix", rows, error)

    def _city_table(self, tool: str, city: str, index: dict, table, compact, what: str, official_empty: str):
        if city not in self._city_set:
            return self._unknown_city(tool, city)
        rows = index.get(city, ())
        if not rows:
            return ToolResult(official_empty if self.official else f"There is no {what} in {city}.", True, tool)
        # The official agent strips these three observations, which drops the header's left padding.
        text = (self._cells.render_official(table, rows).strip() if self.official
                else compact(rows, self._cells.compact_lines(rows)))
        return ToolResult(text, True, tool, tuple(rows))

    def _SearchRestaurant(self, city: str) -> ToolResult:
        return self._city_table("SearchRestaurant", city, self.db.restaurants_by_city, render.RESTAURANT_TABLE,
                                render.compact_restaurants, "restaurant", "There is no restaurant in this city.")

    def _SearchAttraction(self, city: str) -> ToolResult:
        return self._city_table("SearchAttraction", city, self.db.attractions_by_city, render.ATTRACTION_TABLE,
                                render.compact_attractions, "attraction", "There is no attraction in this city.")

    def _SearchAccommodation(self, city: str) -> ToolResult:
        # "attraction" is the official tool's own (copy-pasted) wording for an empty accommodation search.
        return self._city_table("SearchAccommodation", city, self.db.accommodations_by_city,
                                render.ACCOMMODATION_TABLE, render.compact_accommodations, "accommodation",
                                "There is no attraction in this city.")


def _canonical_arguments(tool: str, arguments: object) -> object:
    """`arguments` with alias names renamed to the canonical ones; unchanged when there is nothing to rename,
    or when both spellings are given (then the check reports the alias as an unexpected argument)."""
    aliases = ARGUMENT_ALIASES.get(tool)
    if not aliases or not isinstance(arguments, Mapping) or not any(a in arguments for a in aliases):
        return arguments
    renamed = {aliases.get(k, k): v for k, v in arguments.items()}
    return renamed if len(renamed) == len(arguments) else arguments


def _short(value: object, limit: int = 60) -> str:
    """repr() cut to `limit` characters: a model's runaway argument must not flood the context."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _suggestion(value: str, candidates: list[str]) -> str:
    """' (did you mean 'X'?)' for a near miss, else ''. Only runs on the error path."""
    if len(value) > 100:
        return ""
    stripped = render.before_parenthesis(value).strip()
    lowered = {c.lower(): c for c in candidates}
    match = lowered.get(stripped.lower())
    if match is None:
        close = difflib.get_close_matches(stripped, candidates, n=1, cutoff=0.8)
        match = close[0] if close else None
    return f" (did you mean {match!r}?)" if match is not None and match != value else ""
