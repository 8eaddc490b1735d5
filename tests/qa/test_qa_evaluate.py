"""End to end on CPU: a real tiny policy through the rollout engine and the QA env, scored and tabled."""

from __future__ import annotations

import json
import re

import pytest

from star.qa.config import EpisodeConfig, QAConfig, RetrievalConfig
from star.qa.evaluate import evaluate_ood, mlflow_metrics, run_episodes

_MSG = re.compile(r"<\|im_start\|>(\w+)\n(.*?)<\|im_end\|>", re.DOTALL)


def guided(tiny_policy, reader):
    """The tiny model decodes (and scores) exactly the reader's turns: the engine's real token path."""
    from star.rollout.backends import TransformersBackend
    from star.rollout.backends.guided import GuidedBackend

    model, tokenizer = tiny_policy

    def guide(prompt_ids):
        text = tokenizer.decode(prompt_ids, skip_special_tokens=False)
        messages = [{"role": r, "content": c} for r, c in _MSG.findall(text)]
        return reader.turn(messages)

    return GuidedBackend(TransformersBackend(model, tokenizer, max_batch=8), guide)


def small_config(tmp_path, **episode) -> QAConfig:
    return QAConfig(datasets=["world"], limit=20, retrieval=RetrievalConfig(cache_dir=str(tmp_path / "index")),
                    episode=EpisodeConfig(**{"max_new_tokens": 16, "max_turns": 4, "batch_size": 8, **episode}))


def test_searching_agent_answers_through_the_engine(tmp_path, tiny_policy, oracle_reader, generated_world):
    from star.qa.datasets import load_qa

    _, _, _, retriever = generated_world
    examples = load_qa("world", limit=20).examples
    backend = guided(tiny_policy, oracle_reader(examples))
    trajectories = run_episodes(backend, examples, retriever, small_config(tmp_path, max_new_tokens=200),
                                progress=False)
    assert [t.query_id for t in trajectories] == [e["id"] for e in examples]
    assert all(t.finish_reason == "answer" for t in trajectories)
    em = sum(t.scores["em"] for t in trajectories) / len(trajectories)
    assert em >= 0.8, [(t.answer, e["golden_answers"]) for t, e in zip(trajectories, examples)]
    two_hop = [t for t, e in zip(trajectories, examples) if e["metadata"]["hops"] == 2]
    assert two_hop and any(t.tool_calls == 2 and t.scores["em"] == 1.0 for t in two_hop)  # followed the bridge
    t = trajectories[0]
    assert t.messages[2]["role"] == "assistant" and t.messages[3]["content"].startswith("<tool_response>")
    assert len(t.token_ids) == len(t.policy_mask) == len(t.logprobs) == t.n_tokens
    assert 0 < t.n_policy_tokens < t.n_tokens


def test_evaluate_ood_writes_results_table_and_predictions(tmp_path, tiny_policy):
    from star.rollout.backends import TransformersBackend

    model, tokenizer = tiny_policy
    config = small_config(tmp_path)
    config.datasets = ["world", "tests/fixtures/qa/bamboogle_test.csv"]
    out = tmp_path / "ood"
    results = evaluate_ood(None, out, config, backend=TransformersBackend(model, tokenizer, max_batch=8),
                           model_name="tiny-random", progress=False)
    assert list(results["datasets"]) == ["world", "bamboogle"]
    world = results["datasets"]["world"]
    assert world["n"] == 20 and results["datasets"]["bamboogle"]["n"] == 2
    # an untrained policy never follows the protocol: every episode is a failure, none crashes
    assert world["em"] == 0.0 and world["answered"] + world["format_error"] + world["context_overflow"] \
        + world["call_budget"] == pytest.approx(1.0)
    assert world["retrieval"]["k"] == 5 and world["retrieval"]["support_hit"] > 0.9
    assert json.loads((out / "results.json").read_text())["average_em"] == results["average_em"]
    table = (out / "table.md").read_text()
    assert table.splitlines()[0] == "| Model | Bamboogle | World | Avg. |"
    assert table.splitlines()[2].startswith("| tiny-random | 0.0 | 0.0 | 0.0 |")
    preds = [json.loads(line) for line in (out / "predictions" / "world.jsonl").read_text().splitlines()]
    assert len(preds) == 20 and {"prediction", "em", "finish_reason", "messages"} <= set(preds[0])
    metrics = mlflow_metrics(results)
    assert metrics["qa.average_em"] == 0.0 and metrics["ood_average"] == 0.0
    assert metrics["qa.world.format_error"] == world["format_error"] and "qa.world.retrieval_support_recall" in metrics
    assert json.loads((out / "metrics.json").read_text()) == metrics  # what DVC and the stage run log


def test_bad_dataset_fails_before_anything_is_written(tmp_path, tiny_policy):
    from star.qa.datasets import DatasetError
    from star.rollout.backends import TransformersBackend

    model, tokenizer = tiny_policy
    config = small_config(tmp_path)
    config.datasets = ["world", str(tmp_path / "missing.jsonl")]
    with pytest.raises(DatasetError, match="missing.jsonl: QA file not found"):
        evaluate_ood(None, tmp_path / "out", config, backend=TransformersBackend(model, tokenizer), progress=False)
    assert not (tmp_path / "out").exists()


def test_the_engine_drives_the_qa_env_through_its_hook_as_lock_step_does(tiny_policy, generated_world):
    from star.agent.config import AgentConfig
    from star.qa.datasets import load_qa
    from star.qa.env import QAEnv, em_reward
    from star.rollout.backends import TransformersBackend
    from star.rollout.config import RolloutConfig
    from star.rollout.engine import RolloutEngine
    from star.rollout.lockstep import LockstepEngine

    model, tokenizer = tiny_policy
    _, _, _, retriever = generated_world
    examples = load_qa("world", limit=6).examples
    episode = EpisodeConfig(max_turns=3, max_new_tokens=12)
    agent = AgentConfig(tool_budget=2, max_context=2048)
    roll = RolloutConfig(max_batch=4, max_in_flight=4, temperature=1.0, max_new_tokens=12, seed=3, progress=False)
    kwargs = dict(reward_fn=em_reward, env_factory=lambda seed: QAEnv(retriever, episode))
    backend = TransformersBackend(model, tokenizer, max_batch=4)
    fast = RolloutEngine(backend, None, agent, roll, **kwargs).run(examples)
    slow = LockstepEngine(backend, None, agent, roll, **kwargs).run(examples)
    assert [t.messages[0]["content"] for t in fast] == [t.messages[0]["content"] for t in slow]
    assert "Search" in fast[0].messages[0]["content"]  # the QA system prompt, not TravelPlanner's
    assert [(t.token_ids, t.finish_reason, t.scores) for t in fast] == [(t.token_ids, t.finish_reason, t.scores)
                                                                         for t in slow]
