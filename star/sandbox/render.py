"""Observation text: the official pandas tables byte for byte, and the compact one-line-per-row form.

`render_table` reproduces `DataFrame.to_string(index=False)` for the tables the official tools
return (string, int and float columns, no missing values) without importing pandas: it follows
pandas' rules for float columns (6 significant decimals, trailing zeros trimmed equally across
the column, scientific notation for tiny or huge values), the leading space pandas puts in
front of numeric column headers, right-justification of every cell, escaped control
characters and one space between columns. Tests pin it against real pandas.

The compact renderers carry the information a plan is made from, in far fewer tokens, for agents
whose context budget matters: flights as numbered lines (the paper's format) without the repeated
date and route, city tables as a header line naming the columns once and one numbered,
tab-separated row per line without the repeated city column or the padding (see below). Every
field a plan names or a check reads is kept; attractions keep name and address but not the
coordinates, phone number and website (read by no check, and two thirds of an attraction table's
tokens).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import repeat
from math import copysign
from operator import attrgetter as _at

from star.sandbox.rows import Accommodation, Attraction, Distance, Flight, Restaurant

STR, INT, FLOAT = "str", "int", "float"

# (header, kind, getter) for each official table, in the official column order (reference §2.2-2.6).
Column = tuple[str, str, Callable]


class Table(list):
    """An official table's columns, plus one getter that reads a whole row in a single C call."""

    def __init__(self, columns: Sequence[tuple[str, str, str]]):
        super().__init__((header, kind, _at(attr)) for header, kind, attr in columns)
        self.row = _at(*(attr for _, _, attr in columns))
        self.kinds = tuple(kind for _, kind, _ in columns)
        self.headers = tuple(header if kind is STR else " " + header  # pandas pads numeric headers by one space
                             for header, kind, _ in columns)


FLIGHT_TABLE = Table([
    ("Flight Number", STR, "number"), ("Price", INT, "price"), ("DepTime", STR, "dep_time"),
    ("ArrTime", STR, "arr_time"), ("ActualElapsedTime", STR, "elapsed"), ("FlightDate", STR, "date"),
    ("OriginCityName", STR, "origin"), ("DestCityName", STR, "dest"), ("Distance", FLOAT, "distance"),
])
RESTAURANT_TABLE = Table([
    ("Name", STR, "name"), ("Average Cost", INT, "avg_cost"), ("Cuisines", STR, "cuisines"),
    ("Aggregate Rating", FLOAT, "rating"), ("City", STR, "city"),
])
ATTRACTION_TABLE = Table([
    ("Name", STR, "name"), ("Latitude", FLOAT, "latitude"), ("Longitude", FLOAT, "longitude"),
    ("Address", STR, "address"), ("Phone", STR, "phone"), ("Website", STR, "website"), ("City", STR, "city"),
])
ACCOMMODATION_TABLE = Table([
    ("NAME", STR, "name"), ("price", FLOAT, "price"), ("room type", STR, "room_type"),
    ("house_rules", STR, "house_rules"), ("minimum nights", FLOAT, "minimum_nights"),
    ("maximum occupancy", INT, "maximum_occupancy"), ("review rate number", FLOAT, "review_rate"), ("city", STR, "city"),
])

_DIGITS = 6  # pandas display.precision
_FIXED = f"{{:.{_DIGITS}f}}"
_EXP = f"{{:.{_DIGITS}e}}"
_TINY = 10 ** -_DIGITS
_HUGE = 1e6


class _Memo(dict):
    """value -> fn(value), memoised: a dict hit is far cheaper than formatting a float again."""

    def __init__(self, fn: Callable[[float], object]):
        super().__init__()
        self.fn = fn

    def __missing__(self, value: float):
        if value != value:  # NaN never equals itself: storing it would add an entry per lookup
            return self.fn(value)
        result = self[value] = self.fn(value)  # never reached by -0.0 (see format_float_column)
        return result


def _trailing_zeros(value: float) -> int:
    text = _FIXED.format(value)
    return min(_DIGITS - 1, len(text) - len(text.rstrip("0")))


