"""The episode environment: protocol state, stops, failure injection, scoring."""

from __future__ import annotations

import pytest

from star.agent.config import AgentConfig
from star.agent.env import TravelPlannerEnv
from star.agent.turns import render_answer, render_tool_call
from star.evaluation.plan import format_plan_text
from star.sandbox.failures import unavailable_message


def _state_call(db):
    state = next(iter(db.state_cities))
    return render_tool_call("SearchCity", {"state": state}, f"Cities of {state}.")


def _query(db):
    return {"id": "q", "org": "A", "dest": next(iter(db.state_cities)), "days": 3, "visiting_city_number": 1,
            "date": ["2022-03-01", "2022-03-02", "2022-03-03"], "people_number": 1, "budget": 1000,
            "local_constraint": {"house rule": None, "cuisine": None, "room type": None, "transportation": None},
            "level": "easy", "query": "Plan a trip."}


def test_reset_gives_system_and_user_and_a_tool_call_returns_an_observation(any_db):
    env = TravelPlannerEnv(any_db)
    messages = env.reset(_query(any_db))
    assert [m["role"] for m in messages] == ["system", "user"] and "<tool_call>" in messages[0]["content"]
    obs, reward, done, info = env.step(_state_call(any_db))
    assert not done and reward == 0.0 and info["result"].ok
    assert obs["role"] == "user" and obs["content"].startswith("<tool_response>")
    assert obs["content"].rstrip().endswith("</tool_response>")
    assert env.tool_calls == 1


def test_a_bad_but_well_formed_call_is_an_observation_not_the_end(any_db):
    env = TravelPlannerEnv(any_db)
    env.reset(_query(any_db))
    obs, _, done, info = env.step(render_tool_call("SearchRestaurant", {"city": "Atlantis"}, "Food."))
    assert not done and not info["result"].ok and "Atlantis" in obs["content"]
    assert env.tool_errors == 1


def test_a_format_error_ends_the_episode_as_a_failure(generated_db):
    env = TravelPlannerEnv(generated_db)
    env.reset(_query(generated_db))
    obs, reward, done, info = env.step("I will now search for flights.")
    assert done and obs is None and reward == 0.0
    assert env.finish_reason == "format_error" and env.format_error.error == "no_think"
    assert env.scores["success"] is False and env.scores["delivered"] is False
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(_state_call(generated_db))


def test_the_call_budget_stops_the_episode(generated_db):
    env = TravelPlannerEnv(generated_db, AgentConfig(tool_budget=3))
    env.reset(_query(generated_db))
    for _ in range(3):
        assert env.step(_state_call(generated_db))[2] is False
    _, _, done, info = env.step(_state_call(generated_db))
    assert done and info["finish_reason"] == "call_budget" and env.tool_calls == 3


def test_the_engine_can_stop_an_episode_for_context_overflow(generated_db):
    env = TravelPlannerEnv(generated_db)
    env.reset(_query(generated_db))
    _, _, done, info = env.stop("context_overflow")
    assert done and env.finish_reason == "context_overflow" and not env.scores["success"]
    with pytest.raises(ValueError):
        TravelPlannerEnv(generated_db).stop("answer")


def test_failure_injection_hits_about_p_of_the_calls_and_is_seeded(generated_db):
    def run(seed):
        env = TravelPlannerEnv(generated_db, AgentConfig(failure_rate=0.2, tool_budget=1000), seed=seed)
        env.reset(_query(generated_db))
        return [env.step(_state_call(generated_db))[3]["result"].error == "unavailable" for _ in range(600)]

    hits = run(1)
    assert 0.15 < sum(hits) / len(hits) < 0.25
    assert run(1) == hits and run(2) != hits


def test_injected_failures_read_like_the_recipe(generated_db):
    env = TravelPlannerEnv(generated_db, AgentConfig(failure_rate=1.0))
    env.reset(_query(generated_db))
    obs, _, done, _ = env.step(_state_call(generated_db))
    assert not done and unavailable_message("SearchCity") in obs["content"]


def test_a_certified_plan_scores_success_and_a_broken_one_does_not(generated_db, synthetic_queries):
    q = synthetic_queries[0]
    env = TravelPlannerEnv(generated_db)
    env.reset(q)
    _, reward, done, _ = env.step(render_answer(format_plan_text(q["reference_plan"]), "Done."))
    assert done and env.finish_reason == "answer" and env.scores["success"] is True and reward == 1.0
    assert env.scores["cs_macro"] == 1.0 and env.scores["mode"] == "strict"

    env.reset(q)
    _, reward, done, _ = env.step(render_answer("I recommend visiting soon.", "Done."))
    assert done and env.finish_reason == "answer" and env.plan is None and reward == 0.0
    assert env.scores["delivered"] is False


def test_the_short_prompt_keeps_the_reply_format_and_every_tool_and_drops_the_rest(any_db):
    from star.sandbox.tools import TOOL_SPECS

    full = TravelPlannerEnv(any_db).reset(_query(any_db))
    short = TravelPlannerEnv(any_db, AgentConfig(prompt="short")).reset(_query(any_db))
    assert short[1] == full[1]  # the same query
    text = short[0]["content"]
    assert all(tag in text for tag in ("<think>", "<tool_call>", "<answer>", "<tool_response>"))
    for spec in TOOL_SPECS:  # each tool with its argument names
        assert f"{spec['name']}({', '.join(spec['parameters']['properties'])})" in text
    assert "Day 1:" not in text and len(text) < len(full[0]["content"]) / 3


def test_an_unknown_prompt_is_refused_naming_the_choices():
    from pydantic import ValidationError

    from star.agent.prompt import system_prompt

    with pytest.raises(ValidationError, match="full"):
        AgentConfig(prompt="tiny")
    with pytest.raises(ValueError, match="full or short"):
        system_prompt(prompt="tiny")
