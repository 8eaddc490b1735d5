"""The async rollout engine: same trajectories as lock-step for the same seeds, exact token views, stops."""

from __future__ import annotations

import pytest

from star.agent.config import AgentConfig
from star.agent.turns import render_answer, render_tool_call
from star.rollout.backends.guided import GuidedBackend, ReplayGuide
from star.rollout.config import RolloutConfig
from star.rollout.engine import RolloutEngine
from star.rollout.lockstep import LockstepEngine


def _scripts(db, queries, n_calls):
    """Per query: n SearchCity / GoogleDistanceMatrix calls (short observations), then an answer."""
    states = list(db.state_cities)
    cities = db.city_set
    scripts = {}
    for i, (q, n) in enumerate(zip(queries, n_calls)):
        turns = []
        for j in range(n):
            if j % 2 == 0:
                turns.append(render_tool_call("SearchCity", {"state": states[(i + j) % len(states)]}, f"Step {j}."))
            else:
                turns.append(render_tool_call("GoogleDistanceMatrix", {"origin": cities[i], "destination": cities[j],
                                                                       "mode": "taxi"}, f"Step {j}."))
        turns.append(render_answer("Day 1:\nCurrent City: -", "Finished."))
        scripts[q["query"]] = turns
    return scripts


def _guided(tiny_backend, generated_db, queries, n_calls):
    return GuidedBackend(tiny_backend, ReplayGuide.from_turns(tiny_backend.tokenizer,
                                                              _scripts(generated_db, queries, n_calls)))


RC = dict(max_new_tokens=160, progress=False, seed=11)
FREE = dict(RC, max_new_tokens=24)


def test_async_equals_lockstep_for_the_same_seeds_free_sampling(tiny_backend, generated_db, synthetic_queries):
    qs = synthetic_queries[:4]
    a = RolloutEngine(tiny_backend, generated_db, rollout_config=RolloutConfig(max_batch=3, max_in_flight=5, **FREE)).run(qs, 2)
    b = LockstepEngine(tiny_backend, generated_db, rollout_config=RolloutConfig(max_batch=4, **FREE)).run(qs, 2)
    assert [(t.query_id, t.sample) for t in a] == [(t.query_id, t.sample) for t in b]
    assert [t.token_ids for t in a] == [t.token_ids for t in b]
    assert [t.messages for t in a] == [t.messages for t in b]
    assert a[0].token_ids != a[1].token_ids  # two samples of one query are different draws
    assert all(t.finish_reason == "format_error" for t in a)  # a random policy cannot follow the protocol


def test_async_equals_lockstep_over_multi_turn_episodes(tiny_backend, generated_db, synthetic_queries):
    qs = synthetic_queries[:5]
    backend = _guided(tiny_backend, generated_db, qs, [0, 4, 1, 5, 2])
    a = RolloutEngine(backend, generated_db, rollout_config=RolloutConfig(max_batch=3, max_in_flight=4, **RC)).run(qs)
    b = LockstepEngine(backend, generated_db, rollout_config=RolloutConfig(max_batch=3, **RC)).run(qs)
    assert [t.tool_calls for t in a] == [0, 4, 1, 5, 2]
    assert [t.finish_reason for t in a][:5] == ["answer"] * 5
    for x, y in zip(a, b):
        assert x.token_ids == y.token_ids and x.policy_mask == y.policy_mask and x.messages == y.messages
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)  # batch composition moves floats only


