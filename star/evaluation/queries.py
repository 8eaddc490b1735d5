"""Query records: load JSONL or the official CSV layout and normalise the official fields.

The official CSV stores `date` and `local_constraint` as Python-literal strings; they are read
with `json.loads` or `ast.literal_eval` (never `eval`). Every official field is kept as given
apart from these type normalisations.
"""

from __future__ import annotations

import ast
import csv
import json
import sys
from pathlib import Path

from star.jsonl import open_text, parse_lines

LOCAL_KEYS = ("house rule", "cuisine", "room type", "transportation")
INT_FIELDS = ("days", "people_number", "budget", "visiting_city_number")


class QueryError(ValueError):
    """A query file or record is malformed; the message names the file, line and field."""


def _literal(value, field: str):
    """A JSON or Python-literal string as a value; other values pass through."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not text or text[0] not in "[{(" and text not in ("None", "null"):
        return value  # a bare value such as a single date
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError) as exc:
        raise QueryError(f"field {field!r}: not a JSON or Python literal: {text[:80]!r} ({exc})") from None


def normalize_query(record: dict) -> dict:
    """The record with `date` a list, `local_constraint` a dict of the four keys, integer counts."""
    if not isinstance(record, dict):
        raise QueryError(f"a query must be an object, got {type(record).__name__}")
    q = dict(record)
    for key in ("org", "dest", "days"):
        if key not in q:
            raise QueryError(f"query is missing the field {key!r}")
    if "date" in q:
        dates = _literal(q["date"], "date")
        if isinstance(dates, str):
            dates = [dates]
        if not isinstance(dates, (list, tuple)):
            raise QueryError(f"field 'date': expected a list of dates, got {dates!r}")
        q["date"] = [str(d) for d in dates]
    lc = _literal(q.get("local_constraint") or {}, "local_constraint")
    if not isinstance(lc, dict):
        raise QueryError(f"field 'local_constraint': expected an object, got {lc!r}")
    q["local_constraint"] = {k: lc.get(k) for k in LOCAL_KEYS} | {k: v for k, v in lc.items() if k not in LOCAL_KEYS}
    for key in INT_FIELDS:
        if key in q and q[key] is not None:
            try:
                value = float(q[key])
            except (TypeError, ValueError):
                raise QueryError(f"field {key!r}: not a number: {q[key]!r}") from None
            q[key] = int(value) if value == int(value) else value
    if "people_number" not in q:
        q["people_number"] = 1
    if "visiting_city_number" not in q:
        q["visiting_city_number"] = {3: 1, 5: 2, 7: 3}.get(q["days"], 1)
    return q


def load_queries(path: str | Path) -> list[dict]:
    """Normalised queries from a JSONL file or an official-layout CSV; errors name file and line."""
    path = Path(path)
    if not path.is_file():
        raise QueryError(f"query file not found: {path}")
    out: list[dict] = []
    if path.suffix.lower() == ".csv":
        csv.field_size_limit(sys.maxsize)  # reference_information cells are megabytes long
        with open(path, newline="", encoding="utf-8") as fh:
            for n, row in enumerate(csv.DictReader(fh), start=2):
                try:
                    out.append(normalize_query(row))
                except QueryError as exc:
                    raise QueryError(f"{path}: row at line {n}: {exc}") from None
        return out
    with open_text(path) as fh:
        for n, record, bad in parse_lines(fh):
            if bad is not None:
                raise QueryError(f"{path}:{n}: malformed JSON ({bad.msg})")
            try:
                out.append(normalize_query(record))
            except QueryError as exc:
                raise QueryError(f"{path}:{n}: {exc}") from None
    return out


def parse_ratio(text: str | list | tuple) -> tuple[float, float, float]:
    """'4:3:3' (or a 3-sequence) -> normalised easy/medium/hard shares; ValueError names the problem."""
    parts = text.split(":") if isinstance(text, str) else list(text)
    if len(parts) != 3:
        raise ValueError(f"level ratio {text!r}: expected three parts easy:medium:hard, e.g. 4:3:3")
    try:
        values = [float(p) for p in parts]
    except (TypeError, ValueError):
        raise ValueError(f"level ratio {text!r}: parts must be numbers") from None
    if any(v < 0 for v in values) or sum(values) <= 0:
        raise ValueError(f"level ratio {text!r}: parts must be >= 0 and not all zero")
    total = sum(values)
    return tuple(v / total for v in values)  # type: ignore[return-value]