_zeros = _Memo(_trailing_zeros)
# _trimmed[k][v]: v in six decimals with k trailing zeros cut
_trimmed = [_Memo(lambda v, k=k: _FIXED.format(v)[:len(_FIXED.format(v)) - k]) for k in range(_DIGITS)]
_ESCAPES = str.maketrans({"\t": "\\t", "\r": "\\r", "\n": "\\n"})  # pandas escapes these in cells


def format_float_column(values: Sequence[float]) -> list[str]:
    """Cells of one float column as pandas prints them (FloatArrayFormatter, fixed width, no NaN)."""
    # Six decimals, then the trailing zeros every cell has are cut (one decimal always stays).
    if 0.0 in values and _has_negative_zero(values):
        # -0.0 equals 0.0 as a dict key yet prints as "-0.0": keep it away from the memos
        cells = _trim_plain(list(map(_FIXED.format, values)))
    else:
        cells = list(map(_trimmed[min(map(_zeros.__getitem__, values))].__getitem__, values))
    # pandas switches to the exponent form for any tiny non-zero value (it would print as zero): more
    # values under 1e-6 in size than zeros. Or for any value beyond a million when the widest trimmed
    # cell is long.
    if sum(map(_TINY.__gt__, map(abs, values))) > values.count(0.0) or (
            max(map(len, cells)) > _DIGITS + 6 and (max(values) > _HUGE or min(values) < -_HUGE)):
        return list(map(_EXP.format, values))  # pandas does not trim the exponent form
    return cells


def _has_negative_zero(values: Sequence[float]) -> bool:
    if min(values) >= 0:  # then a negative sign can only be a -0.0's; map(copysign) runs in C
        return min(map(copysign, repeat(1.0), values)) < 0
    return any(v == 0 and copysign(1.0, v) < 0 for v in values)


def _trim_plain(cells: list[str]) -> list[str]:
    trim = min(_DIGITS - 1, min(len(c) - len(c.rstrip("0")) for c in cells))
    return [c[:len(c) - trim] for c in cells]


def format_column(kind: str, values: Sequence) -> Sequence[str]:
    if kind is FLOAT:
        return format_float_column(values)
    if kind is INT:
        return list(map(str, values))
    joined = "".join(values)
    if "\n" in joined or "\t" in joined or "\r" in joined:
        return [v.translate(_ESCAPES) for v in values]
    return values


def render_table(columns: Sequence[Column], rows: Sequence) -> str:
    """`DataFrame.to_string(index=False)` of `rows` projected on `columns` (at least one row)."""
    get_row = getattr(columns, "row", None)
    values = list(zip(*map(get_row, rows))) if get_row is not None else [list(map(c[2], rows)) for c in columns]
    headers, cells = [], []
    for (header, kind, _), column in zip(columns, values):
        cells.append(format_column(kind, column))
        headers.append(header if kind is STR else " " + header)  # pandas pads numeric headers by one space
    # Every cell right-justified to its column's width, one space between columns: one %-format per line.
    line = " ".join(["%" + str(max(len(h), max(map(len, c)))) + "s" for h, c in zip(headers, cells)])
    return "\n".join(map(line.__mod__, [tuple(headers), *zip(*cells)]))


# -- compact style -------------------------------------------------------------------------------

