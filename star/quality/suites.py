"""The data-quality suites: for each kind of file, a table of per-row facts and the expectations on it.

A suite is (DataFrame, [expectation spec]). Facts that no stock expectation states directly
(dates consistent with days, constraints matching the level, no overlap with another split,
level share near the target ratio) become derived columns here, so every rule is still a
Great Expectations expectation with counts and failing row labels in its result. GX itself
is imported only in runner.py.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date, timedelta

import pandas as pd

from star.evaluation.queries import parse_ratio
from star.quality.config import DEFAULTS
from star.sandbox.rows import CUISINES, HOUSE_RULES

LEVELS = ("easy", "medium", "hard")
ROOM_TYPES = ("shared room", "not shared room", "private room", "entire room")
TRANSPORTS = ("no flight", "no self-driving")
QUERY_COLUMNS = ("id", "source", "org", "dest", "days", "visiting_city_number", "date", "people_number",
                 "local_constraint", "budget", "query", "level")
METRIC_KEYS = ("delivery_rate", "commonsense_micro", "commonsense_macro", "hard_micro", "hard_macro", "success_rate")
TRAJECTORY_COLUMNS = ("query_id", "messages", "finish_reason", "scores", "tool_calls")


@dataclass
class Expect:
    """One expectation: a GX class name, its keyword arguments and the sentence a report prints."""

    kind: str
    kwargs: dict
    check: str
    meta: dict = field(default_factory=dict)


def _col_exists(cols) -> list[Expect]:
    return [Expect("ExpectColumnToExist", {"column": c}, f"column '{c}' is present") for c in cols]


def _true(column: str, check: str) -> Expect:
    return Expect("ExpectColumnValuesToBeInSet", {"column": column, "value_set": [True]}, check)


# -- queries --------------------------------------------------------------------------------------

def _dates_ok(q: dict) -> bool:
    try:
        ds = [date.fromisoformat(d) for d in q.get("date") or []]
        days = int(q.get("days"))
    except (TypeError, ValueError):
        return False
    return len(ds) == days and all(b - a == timedelta(days=1) for a, b in zip(ds, ds[1:]))


def _constraints(q: dict) -> dict:
    lc = q.get("local_constraint")
    return lc if isinstance(lc, dict) else {}


def _level_rules_ok(q: dict) -> bool:
    """easy: 1 person, no constraint; medium: a group, one of rule/cuisine/room; hard: a group, 3 types."""
    lc = _constraints(q)
    present = [k for k in ("house rule", "cuisine", "room type", "transportation") if lc.get(k)]
    people = q.get("people_number")
    level = q.get("level")
    if level == "easy":
        return people == 1 and not present
    if level == "medium":
        return isinstance(people, int) and people >= 2 and len(present) == 1 and "transportation" not in present
    if level == "hard":
        return isinstance(people, int) and people >= 2 and len(present) == 3
    return False


def _element_key(q: dict) -> str:
    lc = _constraints(q)
    c = lc.get("cuisine")
    return json.dumps([q.get("org"), q.get("dest"), q.get("days"), q.get("date"), q.get("people_number"),
                       lc.get("house rule"), sorted(c) if isinstance(c, list) else c, lc.get("room type"),
                       lc.get("transportation")], default=str)


def _plan_ok(q: dict) -> bool:
    plan = q.get("reference_plan")
    if q.get("source") == "official":
        return True
    return isinstance(plan, list) and len(plan) == q.get("days") and all(isinstance(d, dict) for d in plan)


def _budget_covers(q: dict) -> bool:
    cost = q.get("reference_cost")
    budget = q.get("budget")
    if cost is None:
        return True
    return isinstance(budget, (int, float)) and budget >= cost


def queries_suite(records: list[dict], against: list[dict] | None = None, ratio: str | None = DEFAULTS.ratio,
                  tolerance: float = DEFAULTS.tolerance,
                  min_rows_for_ratio: int = DEFAULTS.min_rows_for_ratio) -> tuple[pd.DataFrame, list[Expect]]:
    """Schema, value sets, ranges, date/level consistency, uniqueness, ratio, no overlap with `against`."""
    rows = []
    other_ids = {r.get("id") for r in against or []}
    other_keys = {_element_key(r) for r in against or []}
    other_text = {r.get("query") for r in against or []}
    for i, q in enumerate(records, 1):
        lc = _constraints(q)
        cuisine = lc.get("cuisine")
        row = {c: q.get(c) for c in QUERY_COLUMNS if c in q}
        row.update({
            "row_label": f"line {i}" + (f" ({q['id']})" if q.get("id") else ""),
            "house_rule": lc.get("house rule"), "room_type": lc.get("room type"),
            "transportation": lc.get("transportation"),
            "constraint_dict_ok": isinstance(q.get("local_constraint"), dict)
            and set(q["local_constraint"]) == {"house rule", "cuisine", "room type", "transportation"},
            "cuisine_ok": cuisine is None or (isinstance(cuisine, list) and len(cuisine) > 0
                                              and len(set(cuisine)) == len(cuisine)
                                              and all(c in CUISINES for c in cuisine)),
            "dates_ok": _dates_ok(q),
            "city_number_ok": {3: 1, 5: 2, 7: 3}.get(q.get("days")) == q.get("visiting_city_number"),
            "level_rules_ok": _level_rules_ok(q),
            "element_key": _element_key(q),
            "reference_plan_ok": _plan_ok(q),
            "budget_covers_plan": _budget_covers(q),
            "in_other_split": bool(against) and (q.get("id") in other_ids or _element_key(q) in other_keys
                                                 or q.get("query") in other_text),
        })
        rows.append(row)
    df = pd.DataFrame(rows)
    for c in ("date", "local_constraint"):  # lists/dicts are not hashable values for GX; keep them as text
        if c in df:
            df[c] = df[c].map(lambda v: json.dumps(v, default=str))
    ex: list[Expect] = _col_exists(QUERY_COLUMNS)
    ex += [
        Expect("ExpectColumnValuesToNotBeNull", {"column": c}, f"'{c}' is never empty")
        for c in ("id", "org", "dest", "days", "people_number", "budget", "query", "level")
    ]
    ex += [
        Expect("ExpectColumnValuesToBeInSet", {"column": "level", "value_set": list(LEVELS)}, "level is easy/medium/hard"),
        Expect("ExpectColumnValuesToBeInSet", {"column": "days", "value_set": [3, 5, 7]}, "days is 3, 5 or 7"),
        Expect("ExpectColumnValuesToBeInSet", {"column": "visiting_city_number", "value_set": [1, 2, 3]},
               "visiting_city_number is 1, 2 or 3"),
        Expect("ExpectColumnValuesToBeBetween", {"column": "people_number", "min_value": 1, "max_value": 8},
               "people_number is between 1 and 8"),
        Expect("ExpectColumnValuesToBeBetween", {"column": "budget", "min_value": 100, "max_value": 200_000},
               "budget is between $100 and $200,000"),
        Expect("ExpectColumnValuesToBeInSet", {"column": "house_rule", "value_set": list(HOUSE_RULES)},
               "house rule is one of the five rules (or null)"),
        Expect("ExpectColumnValuesToBeInSet", {"column": "room_type", "value_set": list(ROOM_TYPES)},
               "room type is one of the four values (or null)"),
        Expect("ExpectColumnValuesToBeInSet", {"column": "transportation", "value_set": list(TRANSPORTS)},
               "transportation is 'no flight' or 'no self-driving' (or null)"),
        Expect("ExpectColumnValueLengthsToBeBetween", {"column": "query", "min_value": 40},
               "query text has at least 40 characters"),
        _true("constraint_dict_ok", "local_constraint is a dict with exactly the four official keys"),
        _true("cuisine_ok", "cuisine is null or a non-empty list of distinct known cuisines"),
        _true("dates_ok", "date lists `days` consecutive ISO dates"),
        _true("city_number_ok", "visiting_city_number matches days (3->1, 5->2, 7->3)"),
        _true("level_rules_ok", "people and constraints match the level's rules"),
        _true("reference_plan_ok", "synthetic queries carry a reference plan of `days` days"),
        _true("budget_covers_plan", "budget >= the reference plan's cost"),
        Expect("ExpectColumnValuesToBeUnique", {"column": "id"}, "ids are unique"),
        Expect("ExpectColumnValuesToBeUnique", {"column": "element_key"}, "element tuples are unique (no duplicate queries)"),
        Expect("ExpectColumnValuesToBeInSet", {"column": "in_other_split", "value_set": [False]},
               "no query (id, elements or text) also appears in the other file"),
    ]
    if ratio and len(records) >= min_rows_for_ratio:
        target = dict(zip(LEVELS, parse_ratio(ratio)))
        share = df["level"].value_counts(normalize=True).to_dict() if "level" in df else {}
        df["level_share_deviation"] = df.get("level", pd.Series(dtype=object)).map(
            lambda lv: abs(share.get(lv, 0.0) - target.get(lv, 0.0)))
        ex.append(Expect("ExpectColumnValuesToBeBetween",
                         {"column": "level_share_deviation", "min_value": 0.0, "max_value": tolerance},
                         f"each level's share is within {tolerance:.0%} of the {ratio} ratio"))
        missing = [lv for lv in LEVELS if target[lv] > tolerance and lv not in share]
        df["levels_present"] = not missing
        ex.append(_true("levels_present", f"every level of the {ratio} ratio is present"))
    return df, ex


# -- trajectories ------------------------------------------------------------------------------------

_FALLBACK_TURN = re.compile(r"\s*<think>.*?</think>\s*(<tool_call>\s*\{.*\}\s*</tool_call>|<answer>.+</answer>)\s*",
                            re.DOTALL)
SFT_COLUMNS = ("query_id", "messages", "tool_calls")


def _turn_kind(text: str) -> str:
    """tool_call | answer | format_error, by the agent's own turn parser when it is installed."""
    try:
        from star.agent.turns import parse_turn  # lazy: optional, its ImportError has a fallback
    except ImportError:  # the agent package is optional for this suite
        m = _FALLBACK_TURN.fullmatch(text or "")
        return "format_error" if not m else ("answer" if m.group(1).startswith("<answer>") else "tool_call")
    return parse_turn(text or "").kind


