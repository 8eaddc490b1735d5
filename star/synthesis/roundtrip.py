"""Round-trip check: read the key facts back out of a query text and compare with its elements.

The parser knows nothing of which template produced a text; it reads cue words (numbers of
days and people, dollar amounts, month-day dates, house-rule / room / cuisine / transport
phrases) and the place names of the database, so it also reads most official queries.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Iterable

from star.sandbox.rows import CUISINES, Database

WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "single": 1}
_NUM = r"(\d+|one|two|three|four|five|six|seven|eight|nine|ten)"
MONTHS = {m: i for i, m in enumerate(["January", "February", "March", "April", "May", "June", "July", "August",
                                      "September", "October", "November", "December"], 1)}

ORG_CUES = re.compile(r"(from|leaving|departing|depart|starting|start|beginning|begin|commencing|out of|"
                      r"based in|origin)\W*(from|in|at)?\s*$", re.I)


def _n(tok: str) -> int:
    return int(tok) if tok.isdigit() else WORD_NUMBERS[tok.lower()]


def _places_regex(places: Iterable[str]) -> re.Pattern:
    names = sorted({p for p in places if p}, key=len, reverse=True)
    return re.compile(r"(?<![\w])(" + "|".join(re.escape(n) for n in names) + r")(?![\w])")


_PLACE_CACHE: dict[int, tuple[object, re.Pattern]] = {}


def places_of(db: Database) -> re.Pattern:
    hit = _PLACE_CACHE.get(id(db))
    if hit is None or hit[0] is not db:
        hit = (db, _places_regex(list(db.city_states) + list(db.state_cities)))
        _PLACE_CACHE[id(db)] = hit
    return hit[1]  # type: ignore[return-value]


def _find_route(text: str, pattern: re.Pattern | None) -> tuple[str | None, str | None]:
    if pattern is None:
        # Without a gazetteer: capitalised phrases after the usual cues.
        org = re.search(r"\b(?:from|leaving|in)\s+((?:[A-Z][\w.'-]*\s?)+)", text)
        dest = re.search(r"\b(?:to|in|across|for|visit to)\s+((?:[A-Z][\w.'-]*\s?)+)", text[org.end():] if org else text)
        return (org.group(1).strip() if org else None, dest.group(1).strip() if dest else None)
    found = [(m.start(), m.group(1)) for m in pattern.finditer(text)]
    distinct = list(dict.fromkeys(name for _, name in found))
    if not distinct:
        return None, None
    org = None
    for start, name in found:
        if ORG_CUES.search(text[max(0, start - 30):start]):
            org = name
            break
    if org is None:
        org = distinct[0]
    others = [n for n in distinct if n != org]
    if not others and sum(name == org for _, name in found) >= 2:
        return org, org  # e.g. from Washington (the city) to cities in Washington (the state)
    return org, (others[0] if others else None)


def _cities_number(text: str) -> int | None:
    m = re.search(_NUM + r"\s+(?:different\s+|distinct\s+|unique\s+)?cities", text, re.I)
    return _n(m.group(1)) if m else None


def _people(text: str) -> int | None:
    low = text.lower()
    for pat in (r"group of " + _NUM, r"party of " + _NUM,
                _NUM + r" (?:people|persons?|travell?ers?|individuals?|adults?|guests?)\b",
                r"\bfor " + _NUM + r" of us"):
        m = re.search(pat, low)
        if m:
            return _n(m.group(1))
    if re.search(r"\b(couple|two of us)\b", low):
        return 2
    # The benchmark leaves a single traveller implicit more often than not.
    return 1


def _dates(text: str) -> list[str]:
    out = []
    year = re.search(r"\b(20\d\d)\b", text)
    y = int(year.group(1)) if year else 2022
    for m in re.finditer(r"\b(" + "|".join(MONTHS) + r")\s+(\d{1,2})(?:st|nd|rd|th)?\b", text):
        out.append(date(y, MONTHS[m.group(1)], int(m.group(2))).isoformat())
    return out


def _span(dates: list[str]) -> int | None:
    if len(dates) < 2:
        return None
    return (date.fromisoformat(dates[-1]) - date.fromisoformat(dates[0])).days + 1


def _house_rule(low: str) -> str | None:
    if "smok" in low:
        return "smoking"
    if re.search(r"\bparties\b|\bparty\b(?! of)", low):
        return "parties"
    if re.search(r"\b(children|kids) under (the age of )?10\b", low):
        return "children under 10"
    if re.search(r"\bvisitors?\b", low):
        return "visitors"
    if re.search(r"\bpets?\b|pet-friendly", low):
        return "pets"
    return None


def _room_type(low: str) -> str | None:
    if re.search(r"non-shared|rooms? that (are|is) not shared", low):
        return "not shared room"
    if re.search(r"shared room", low):
        if re.search(r"(not|n't|no|anything but|other than|except)\b[^.]{0,25}shared room", low):
            return "not shared room"
        return "shared room"
    if re.search(r"private room", low):
        return "private room"
    if re.search(r"\bentire (rooms?|homes?|places?|apartments?|units?|house)\b|\bentire room", low):
        return "entire room"
    return None


def _transport(low: str) -> str | None:
    if re.search(r"self-driv|\bdrive\b|\bdriving\b", low):
        return "no self-driving"
    if re.search(r"\bfl(y|ying|ights?)\b|airline|\bplanes?\b", low):
        return "no flight"
    return None


def extract_facts(text: str, places: re.Pattern | Iterable[str] | Database | None = None) -> dict:
    """Facts read from a query text: org, dest, days, visiting_city_number, people_number, budget,
    date (first and last mentioned), local_constraint. Unreadable facts are None."""
    if isinstance(places, Database):
        pattern = places_of(places)
    elif places is None or isinstance(places, re.Pattern):
        pattern = places
    else:
        pattern = _places_regex(places)
    org, dest = _find_route(text, pattern)
    low = text.lower()
    days_m = re.search(_NUM + r"[- ]days?\b", low) or re.search(r"\bof " + _NUM + r" days\b", low)
    dates = _dates(text)
    budget_m = re.search(r"\$\s?([\d,]+(?:\.\d+)?)", text)
    # Place names can contain cuisine words (Indianapolis); scan the text without them.
    scrub = text
    for p in (org, dest):
        if p:
            scrub = scrub.replace(p, " ")
    cuisines = [c for c in CUISINES if re.search(rf"\b{c}\b", scrub)]
    order = sorted(cuisines, key=lambda c: scrub.find(c))
    return {
        "org": org,
        "dest": dest,
        "days": _n(days_m.group(1)) if days_m else _span(dates),
        "visiting_city_number": _cities_number(text),
        "people_number": _people(text),
        "budget": int(float(budget_m.group(1).replace(",", ""))) if budget_m else None,
        "date": dates,
        "local_constraint": {
            "house rule": _house_rule(low),
            "cuisine": order or None,
            "room type": _room_type(low),
            "transportation": _transport(low),
        },
    }


def mismatches(query: dict, text: str | None = None, places=None) -> list[str]:
    """Fields whose value read back from the text differs from the query's; empty when it round-trips."""
    text = query.get("query", "") if text is None else text
    got = extract_facts(text, places)
    bad = []
    for key in ("org", "dest", "days", "people_number", "budget"):
        if got[key] != query[key]:
            bad.append(f"{key}: text says {got[key]!r}, elements {query[key]!r}")
    days = int(query["days"])
    if days > 3 and got["visiting_city_number"] != int(query["visiting_city_number"]):
        bad.append(f"visiting_city_number: text says {got['visiting_city_number']!r}, "
                   f"elements {query['visiting_city_number']!r}")
    dates = list(query["date"])
    if not got["date"] or got["date"][0] != dates[0] or got["date"][-1] != dates[-1]:
        bad.append(f"date: text says {got['date']!r}, elements {dates[0]}..{dates[-1]}")
    lc = query.get("local_constraint") or {}
    for key in ("house rule", "room type", "transportation"):
        if got["local_constraint"][key] != lc.get(key):
            bad.append(f"{key}: text says {got['local_constraint'][key]!r}, elements {lc.get(key)!r}")
    want_c = sorted(lc.get("cuisine") or [])
    have_c = sorted(got["local_constraint"]["cuisine"] or [])
    if want_c != have_c:
        bad.append(f"cuisine: text says {have_c!r}, elements {want_c!r}")
    return bad
