"""Re-certification of one query record: well-formed, solvable within budget, reference plan valid, text faithful."""

from __future__ import annotations

from star.sandbox.rows import Database
from star.synthesis.pipeline import QueryFileError, certify, normalize, query_id
from star.synthesis.config import LEVELS
from star.synthesis.roundtrip import mismatches, places_of
from star.synthesis.solver import plan_cost, solve

REQUIRED = ("org", "dest", "days", "date", "people_number", "local_constraint", "budget", "query", "level")


def validate_record(db: Database, rec: dict, where: str = "") -> tuple[dict | None, list[str]]:
    """(record to keep, []) or (None, problems). A missing reference plan is replaced by the solver's."""
    missing = [k for k in REQUIRED if k not in rec]
    if missing:
        return None, [f"schema: missing field(s) {missing}"]
    try:
        q = normalize(rec, where)
    except QueryFileError as exc:
        return None, [f"schema: {exc}"]
    if "id" not in q:  # official files have no ids; give each a stable one from its elements
        q["source"] = q.get("source", "official")
        q["id"] = f"{q['source']}-{query_id(q)[4:]}"
    q.pop("reference_information", None)  # official split's long tables are not part of our records
    if q["days"] not in (3, 5, 7):
        return None, [f"schema: days must be 3, 5 or 7, got {q['days']!r}"]
    if q["level"] not in LEVELS:
        return None, [f"schema: unknown level {q['level']!r}"]
    if not isinstance(q["people_number"], int) or q["people_number"] < 1:
        return None, [f"schema: people_number must be a positive integer, got {q['people_number']!r}"]
    cuisine = q["local_constraint"].get("cuisine")
    if cuisine is not None and not (isinstance(cuisine, list) and all(isinstance(c, str) for c in cuisine)):
        return None, [f"schema: cuisine must be a list of names, got {cuisine!r}"]
    if not isinstance(q["date"], list) or len(q["date"]) != q["days"]:
        return None, [f"schema: date has {len(q['date']) if isinstance(q['date'], list) else '?'} entries "
                      f"for {q['days']} days"]
    res = solve(db, q, q["budget"])
    if not res.ok:
        return None, [f"solver: {res.status} ({res.reason})"]
    problems = []
    plan = q.get("reference_plan")
    if plan:
        try:
            cost = plan_cost(db, q, plan)
        except (KeyError, AttributeError, IndexError, ValueError, TypeError) as exc:
            problems.append(f"reference_plan: not priceable in this database ({type(exc).__name__}: {exc})")
            cost = None
        if cost is not None and cost > q["budget"]:
            problems.append(f"reference_plan: costs {cost:g} > budget {q['budget']}")
        problems += [f"evaluator: {p}" for p in certify(db, q, plan)]
        if problems:
            return None, problems
        q["reference_cost"] = cost
    else:
        problems += [f"evaluator: {p}" for p in certify(db, q, res.plan)]
        if problems:
            return None, problems
        q["reference_plan"], q["reference_cost"] = res.plan, res.cost
    # Official texts were written by people; only our own phrasing must round-trip exactly.
    bad = mismatches(q, q["query"], places_of(db)) if q.get("source") != "official" else []
    if bad:
        return None, ["roundtrip: " + "; ".join(bad)]
    return q, []