def _turn_ok(text: str) -> bool:
    return _turn_kind(text) in ("tool_call", "answer")


def _roles_ok(messages) -> bool:
    """[system] user, then assistant and tool response alternating, ending on the assistant's answer."""
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        return False
    roles = [m.get("role") for m in messages]
    if roles[0] == "system":
        roles = roles[1:]
    if len(roles) < 2 or roles[0] != "user" or roles[-1] != "assistant":
        return False
    for i, r in enumerate(roles[1:]):
        want = "assistant" if i % 2 == 0 else ("tool", "user")
        if (r != want) if isinstance(want, str) else (r not in want):
            return False
    return True


def is_sft_file(records: list[dict]) -> bool:
    """SFT examples (`star sft-data`) keep messages + ids; rollouts (`star teacher`) also carry scores."""
    return bool(records) and all("scores" not in t and "finish_reason" not in t for t in records)


def trajectories_suite(records: list[dict], against: list[dict] | None = None, tool_budget: int = DEFAULTS.tool_budget,
                       require_success: bool = DEFAULTS.require_success) -> tuple[pd.DataFrame, list[Expect]]:
    """Trajectories: alternating roles, well-formed assistant turns, success, call budget, no RL overlap.

    Rollout files are checked on their scores and finish reasons; SFT files (which rejection
    sampling already filtered on success) on what their messages show: the episode ends with an
    answer and its tool-call turns match the recorded count.
    """
    if is_sft_file(records):
        return _sft_suite(records, against, tool_budget)
    rl_ids = {r.get("id") or r.get("query_id") for r in against or []}
    rows = []
    for i, t in enumerate(records, 1):
        msgs = t.get("messages")
        assistant = [m.get("content", "") for m in msgs or [] if isinstance(m, dict) and m.get("role") == "assistant"]
        scores = t.get("scores") if isinstance(t.get("scores"), dict) else {}
        rows.append({
            "row_label": f"line {i} ({t.get('query_id')})",
            "query_id": t.get("query_id"),
            "finish_reason": t.get("finish_reason"),
            "tool_calls": t.get("tool_calls"),
            "roles_ok": _roles_ok(msgs),
            "assistant_format_ok": bool(assistant) and all(_turn_ok(a) for a in assistant),
            "success": bool(scores.get("success", t.get("success"))),
            "in_rl_set": t.get("query_id") in rl_ids,
            "has_plan": isinstance(t.get("plan"), list) and len(t.get("plan")) > 0,
        })
    df = pd.DataFrame(rows)
    for c in TRAJECTORY_COLUMNS:  # presence of the record's own fields, checked on the raw keys
        df[f"has_{c}"] = [c in t for t in records] if records else pd.Series(dtype=bool)
    ex = [_true(f"has_{c}", f"every record has '{c}'") for c in TRAJECTORY_COLUMNS]
    ex += [
        Expect("ExpectColumnValuesToNotBeNull", {"column": "query_id"}, "query_id is never empty"),
        Expect("ExpectColumnValuesToBeInSet",
               {"column": "finish_reason", "value_set": ["answer", "call_budget", "context_overflow", "format_error"]},
               "finish_reason is answer / call_budget / context_overflow / format_error"),
        _true("roles_ok", "roles go [system] user, then assistant/tool alternating, ending with the assistant"),
        _true("assistant_format_ok", "every assistant turn is <think>…</think> plus one <tool_call> or <answer>"),
        Expect("ExpectColumnValuesToBeBetween", {"column": "tool_calls", "min_value": 0, "max_value": tool_budget},
               f"tool calls are within the budget of {tool_budget}"),
        Expect("ExpectColumnValuesToBeInSet", {"column": "in_rl_set", "value_set": [False]},
               "no trajectory's query is in the RL training set"),
    ]
    if require_success:
        ex += [_true("success", "every trajectory succeeded"),
               Expect("ExpectColumnValuesToBeInSet", {"column": "finish_reason", "value_set": ["answer"]},
                      "every trajectory ended with an answer"),
               _true("has_plan", "every trajectory has a parsed plan")]
    return df, ex


