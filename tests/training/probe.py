"""The learning probe's task, shared by the CPU probe (test_learning_probe.py) and its CUDA run (test_gpu.py).

Reply with one token; reward 1 when that token is in a fixed half of the vocabulary (the even ids). A random
tiny model starts near 0.5, and any working policy gradient drives it towards 1 in a few steps.
"""

from __future__ import annotations

import json
from pathlib import Path

from star.agent.env import ProtocolEnv
from star.agent.turns import Turn

N_ROLLOUTS = 8 * 8  # batch_queries x num_generations of run_probe


class FirstTokenEnv(ProtocolEnv):
    """One turn, no tools: the reply is the answer; success when it is one of `targets`."""

    tool_budget = 0

    def __init__(self, targets: frozenset[str]):
        super().__init__(lambda scores, reason: float(bool(scores.get("success"))))
        self.targets = targets

    def opening(self, query: dict) -> list[dict]:
        return [{"role": "user", "content": query["prompt"]}]

    def parse(self, assistant_text: str) -> Turn:
        return Turn("answer", answer=assistant_text)

    def score(self, reason: str) -> dict:
        return {"delivered": True, "success": reason == "answer" and self.answer in self.targets}


def build_probe_model(out: Path, hidden: int = 64) -> tuple[Path, frozenset[str]]:
    """A random 2-layer model and the rewarded half of its vocabulary, as the text one token decodes to
    (hidden 256 gives vLLM's CPU attention a head size it has kernels for: 64)."""
    from star.rollout.tiny_model import build_tiny_model

    _, tokenizer = build_tiny_model(out, hidden=hidden, layers=2, vocab_size=512, seed=0)
    specials = set(tokenizer.all_special_ids)
    targets = frozenset(tokenizer.decode([i]) for i in range(len(tokenizer)) if i % 2 == 0 and i not in specials)
    return out, targets


def run_probe(model_dir, targets, out: Path, seed: int, steps: int, **overrides) -> list[float]:
    """`steps` GRPO steps of 8 prompts x 8 rollouts; the mean reward of each step."""
    from star.training.rl_config import GRPOConfig
    from star.training.grpo import train_grpo

    cfg = GRPOConfig(**{**dict(num_generations=8, batch_queries=8, epochs=100, max_steps=steps, learning_rate=3e-2,
                               reward="success", max_new_tokens=1, max_context=256, temperature=1.0,
                               micro_batch_size=8, rollout_batch=32, save_every=0, zero_stage=0, seed=seed),
                        **overrides})
    queries = [{"id": f"p{i}", "prompt": f"Say one word, number {i}."} for i in range(8)]
    train_grpo(model_dir, queries, out, cfg, progress=False, env_factory=lambda s: FirstTokenEnv(targets))
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [r["reward_mean"] for r in rows if "reward_mean" in r]
