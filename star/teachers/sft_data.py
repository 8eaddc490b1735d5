"""Rejection sampling: keep teacher trajectories that succeed with a clean format (recipe §3).

A trajectory is kept when it ended with an answer, its plan passes every check, every
assistant turn parses cleanly, roles alternate as the protocol says, and it stayed within the
tool budget. Everything else is rejected with one reason; the report counts both by level and
gives the kept data's mean tool calls and tokens (the paper's Table 8).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable

from star.teachers.config import SFTDataConfig
from star.agent.prompt import OBSERVATION_CLOSE, OBSERVATION_OPEN
from star.agent.trajectory import Trajectory
from star.agent.turns import parse_turn

LEVEL_ORDER = ("easy", "medium", "hard")


def roles_problem(messages: list[dict]) -> str | None:
    """None when the chat is system, user, then (assistant, tool response)* ending with an assistant answer."""
    if len(messages) < 3 or messages[0].get("role") != "system" or messages[1].get("role") != "user":
        return "must start with a system and a user message"
    for i, m in enumerate(messages[2:], start=2):
        want = "assistant" if i % 2 == 0 else "user"
        if m.get("role") != want:
            return f"message {i} is {m.get('role')!r}, expected {want!r}"
        if want == "user" and not (m["content"].startswith(OBSERVATION_OPEN) and
                                   m["content"].rstrip().endswith(OBSERVATION_CLOSE)):
            return f"message {i} is not a tool response"
    if messages[-1].get("role") != "assistant":
        return "does not end with an assistant turn"
    return None


def rejection_reason(t: Trajectory, config: SFTDataConfig | None = None) -> str | None:
    """Why a trajectory is not SFT data (None = keep)."""
    config = config or SFTDataConfig()
    if config.require_clean_format:
        if t.finish_reason == "format_error":
            return f"format_error:{t.format_error or 'unknown'}"
        if t.finish_reason != "answer":
            return t.finish_reason
        if roles_problem(t.messages) is not None:
            return "bad_roles"
        if any(not parse_turn(m["content"]).ok for m in t.messages if m["role"] == "assistant"):
            return "bad_turn_format"
    if t.tool_calls > config.tool_budget:
        return "over_tool_budget"
    if config.require_success:
        if t.plan is None:
            return "no_plan"
        if not t.success:
            return "not_success"
    return None


def to_sft_record(t: Trajectory) -> dict:
    """Chat-messages form, loadable with datasets (`Dataset.from_json`)."""
    # `train: false` (a turn SFT must not learn, e.g. a teacher's deliberate mistake) travels with its message
    return {"messages": [{"role": m["role"], "content": m["content"], **({"train": False} if m.get("train") is False else {})}
                         for m in t.messages],
            "query_id": t.query_id, "level": t.level or "unknown", "sample": t.sample,
            "tool_calls": t.tool_calls, "n_tokens": t.n_tokens}


def select(trajectories: Iterable[Trajectory], config: SFTDataConfig | None = None) -> tuple[list[dict], dict]:
    """(kept SFT records, report). The report: per level kept / rejected by reason, means of the kept."""
    kept: list[dict] = []
    by_level: dict[str, Counter] = defaultdict(Counter)
    calls: dict[str, list[int]] = defaultdict(list)
    tokens: dict[str, list[int]] = defaultdict(list)
    for t in trajectories:
        level = t.level or "unknown"
        why = rejection_reason(t, config)
        by_level[level]["total"] += 1
        if why is None:
            kept.append(to_sft_record(t))
            by_level[level]["kept"] += 1
            calls[level].append(t.tool_calls)
            tokens[level].append(t.n_tokens)
        else:
            by_level[level][f"rejected:{why}"] += 1
    levels = sorted(by_level, key=lambda v: (LEVEL_ORDER.index(v) if v in LEVEL_ORDER else 9, v))
    mean = lambda xs: round(sum(xs) / len(xs), 2) if xs else 0.0  # noqa: E731
    n_kept = len(kept)
    rows = []
    for lvl in levels + ["all"]:
        c = sum(by_level.values(), Counter()) if lvl == "all" else by_level[lvl]
        cl = [x for v in calls.values() for x in v] if lvl == "all" else calls[lvl]
        tk = [x for v in tokens.values() for x in v] if lvl == "all" else tokens[lvl]
        rows.append({"level": lvl, "total": c["total"], "kept": c["kept"],
                     "kept_rate": round(c["kept"] / c["total"], 4) if c["total"] else 0.0,
                     "share_of_kept": round(c["kept"] / n_kept, 4) if n_kept else 0.0,
                     "mean_tool_calls": mean(cl), "mean_tokens": mean(tk),
                     "rejected": {k.split(":", 1)[1]: v for k, v in sorted(c.items()) if k.startswith("rejected:")}})
    return kept, {"rows": rows, "kept": n_kept, "total": rows[-1]["total"]}


def report_table(report: dict) -> str:
    """Markdown table of the rejection-sampling report."""
    lines = ["| level | trajectories | kept | kept % | share of kept % | mean tool calls | mean tokens | rejected (reason: n) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        rej = ", ".join(f"{k}: {v}" for k, v in r["rejected"].items()) or "-"
        lines.append(f"| {r['level']} | {r['total']} | {r['kept']} | {100 * r['kept_rate']:.1f} | "
                     f"{100 * r['share_of_kept']:.1f} | {r['mean_tool_calls']:.1f} | {r['mean_tokens']:.0f} | {rej} |")
    return "\n".join(lines)
