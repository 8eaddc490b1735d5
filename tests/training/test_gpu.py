"""On a CUDA device (scripts/gpu_check.sh): DeepSpeed bf16 training steps, the learning probe's GRPO on CUDA,
and the real vLLM engine against the transformers backend when vLLM is installed. Skipped without a GPU."""

from __future__ import annotations

import pytest
import torch

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def test_a_bf16_zero2_sft_step_on_cuda_moves_the_weights(smoke_dir, generated_db, tmp_path):
    from star.training.config import SFTConfig
    from star.training.models import load_model
    from star.training.sft import train_sft
    from star.training.synthetic import scripted_conversations, write_sft_jsonl

    write_sft_jsonl(tmp_path / "sft.jsonl", scripted_conversations(generated_db, 4, seed=0, system="Plan."))
    cfg = SFTConfig(batch_size=2, micro_batch_size=1, epochs=1, max_steps=2, learning_rate=1e-3, eval_fraction=0.0,
                    zero_stage=2, bf16=True)
    summary = train_sft(tmp_path / "sft.jsonl", smoke_dir, tmp_path / "out", cfg, progress=False)
    assert summary["steps"] == 2 and summary["last_loss"] < summary["first_loss"] * 1.5
    before, after = load_model(smoke_dir).state_dict(), load_model(tmp_path / "out").state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_grpo_on_cuda_in_bf16_learns_the_probe_task(tmp_path):
    """The whole GRPO step on the device (rollouts, nccl, a bf16 DeepSpeed update, weight sync): the
    learning probe's reward must rise as it does on CPU (tests/training/test_learning_probe.py)."""
    from tests.training.probe import build_probe_model, run_probe

    model_dir, targets = build_probe_model(tmp_path / "tiny")
    curve = run_probe(model_dir, targets, tmp_path / "run", seed=0, steps=8, bf16=True)
    assert len(curve) == 8, curve
    assert sum(curve[-2:]) / 2 - curve[0] > 0.25 and curve[-1] > 0.85, curve


def test_real_vllm_matches_the_transformers_backends_contract(smoke_dir):
    pytest.importorskip("vllm")
    from star.rollout.backends.transformers import TransformersBackend
    from star.rollout.backends.vllm import VLLMBackend
    from star.rollout.base import SamplingParams
    from star.rollout.chat import prompt_ids

    ref = TransformersBackend.from_pretrained(str(smoke_dir), device="cuda", dtype="float32")
    backend = VLLMBackend(str(smoke_dir), gpu_memory_utilization=0.2, max_model_len=2048, dtype="float32",
                          enable_sleep_mode=True, enforce_eager=True)
    prompt = prompt_ids(ref.tokenizer, [{"role": "user", "content": "Plan a trip."}])
    greedy = SamplingParams(temperature=0.0, max_new_tokens=16)
    a, b = backend.generate([prompt], greedy)[0], ref.generate([prompt], greedy)[0]
    assert a.token_ids == b.token_ids and a.finish_reason == b.finish_reason
    assert a.logprobs == pytest.approx(b.logprobs, abs=1e-2)
    backend.sleep()
    backend.update_weights(ref.model.state_dict())
    assert backend.generate([prompt], greedy)[0].token_ids == b.token_ids
