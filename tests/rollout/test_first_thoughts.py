"""scripts/first_thoughts.py: which route a first turn names, read from episodes or decoded from a model."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("first_thoughts", ROOT / "scripts" / "first_thoughts.py")
ft = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ft)

QUERY = {"id": "q1", "org": "Denver", "dest": "Atlanta"}


def _turn(thought: str, city: str = "Atlanta") -> str:
    return (f"<think>{thought}</think><tool_call>{{\"name\": \"SearchAccommodation\", "
            f"\"arguments\": {{\"city\": \"{city}\"}}}}</tool_call>")


@pytest.mark.parametrize(("thought", "route"), [
    ("Denver to Atlanta. Next: SearchAccommodation.", "right"),
    ("Atlanta to Denver. Next: SearchAccommodation.", "reversed"),
    ("Chicago to Atlanta. Next: SearchAccommodation.", "destination only"),
    ("Denver to Chicago. Next: SearchAccommodation.", "origin only"),
    ("Chicago to Detroit. Next: SearchAccommodation.", "neither"),
    ("Next: SearchAccommodation.", "no route"),
])
def test_the_first_thought_is_sorted_by_the_ends_it_names(thought, route):
    assert ft.route_category(QUERY, _turn(thought)) == route


def test_a_broken_or_missing_turn_names_no_route_and_no_destination():
    for turn in ("<think>Denver to Atlanta.", None, "Denver to Atlanta."):
        assert ft.route_category(QUERY, turn) == "no route"
        assert not ft.first_call_at_destination(QUERY, turn)
    assert ft.first_call_at_destination(QUERY, _turn("x")) and not ft.first_call_at_destination(QUERY, _turn("x", "Denver"))


def test_two_result_files_are_compared_paired(tmp_path, capsys):
    queries = [dict(QUERY, id=f"q{i}") for i in range(4)]
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    before = [{"query_id": f"q{i}", "sample": 0, "seed": i, "first_turn": _turn("Atlanta to Denver.")} for i in range(4)]
    after = [{"query_id": f"q{i}", "sample": 0, "seed": i,
              "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"},
                           {"role": "assistant", "content": _turn("Denver to Atlanta." if i < 3 else "x")}]}
             for i in range(4)]
    for name, recs in (("before", before), ("after", after)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert ft.main(["--queries", str(tmp_path / "q.jsonl"), "--episodes", str(tmp_path / "before.jsonl"),
                    str(tmp_path / "after.jsonl"), "--paired"]) == 0
    out = capsys.readouterr().out
    assert "| 4 | 0 | 4 | 0 | 0 | 0 | 0 | 4 |" in out and "| 4 | 3 | 0 | 0 | 0 | 0 | 1 | 4 |" in out
    assert "0.000 -> 0.750" in out


def test_a_model_first_turns_are_decoded_for_each_query(tiny_model_dir, synthetic_queries, tmp_path, capsys):
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in synthetic_queries))
    assert ft.main(["--queries", str(tmp_path / "q.jsonl"), "--model", str(tiny_model_dir), "--db", "generated:0",
                    "--limit", "3"]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "3" and sum(int(c) for c in cells[2:2 + len(ft.ROUTES)]) == 3


def test_the_greedy_first_turn_is_the_one_a_greedy_episode_opens_with(tiny_model_dir, tiny_backend, generated_db,
                                                                      synthetic_queries, tmp_path):
    """The gate decodes what the eval stage would: the prompt is `sandbox.prompt` (dvc.yaml passes it to
    eval-agent), not EvalConfig's default, and the turn is the engine's text of the tokens."""
    from star.policy_eval.config import EvalConfig
    from star.policy_eval.eval_agent import run_policy

    params = tmp_path / "params.yaml"
    params.write_text("sandbox: {prompt: short}\neval: {max_new_tokens: 24, max_context: 4096, tool_budget: 1}\n")
    queries = synthetic_queries[:3]
    assert ft.eval_config(str(params)).prompt == "short" != ft.eval_config(None).prompt
    turns = ft.greedy_first_turns(str(tiny_model_dir), queries, str(params), "generated:0", batch=2)
    cfg = EvalConfig(prompt="short", temperature=0.0, max_new_tokens=24, max_context=4096, tool_budget=1)
    episodes = run_policy(tiny_backend, generated_db, queries, cfg, max_batch=2, progress=False)
    opened = [next(m["content"] for m in t.messages if m["role"] == "assistant") for t in episodes]
    assert [t["turn"] for t in turns] == opened
