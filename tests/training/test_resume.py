"""Checkpoint / resume: a run killed after step k and resumed matches an uninterrupted run's next step."""

import json
import random

import pytest
import torch

from star.training.checkpoint import rng_state, set_rng_state
from star.training.rl_config import GRPOConfig
from star.training.grpo import GRPOTrainer, QueryStream, training_queries


def test_rng_state_round_trips_through_json():
    random.seed(3)
    torch.manual_seed(3)
    state = json.loads(json.dumps(rng_state()))
    a = (random.random(), torch.rand(2).tolist())
    set_rng_state(state)
    assert (random.random(), torch.rand(2).tolist()) == a


def test_query_stream_resumes_at_the_same_next_batch():
    s = QueryStream(5, seed=7)
    seen = [s.next(2) for _ in range(3)]  # epoch 1: 2+2+1
    assert [e for _, e in seen] == [1, 1, 1] and sorted(i for b, _ in seen for i in b) == list(range(5))
    again = QueryStream(5, seed=7, **QueryStream(5, seed=7, epoch=1, cursor=4).state())
    assert again.next(2) == seen[2]
    assert s.next(2)[1] == 2  # a batch never straddles epochs


def test_train_queries_keeps_the_first_n_so_every_step_sees_the_same_batch():
    queries = [{"idx": i} for i in range(6)]
    cfg = GRPOConfig(batch_queries=2, train_queries=2)
    kept = training_queries(queries, cfg)
    assert kept == queries[:2]
    s = QueryStream(len(kept), seed=0)
    assert all(sorted(s.next(2)[0]) == [0, 1] for _ in range(4))
    assert training_queries(queries, GRPOConfig()) == queries


def test_train_queries_beyond_the_file_is_a_clear_error():
    with pytest.raises(ValueError, match="train_queries=9 but only 6"):
        training_queries([{}] * 6, GRPOConfig(train_queries=9))


class FixedRollouts(GRPOTrainer):
    """Trajectories from a fixed, query-dependent source: isolates the trainer's own state
    (weights, optimizer, scheduler, RNG, data order) from rollout sampling."""

    def rollout(self, queries, seed):
        from star.training.data import encode_conversation

        groups = []
        for q in queries:
            trajs = []
            for s, msgs in enumerate(q["conversations"]):
                ex = encode_conversation(self.tokenizer, msgs)
                score = (q["n"] * 7 + s * 3) % 5 / 4  # rewards differ within and across groups
                trajs.append(type("T", (), dict(query_id=q["id"], sample=s, token_ids=ex.input_ids,
                                                policy_mask=ex.loss_mask, logprobs=[], finish_reason="answer",
                                                scores={"cs_micro": score, "success": score > 0.7}, tool_calls=1,
                                                seed=s))())
            groups.append((trajs, [None] * len(trajs), [0] * len(trajs)))
        return groups, 0


@pytest.fixture(scope="module")
def fixed_queries(generated_db):
    from star.training.synthetic import scripted_conversations

    convs = scripted_conversations(generated_db, 4, seed=4, system="Plan.", max_obs_lines=1)
    return [{"id": f"q{n}", "n": n, "conversations": convs[2 * n:2 * n + 2]} for n in range(2)]


def _cfg(max_steps):
    return GRPOConfig(batch_queries=2, num_generations=2, learning_rate=1e-3, max_steps=max_steps, bf16=False,
                      zero_stage=2, save_every=1, mini_batches=2, micro_batch_size=1, num_iterations=2,
                      env_failure_rate=0.05)


def test_killed_and_resumed_run_matches_the_uninterrupted_next_step(smoke_dir, fixed_queries, generated_db, tmp_path):
    queries = fixed_queries[:2]  # batch 2: step 2 starts epoch 2 (a fresh permutation)
    full = FixedRollouts(smoke_dir, queries, tmp_path / "full", _cfg(2), db=generated_db, progress=False)
    full.train()
    rows_full = [json.loads(x) for x in (tmp_path / "full" / "metrics.jsonl").read_text().splitlines()]

    killed = FixedRollouts(smoke_dir, queries, tmp_path / "resumed", _cfg(1), db=generated_db, progress=False)
    killed.train()  # "killed" after step 1 (its checkpoint is on disk)
    resumed = FixedRollouts(smoke_dir, queries, tmp_path / "resumed", _cfg(2), db=generated_db, progress=False)
    resumed.train(resume=True)
    rows_resumed = [json.loads(x) for x in (tmp_path / "resumed" / "metrics.jsonl").read_text().splitlines()]

    assert [r["step"] for r in rows_resumed] == [1, 2]
    a, b = rows_full[1], rows_resumed[1]
    assert a["epoch"] == b["epoch"] == 2
    for key in ("loss", "reward_mean", "grad_norm", "ratio_mean", "entropy", "lr"):
        assert b[key] == pytest.approx(a[key], rel=1e-5, abs=1e-7), key
    assert a["loss"] != 0.0 and a["grad_norm"] > 0  # the step really updated something
    sd_full, sd_res = full.engine.module.state_dict(), resumed.engine.module.state_dict()
    assert all(torch.allclose(sd_full[k], sd_res[k], atol=1e-6) for k in sd_full)


def test_tool_failures_are_injected_in_training_rollouts_only(smoke_dir, fixed_queries, generated_db, tmp_path):
    trainer = FixedRollouts(smoke_dir, fixed_queries, tmp_path / "noise", _cfg(1), db=generated_db, progress=False)
    assert trainer._engine(0, train=True).stepper.agent_config.failure_rate == 0.05
    assert trainer._engine(0, train=False).stepper.agent_config.failure_rate == 0.0
