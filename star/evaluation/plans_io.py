"""Reading submitted plan files: one `{"idx": …, "plan": [...] | null}` per line, matched to queries.

A bad line never stops the run: it is reported with its line number and its query's plan counts
as not delivered. A `plan` given as a string is read as JSON, then as a Python literal (the
official files' form), then as canonical day-by-day text.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

from star.evaluation.llm_formatter import FormatterError
from star.evaluation.plan import PlanParseError, parse_plan_text
from star.jsonl import open_text, parse_lines


class PlanFileError(ValueError):
    """A plans file cannot be read at all (missing, or no usable line)."""


@dataclass
class PlanLine:
    line: int
    idx: object
    plan: list | None
    error: str | None = None


def _plan_value(value):
    if value is None or isinstance(value, list):
        return value
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        for reader in (json.loads, ast.literal_eval):
            try:
                parsed = reader(text)
            except (ValueError, SyntaxError, json.JSONDecodeError):
                continue
            if isinstance(parsed, list) or parsed is None:
                return parsed
        return parse_plan_text(text)
    raise PlanParseError(f"'plan' must be a list of days, null or text, got {type(value).__name__}")


def read_plan_lines(path: str | Path, formatter=None) -> list[PlanLine]:
    """Every non-blank line of a plans JSONL file, with errors recorded per line.

    With a `formatter` (an `LLMFormatter`), a text plan that is not in the canonical format is
    sent to it for rewriting; without one, such a line is reported as unreadable.
    """
    path = Path(path)
    if not path.is_file():
        raise PlanFileError(f"plans file not found: {path}")
    out = []
    with open_text(path) as fh:
        for n, record, bad in parse_lines(fh):
            if bad is not None:  # recorded, and the next line read: one bad plan costs only itself
                out.append(PlanLine(n, None, None, f"{path}:{n}: malformed JSON ({bad.msg} at column {bad.colno})"))
                continue
            if not isinstance(record, dict) or "plan" not in record:
                out.append(PlanLine(n, None, None, f"{path}:{n}: expected an object with a 'plan' field"))
                continue
            try:
                out.append(PlanLine(n, record.get("idx"), _plan_value(record["plan"])))
            except PlanParseError as exc:
                if formatter is not None and isinstance(record["plan"], str):
                    try:
                        out.append(PlanLine(n, record.get("idx"), formatter.format(record["plan"], record.get("query"))))
                        continue
                    except (FormatterError, PlanParseError) as fexc:
                        exc = fexc
                out.append(PlanLine(n, record.get("idx"), None, f"{path}:{n}: unreadable plan: {exc}"))
    return out


def match_plans(lines: list[PlanLine], n_queries: int, how: str = "auto") -> tuple[list[tuple[int, PlanLine]], str]:
    """Pair plan lines with query positions: by `idx` (1- or 0-based) or by line order.

    `auto` uses idx when every line has a distinct integer idx covering a 1-based (or 0-based)
    range within the query count, else order. Returns the pairs and the rule used.
    """
    idxs = [ln.idx for ln in lines]
    if how in ("auto", "idx") and lines and all(isinstance(i, int) and not isinstance(i, bool) for i in idxs) \
            and len(set(idxs)) == len(idxs):
        lo, hi = min(idxs), max(idxs)
        if lo >= 1 and hi <= n_queries:
            return [(ln.idx - 1, ln) for ln in lines], "idx (1-based)"
        if lo >= 0 and hi < n_queries:
            return [(ln.idx, ln) for ln in lines], "idx (0-based)"
    if how == "idx":
        raise PlanFileError("--match idx: every line needs a distinct integer idx within the query count")
    if len(lines) > n_queries:
        raise PlanFileError(f"{len(lines)} plan lines but only {n_queries} queries")
    return list(enumerate(lines)), "order"