def test_policy_mask_marks_exactly_the_generated_tokens(tiny_backend, generated_db, synthetic_queries):
    qs = synthetic_queries[:1]
    t = RolloutEngine(_guided(tiny_backend, generated_db, qs, [3]), generated_db,
                      rollout_config=RolloutConfig(**RC)).run(qs)[0]
    tok = tiny_backend.tokenizer
    assert len(t.token_ids) == len(t.policy_mask) == len(t.logprobs) == t.n_tokens
    assert t.policy_mask[: t.prompt_len] == [0] * t.prompt_len
    # Split into runs of equal mask and compare with the messages.
    runs, start = [], t.prompt_len
    for i in range(t.prompt_len + 1, len(t.token_ids) + 1):
        if i == len(t.token_ids) or t.policy_mask[i] != t.policy_mask[start]:
            runs.append((t.policy_mask[start], t.token_ids[start:i], t.logprobs[start:i]))
            start = i
    assistant = [m["content"] for m in t.messages if m["role"] == "assistant"]
    observations = [m["content"] for m in t.messages[2:] if m["role"] == "user"]
    policy_runs = [r for r in runs if r[0] == 1]
    obs_runs = [r for r in runs if r[0] == 0]
    assert len(policy_runs) == len(assistant) == 4 and len(obs_runs) == len(observations) == 3
    for (_, ids, lps), text in zip(policy_runs, assistant):
        assert ids[-1] == tok.eos_token_id and tok.decode(ids[:-1]) == text
        assert all(lp < 0 for lp in lps)
    for (_, ids, lps), text in zip(obs_runs, observations):
        assert text in tok.decode(ids) and all(lp == 0.0 for lp in lps)
    # Token-in/token-out: the ids equal the chat template over the messages, no drift.
    rendered = tok.apply_chat_template(t.messages, tokenize=False)
    assert tok.decode(t.token_ids) == rendered[: len(tok.decode(t.token_ids))]


def test_context_limit_stops_an_episode_as_overflow(tiny_backend, generated_db, synthetic_queries):
    qs = synthetic_queries[:1]
    backend = _guided(tiny_backend, generated_db, qs, [8])
    probe = RolloutEngine(backend, generated_db, rollout_config=RolloutConfig(**RC)).run(qs)[0]
    limit = probe.prompt_len + 120
    t = RolloutEngine(backend, generated_db, AgentConfig(max_context=limit), RolloutConfig(**RC)).run(qs)[0]
    assert t.finish_reason == "context_overflow" and t.n_tokens <= limit and not t.success
    assert 0 < t.tool_calls < 8


def test_call_budget_and_failure_injection_in_the_engine(tiny_backend, generated_db, synthetic_queries):
    qs = synthetic_queries[:1]
    backend = _guided(tiny_backend, generated_db, qs, [5])
    t = RolloutEngine(backend, generated_db, AgentConfig(tool_budget=2, failure_rate=1.0),
                      RolloutConfig(**RC)).run(qs)[0]
    assert t.finish_reason == "call_budget" and t.tool_calls == 2 and t.tool_errors == 2
    assert all("is not available" in m["content"] for m in t.messages[3::2] if m["role"] == "user")


def test_continuous_batching_gives_the_trajectories_of_wave_batching_in_fewer_passes(
        tiny_backend, generated_db, synthetic_queries):
    qs = synthetic_queries[:6]
    backend = _guided(tiny_backend, generated_db, qs, [0, 5, 1, 4, 2, 6])
    passes = []
    forward = tiny_backend.model.forward
    tiny_backend.model.forward = lambda *a, **k: passes.append(1) or forward(*a, **k)
    try:
        runs = {}
        for continuous in (True, False):
            passes.clear()
            cfg = RolloutConfig(max_batch=3, max_in_flight=6, continuous=continuous, admit_every=2, **RC)
            runs[continuous] = (RolloutEngine(backend, generated_db, rollout_config=cfg).run(qs), len(passes))
    finally:
        del tiny_backend.model.forward
    (a, n_cont), (b, n_wave) = runs[True], runs[False]
    assert [t.tool_calls for t in a] == [0, 5, 1, 4, 2, 6]
    for x, y in zip(a, b):
        assert x.token_ids == y.token_ids and x.policy_mask == y.policy_mask and x.messages == y.messages
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)
    print(f"model passes: continuous {n_cont}, waves {n_wave}")
    assert n_cont < n_wave  # a finished row's next turn no longer waits for the longest row of its batch