def _sft_suite(records: list[dict], against: list[dict] | None, tool_budget: int):
    rl_ids = {r.get("id") or r.get("query_id") for r in against or []}
    rows = []
    for i, t in enumerate(records, 1):
        msgs = t.get("messages")
        kinds = [_turn_kind(m.get("content", "")) for m in msgs or []
                 if isinstance(m, dict) and m.get("role") == "assistant"]
        rows.append({
            "row_label": f"line {i} ({t.get('query_id')})",
            "query_id": t.get("query_id"),
            "tool_calls": t.get("tool_calls"),
            "roles_ok": _roles_ok(msgs),
            "assistant_format_ok": bool(kinds) and "format_error" not in kinds,
            "ends_with_answer": bool(kinds) and kinds[-1] == "answer",
            "tool_calls_match": kinds.count("tool_call") == t.get("tool_calls"),
            "in_rl_set": t.get("query_id") in rl_ids,
        })
    df = pd.DataFrame(rows)
    for c in SFT_COLUMNS:
        df[f"has_{c}"] = [c in t for t in records]
    ex = [_true(f"has_{c}", f"every record has '{c}'") for c in SFT_COLUMNS]
    ex += [
        Expect("ExpectColumnValuesToNotBeNull", {"column": "query_id"}, "query_id is never empty"),
        _true("roles_ok", "roles go [system] user, then assistant/tool alternating, ending with the assistant"),
        _true("assistant_format_ok", "every assistant turn is <think>…</think> plus one <tool_call> or <answer>"),
        _true("ends_with_answer", "every example ends with the assistant's answer"),
        _true("tool_calls_match", "tool_calls equals the number of tool-call turns"),
        Expect("ExpectColumnValuesToBeBetween", {"column": "tool_calls", "min_value": 0, "max_value": tool_budget},
               f"tool calls are within the budget of {tool_budget}"),
        Expect("ExpectColumnValuesToBeInSet", {"column": "in_rl_set", "value_set": [False]},
               "no trajectory's query is in the RL training set"),
    ]
    return df, ex


