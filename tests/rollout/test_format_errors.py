"""scripts/format_errors.py: what the tool had answered when a turn broke the format."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("format_errors", ROOT / "scripts" / "format_errors.py")
fe = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fe)

CALL = '<think>Next: SearchAttraction.</think><tool_call>{"name": "SearchAttraction", "arguments": {"city": "Atlanta"}}</tool_call>'


def _episode(answers: list[str], finish: str) -> dict:
    """A query, then a call and its answer per entry of `answers`, then a last turn."""
    messages = [{"role": "system", "content": "short"}, {"role": "user", "content": "Plan a trip from Denver."}]
    for text in answers:
        messages += [{"role": "assistant", "content": CALL},
                     {"role": "user", "content": f"<tool_response>\n{text}\n</tool_response>"}]
    last = "</tool_call>" if finish == "format_error" else "<think>Done.</think><answer>[]</answer>"
    messages.append({"role": "assistant", "content": last})
    return {"query_id": "q1", "finish_reason": finish, "messages": messages}


@pytest.mark.parametrize(("answer", "kind"), [
    (None, "none"),
    ("<tool_response>\nNo route data from Atlanta to Atlanta.\n</tool_response>",
     "nothing found: a route from a city to itself"),
    ("No route data from Denver to Atlanta.", "nothing found: other"),
    ("There is no flight from Denver to Atlanta on 2022-03-06.", "nothing found: other"),
    ("Error: SearchFlight is missing argument(s) 'date'.", "tool error"),
    ("taxi from Denver to Atlanta: 20 hours 16 mins, 2,257 km, $2257", "data"),
])
def test_each_tool_answer_is_sorted_into_its_kind(answer, kind):
    assert fe.answer_kind(answer) == kind


def test_the_broken_turn_is_the_last_and_is_charged_to_the_answer_before_it():
    broke = fe.turns(_episode(["1. Georgia Aquarium", "No route data from Atlanta to Atlanta."], "format_error"))
    assert broke == [("none", False), ("data", False), ("nothing found: a route from a city to itself", True)]
    clean = fe.turns(_episode(["No route data from Atlanta to Atlanta."], "answer"))
    assert clean == [("none", False), ("nothing found: a route from a city to itself", False)]


def test_the_table_counts_broken_turns_and_the_rate_after_each_kind(tmp_path):
    episodes = [_episode(["No route data from Denver to Denver."], "format_error"),
                _episode(["No route data from Denver to Denver."], "answer"),
                _episode(["1. Georgia Aquarium"], "answer")]
    path = tmp_path / "trajectories.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in episodes))
    out = tmp_path / "fe.md"
    assert fe.main(["--episodes", str(tmp_path), "--names", "SFT", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| nothing found: a route from a city to itself | 1 (100%) | 2, 50.0% |" in text
    assert "| data | 0 (0%) | 1, 0.0% |" in text
    assert "SFT: 1 format errors in 3 episodes." in text


def test_slim_result_files_are_refused_with_the_reason():
    with pytest.raises(ValueError, match="no messages"):
        fe.turns({"query_id": "q9", "finish_reason": "answer", "plan": []})