def _num(x: float) -> str:
    """A float without a useless '.0' (2.0 -> '2', 4.5 -> '4.5')."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def compact_flight_line(f: Flight) -> str:
    """One flight without its list number (the issue's example line)."""
    return (f"[{f.number}] ${f.price}. Departure: {f.dep_time}, Arrival: {f.arr_time}, "
            f"Actual Elapsed Time: {f.elapsed}, Distance: {f.distance!r} miles")


def compact_flights(rows: Sequence[Flight], lines: Sequence[str] | None = None) -> str:
    return "\n".join(map("%d. %s".__mod__, enumerate(map(compact_flight_line, rows) if lines is None else lines, 1)))


# A city table is one header line naming the columns once, then one numbered row per line with bare
# values, tab-separated: a tab never occurs in a cell (`_cell` flattens it) while "|" occurs in real names.
# A text cell starts with a space and a number does not, which is what tokenizes cheapest (SmolLM2
# has " Chicago" as one token, but a space before a digit is a token of its own) and gives a name
# the same tokens as in a plan ("Lunch: Coco Bambu, Austin"). The city column is left out (it is
# the search argument); floats lose a useless ".0".
RESTAURANT_HEADER = "name\taverage cost\tcuisines\trating"
ATTRACTION_HEADER = "name\taddress"
ACCOMMODATION_HEADER = "name\tprice per night\troom type\thouse rules\tminimum nights\tmaximum occupancy\trating"


def compact_restaurant_line(r: Restaurant) -> str:
    return f" {_cell(r.name)}\t{r.avg_cost}\t {_cell(r.cuisines)}\t{_num(r.rating)}"


def compact_attraction_line(a: Attraction) -> str:
    # Coordinates (a token per digit), phone and website stay in the official style only.
    return f" {_cell(a.name)}\t {_cell(a.address)}"


def compact_accommodation_line(a: Accommodation) -> str:
    return (f" {_cell(a.name)}\t{_num(a.price)}\t {_cell(a.room_type)}\t {_cell(a.house_rules)}\t"
            f"{_num(a.minimum_nights)}\t{a.maximum_occupancy}\t{_num(a.review_rate)}")


def _numbered_table(header: str, lines) -> str:
    # "1. Coco Bambu\t33...": the row's leading space follows the number, as in the flight lines
    return header + "\n" + "\n".join(map("%d.%s".__mod__, enumerate(lines, 1)))


def compact_restaurants(rows: Sequence[Restaurant], lines: Sequence[str] | None = None) -> str:
    return _numbered_table(RESTAURANT_HEADER, map(compact_restaurant_line, rows) if lines is None else lines)


def compact_attractions(rows: Sequence[Attraction], lines: Sequence[str] | None = None) -> str:
    return _numbered_table(ATTRACTION_HEADER, map(compact_attraction_line, rows) if lines is None else lines)


def compact_accommodations(rows: Sequence[Accommodation], lines: Sequence[str] | None = None) -> str:
    return _numbered_table(ACCOMMODATION_HEADER, map(compact_accommodation_line, rows) if lines is None else lines)


def compact_cities(state: str, cities: Sequence[str]) -> str:
    return f"Cities in {state}: " + ", ".join(cities)


def compact_distance(mode: str, origin: str, dest: str, row: Distance | None) -> str:
    if row is None:  # the pair is not in the matrix, whatever the mode
        return f"No route data from {origin} to {dest}."
    cost = row.cost(mode)
    if cost is None:  # empty entry, or a drive over a day: invalid for both modes, as the official tool says
        return "No valid route."
    return f"{mode} from {origin} to {dest}: {row.duration}, {row.distance}, ${cost}"


def _cell(text: str) -> str:
    """One-line text without tabs: a line break or tab in a name must not break the row layout."""
    return " ".join(text.split()) if ("\n" in text or "\r" in text or "\t" in text) else text


# -- per-row pieces, built once per database ------------------------------------------------------

class RowCells:
    """Each row's pieces of both styles, formatted once for a whole database (column by column), so
    that a call only looks its rows up, pads and joins: an official float cell is kept as its integer
    part and its six decimals, and the column's trailing-zero cut and right-justification become one
    %-format per line (`%{width}s.%.{decimals}s`). Rows are keyed by id() and held, so an id is never
    reused while its entry lives; a row not found here (or a float pandas would print in exponent
    form) is rendered by the generic functions above, with the same result."""

    def __init__(self, db) -> None:
        self.official: dict[int, tuple] = {}
        """id(row) -> (row, %-format arguments, trailing zeros per float column, needs the generic path)."""
        self.compact: dict[int, tuple] = {}
        """id(row) -> (row, compact line; flights without their list number)."""
        for table, line, rows in ((FLIGHT_TABLE, compact_flight_line, db.flights),
                                  (RESTAURANT_TABLE, compact_restaurant_line, db.restaurants),
                                  (ATTRACTION_TABLE, compact_attraction_line, db.attractions),
                                  (ACCOMMODATION_TABLE, compact_accommodation_line, db.accommodations)):
            if rows:
                ids = list(map(id, rows))
                self.official.update(zip(ids, _official_entries(table, rows)))
                self.compact.update(zip(ids, zip(rows, map(line, rows))))

    def render_official(self, table: Table, rows: Sequence) -> str:
        """`render_table(table, rows)`, from the pre-formatted pieces."""
        entries = list(map(self.official.get, map(id, rows)))
        if None in entries:
            return render_table(table, rows)
        _, args, zeros, generic = zip(*entries)
        if True in generic:
            return render_table(table, rows)
        columns = list(zip(*args))
        cuts = list(map(min, zip(*zeros)))  # per float column: the trailing zeros every cell has
        specs, head, i, f = [], [], 0, 0
        for header, kind in zip(table.headers, table.kinds):
            if kind is FLOAT:
                decimals = _DIGITS - cuts[f]
                width = max(len(header), max(map(len, columns[i])) + 1 + decimals)
                specs.append(f"%{width - 1 - decimals}s.%.{decimals}s")
                i, f = i + 2, f + 1
            else:
                width = max(len(header), max(map(len, columns[i])))
                specs.append(f"%{width}s")
                i += 1
            head.append(header.rjust(width))
        return " ".join(head) + "\n" + "\n".join(map(" ".join(specs).__mod__, args))

    def compact_lines(self, rows: Sequence) -> list[str] | None:
        """The rows' compact lines, or None when a row is not in this database's tables."""
        entries = list(map(self.compact.get, map(id, rows)))
        return None if None in entries else [e[1] for e in entries]


def _official_entries(table: Table, rows: Sequence) -> list[tuple]:
    """Per row: (row, %-format arguments, trailing zeros per float column, needs the generic path)."""
    pieces, zeros, risky = [], [], []
    for kind, column in zip(table.kinds, zip(*map(table.row, rows))):
        if kind is FLOAT:
            fixed = list(map(_FIXED.format, column))  # "-0.000000" for -0.0: no memo, no dict-key clash
            pieces += [[c[:-_DIGITS - 1] for c in fixed], [c[-_DIGITS:] for c in fixed]]
            zeros.append([min(_DIGITS - 1, _DIGITS - len(c[-_DIGITS:].rstrip("0"))) for c in fixed])
            # pandas' exponent form (tiny non-zero or huge values), NaN and inf take the generic path
            risky.append([not (v == 0 or _TINY <= abs(v) <= _HUGE) for v in column])
        else:
            pieces.append(format_column(kind, list(column)))
    no_zeros = [()] * len(rows)
    return list(zip(rows, zip(*pieces), list(zip(*zeros)) or no_zeros,
                    list(map(any, zip(*risky))) if risky else [False] * len(rows)))


# -- the official agent's argument-validation messages (reference §3) ------------------------------

INVALID_ACTION = ("Invalid Action. Valid Actions are  FlightSearch[Departure City, Destination City, Date] / "
                  "AccommodationSearch[City] /  RestaurantSearch[City] / NotebookWrite[Short Description] / "
                  "AttractionSearch[City] / CitySearch[State] / GoogleDistanceMatrix[Origin, Destination, Mode] "
                  "and Planner[Query].")
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")  # the official agent's check, `re.match` semantics kept
_PAREN_RE = re.compile(r"^(.*?)\([^)]*\)")


def before_parenthesis(text: str) -> str:
    """The official `extract_before_parenthesis`: 'San Antonio(Texas)' -> 'San Antonio'."""
    m = _PAREN_RE.search(text)
    return m.group(1) if m else text


def row_cells(db) -> "RowCells":
    """Every row's observation pieces in both styles, formatted on first use (the first `Toolbox` of a
    database) and kept on it, so a tool call only looks rows up, pads and joins. Not built at load: the
    evaluator and synthesis read the database without rendering tool text."""
    if db._row_cells is None:
        db._row_cells = RowCells(db)
    return db._row_cells