# -- evaluation outputs -------------------------------------------------------------------------------

def _metric_rows(obj, where: str) -> list[dict]:
    """A metrics dict (with optional per-level breakdowns) or a list of them -> one row per metrics dict."""
    rows = []
    if isinstance(obj, list):
        for i, o in enumerate(obj, 1):
            rows.extend(_metric_rows(o, f"{where}[{i}]"))
        return rows
    if not isinstance(obj, dict):
        return [{"row_label": where}]
    if any(k in obj for k in METRIC_KEYS) or not obj:
        rows.append({"row_label": where, **{k: v for k, v in obj.items() if not isinstance(v, (dict, list))}})
    for k, v in obj.items():
        # descend into breakdowns (per_level: {easy: {...rates}}), not into per-check count tables
        if isinstance(v, dict) and (any(m in v for m in METRIC_KEYS) or any(isinstance(x, dict) for x in v.values())):
            rows.extend(_metric_rows(v, f"{where}.{k}"))
    return rows


def eval_suite(obj) -> tuple[pd.DataFrame, list[Expect]]:
    """Metric outputs: the six rate keys present on every metrics row, every rate within [0, 1]."""
    rows = _metric_rows(obj, "metrics")
    df = pd.DataFrame(rows)
    for k in METRIC_KEYS:
        df[f"has_{k}"] = [isinstance(r.get(k), (int, float)) and not isinstance(r.get(k), bool) for r in rows]
    ex = [_true(f"has_{k}", f"'{k}' is present as a number on every metrics row") for k in METRIC_KEYS]
    for k in METRIC_KEYS:
        if k in df:
            df[k] = pd.to_numeric(df[k], errors="coerce")
            ex.append(Expect("ExpectColumnValuesToBeBetween", {"column": k, "min_value": 0.0, "max_value": 1.0},
                             f"{k} is a rate in [0, 1]"))

    def _num(r, k):
        v = r.get(k)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def _consistent(r) -> bool:
        # success needs both macros; a macro pass needs a delivered plan
        s, c, h, d = (_num(r, k) for k in ("success_rate", "commonsense_macro", "hard_macro", "delivery_rate"))
        if None in (s, c, h, d):
            return True  # reported by the presence checks
        eps = 1e-9
        return s <= min(c, h) + eps and max(c, h) <= d + eps
    df["rates_consistent"] = [_consistent(r) for r in rows]
    ex.append(_true("rates_consistent", "success_rate <= both macro rates <= delivery_rate"))
    return df, ex
