"""Evaluation episodes as MLflow users browse them: a table (one row an episode) and a trace an episode.

The table (`episodes.json`, MLflow's table artifact) has the query, finish reason, tool calls, plan and
scores of every episode, so the UI can sort and filter them. Each episode is also an MLflow trace linked
to the run: a span per assistant turn (an LLM span with the turn's text) and per tool call (a TOOL span
with the arguments and the observation), the plan and scores as the trace's outputs.
"""

from __future__ import annotations

import json
import time
from typing import Any

from star.agent.turns import parse_turn

SCORE_COLUMNS = ("delivered", "cs_micro", "cs_macro", "hard_micro", "hard_macro", "success", "slot_credit")


def _plan_text(traj: dict) -> str:
    answer = traj.get("answer")
    if answer:
        return str(answer)
    return json.dumps(traj["plan"], default=str) if traj.get("plan") else ""


def episode_rows(trajectories: list[dict]) -> list[dict[str, Any]]:
    """One flat row per episode (the columns of the MLflow table)."""
    rows = []
    for i, t in enumerate(trajectories):
        scores = t.get("scores") or {}
        calls = [parse_turn(m.get("content", "")) for m in t.get("messages") or [] if m.get("role") == "assistant"]
        row = {"episode": i, "query_id": str(t.get("query_id", i)), "level": t.get("level", ""),
               "sample": t.get("sample", 0), "finish_reason": t.get("finish_reason", ""),
               "format_error": t.get("format_error") or "", "tool_calls": t.get("tool_calls", 0),
               "tools": " ".join(c.tool for c in calls if c.kind == "tool_call"),
               "policy_tokens": t.get("n_policy_tokens", 0), "plan": _plan_text(t)}
        row.update({k: float(scores[k]) for k in SCORE_COLUMNS if isinstance(scores.get(k), (int, float, bool))})
        rows.append(row)
    return rows


def log_episode_table(client, run_id: str, trajectories: list[dict], artifact_file: str = "episodes.json") -> int:
    rows = episode_rows(trajectories)
    if rows:
        columns = list(dict.fromkeys(k for r in rows for k in r))
        client.log_table(run_id, data={c: [r.get(c) for r in rows] for c in columns}, artifact_file=artifact_file)
    return len(rows)


def log_episode_traces(client, experiment_id: str, run_id: str, trajectories: list[dict], limit: int = 200) -> int:
    """A trace per episode (the first `limit`), linked to the run."""
    ids = []
    for i, t in enumerate(trajectories[:limit]):
        messages = t.get("messages") or []
        query = next((m.get("content", "") for m in messages if m.get("role") == "user"), "")
        start = time.time_ns()
        root = client.start_trace(f"episode {t.get('query_id', i)}", span_type="AGENT", inputs={"query": query},
                                  tags={"star.query_id": str(t.get("query_id", i)),
                                        "star.finish_reason": str(t.get("finish_reason", ""))},
                                  experiment_id=experiment_id, start_time_ns=start)
        tick = start
        for turn, m in enumerate(messages[2:], start=1):
            tick += 1000
            role = m.get("role")
            if role == "assistant":
                parsed = parse_turn(m.get("content", ""))
                span = client.start_span(f"turn {turn}: {parsed.tool or parsed.kind}", trace_id=root.trace_id,
                                         parent_id=root.span_id, span_type="LLM" if parsed.kind != "tool_call"
                                         else "TOOL", inputs={"arguments": parsed.arguments} if parsed.tool else None,
                                         start_time_ns=tick)
                client.end_span(root.trace_id, span.span_id, outputs={"text": m.get("content", "")},
                                status="ERROR" if parsed.kind == "format_error" else "OK", end_time_ns=tick + 500)
            else:
                span = client.start_span(f"observation {turn}", trace_id=root.trace_id, parent_id=root.span_id,
                                         span_type="RETRIEVER", start_time_ns=tick)
                client.end_span(root.trace_id, span.span_id, outputs={"text": m.get("content", "")},
                                end_time_ns=tick + 500)
        client.end_trace(root.trace_id, outputs={"plan": _plan_text(t), "scores": t.get("scores") or {}},
                         end_time_ns=tick + 1000)
        ids.append(root.trace_id)
    if ids:
        import mlflow

        mlflow.flush_trace_async_logging()  # traces are exported in the background: stored before linking
        client.link_traces_to_run(ids, run_id)
    return len(ids)
