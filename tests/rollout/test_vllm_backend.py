"""The vLLM backend against vllm 0.33.0's API: a stand-in module with the wheel's exact signatures
(tests/fixtures/vllm_api.json), generating with a real transformers model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from star.rollout.base import SamplingParams
from star.rollout.chat import prompt_ids

from tests.rollout import vllm_standin

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "vllm_api.json"


@pytest.fixture
def vllm_backend(monkeypatch, tiny_model_dir):
    vllm_standin.install(monkeypatch)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    from star.rollout.backends.vllm import VLLMBackend

    return VLLMBackend(str(tiny_model_dir), enable_sleep_mode=True, max_model_len=512, seed=3)


@pytest.fixture(scope="module")
def prompts(tiny_backend):
    tok = tiny_backend.tokenizer
    return [prompt_ids(tok, [{"role": "user", "content": t}]) for t in ("Plan a trip.", "Hi", "Dallas to Ohio")]


def test_the_fixture_is_vllm_0_33_drawn_from_its_wheel():
    api = json.loads(FIXTURE.read_text())
    assert api["vllm_version"] == "0.33.0" and api["wheel"].startswith("vllm-0.33.0-")
    init = {p["name"]: p for p in api["methods"]["LLM.__init__"]}
    assert init["seed"]["kind"] == "KEYWORD_ONLY" and init["kwargs"]["kind"] == "VAR_KEYWORD"
    assert "processed_logprobs" in api["literals"]["LogprobsMode"]
    assert "external_launcher" in api["literals"]["DistributedExecutorBackend"]
    assert {"enable_sleep_mode", "logprobs_mode", "enable_prefix_caching"} <= set(api["fields"]["EngineArgs"])


def test_the_stand_in_rejects_what_0_33_does_not_accept(monkeypatch, tiny_model_dir):
    vllm = vllm_standin.install(monkeypatch)
    with pytest.raises(TypeError):
        vllm.SamplingParams(max_new_tokens=4)  # vLLM calls it max_tokens
    with pytest.raises(TypeError):
        vllm.LLM(str(tiny_model_dir), not_an_engine_arg=1)
    with pytest.raises(ValueError):
        vllm.LLM(str(tiny_model_dir), logprobs_mode="sampled")


def test_engine_arguments_ask_for_processed_logprobs_and_sleep_mode(vllm_backend):
    args = vllm_backend.llm.engine_args
    assert args["logprobs_mode"] == "processed_logprobs"  # temperature-applied, like the trainer's
    assert args["enable_sleep_mode"] is True and args["enable_prefix_caching"] is True
    assert "distributed_executor_backend" not in args  # one process: vLLM's own executor


def test_under_a_launcher_the_engine_joins_the_launchers_group(monkeypatch, tiny_model_dir):
    vllm_standin.install(monkeypatch)
    monkeypatch.setenv("WORLD_SIZE", "2")
    from star.rollout.backends.vllm import VLLMBackend

    backend = VLLMBackend(str(tiny_model_dir), max_model_len=512)
    assert backend.llm.engine_args["distributed_executor_backend"] == "external_launcher"


def test_same_ids_logprobs_and_finish_reasons_as_the_transformers_backend(vllm_backend, tiny_backend, prompts):
    params = [SamplingParams(temperature=1.0, max_new_tokens=10, seed=s) for s in (1, 2, 3)]
    ours = vllm_backend.generate(prompts, params)
    ref = tiny_backend.generate(prompts, params)
    for a, b in zip(ours, ref):
        assert a.token_ids == b.token_ids and a.finish_reason == b.finish_reason
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)
    name, call = vllm_backend.llm.calls[-1]
    assert name == "generate" and call["use_tqdm"] is False
    sp = call["sampling_params"][0]
    assert sp.logprobs == 0 and sp.seed == 1 and sp.max_tokens == 10
    assert set(sp.stop_token_ids) == vllm_backend.stop_token_ids


def test_weights_load_in_place_through_vllms_reload_and_reset_the_prefix_cache(vllm_backend, prompts):
    p = SamplingParams(temperature=0.0, max_new_tokens=6)
    before = vllm_backend.generate([prompts[0]], p)[0]
    hf = vllm_backend.llm._hf.model
    state = {k: v.clone() for k, v in hf.state_dict().items()}
    torch.manual_seed(0)
    vllm_backend.update_weights({k: torch.randn_like(v) if v.dim() == 2 else v for k, v in state.items()})
    assert vllm_backend.generate([prompts[0]], p)[0].logprobs != before.logprobs
    vllm_backend.update_weights(iter(state.items()))  # (name, tensor) pairs, as a ZeRO-3 gather streams them
    assert vllm_backend.generate([prompts[0]], p)[0].token_ids == before.token_ids
    names = [n for n, _ in vllm_backend.llm.calls]
    assert names.count("collective_rpc") == 2 and names.count("reset_prefix_cache") == 2
    assert names.index("reset_prefix_cache") == names.index("collective_rpc") + 1
    rpc = next(c for n, c in vllm_backend.llm.calls if n == "collective_rpc")
    assert rpc["method"] == "reload_weights" and rpc["kwargs"]["is_checkpoint_format"] is True


def test_sleep_frees_the_engine_and_weights_wake_first_for_a_sync(vllm_backend, prompts):
    vllm_backend.sleep()
    assert vllm_backend.asleep == {"weights", "kv_cache", "scheduling"}
    state = dict(vllm_backend.llm._hf.model.state_dict())
    vllm_backend.update_weights(state)  # wakes the weights only: the KV cache stays released
    assert vllm_backend.asleep == {"kv_cache", "scheduling"}
    g = vllm_backend.generate([prompts[1]], SamplingParams(temperature=0.0, max_new_tokens=4))[0]
    assert not vllm_backend.asleep and len(g.token_ids) == len(g.logprobs) <= 4
    wake_calls = [c["tags"] for n, c in vllm_backend.llm.calls if n == "wake_up"]
    assert wake_calls == [["weights"], ["kv_cache", "scheduling"]]
