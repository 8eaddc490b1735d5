"""Guided generation: a guide decides the continuation, a real model decodes and scores it.

For driving the rollout engine through realistic multi-turn episodes with a model that cannot
yet follow the protocol (a tiny random policy in tests and in bench/rollout.py): the guide
returns the text of the next assistant turn (e.g. a built-in teacher's, replayed), and the
transformers model decodes exactly those tokens step by step with its KV cache — the compute of
generating them — and returns their log-probs. Where the guide returns None the model samples
freely. Teacher-forced log-probs of teacher turns are also what off-policy analyses need.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from star.agent.trajectory import Trajectory
from star.rollout.base import Generation, GenerationBackend, SamplingParams


class GuidedBackend(GenerationBackend):
    def __init__(self, inner, guide: Callable[[list[int]], str | None]):
        self.inner, self.guide = inner, guide
        self.tokenizer = inner.tokenizer
        self._eos = [inner.tokenizer.eos_token_id]

        if hasattr(inner, "generate_continuous"):  # the engine batches continuously where the inner model can
            self.generate_continuous = self._generate_continuous

    def _forced(self, prompt: Sequence[int]) -> list[int] | None:
        text = self.guide(list(prompt))
        return None if text is None else self.tokenizer(text, add_special_tokens=False)["input_ids"] + self._eos

    def generate(self, prompts: Sequence[Sequence[int]],
                 params: SamplingParams | Sequence[SamplingParams]) -> list[Generation]:
        return self.inner.generate(prompts, params, forced=[self._forced(p) for p in prompts])

    def _generate_continuous(self, requests: Sequence[tuple], refill: Callable[[int], Sequence[tuple]],
                             on_done: Callable[[object, Generation], None], admit_every: int = 8) -> None:
        guided = lambda reqs: [(tag, p, sp, self._forced(p)) for tag, p, sp in reqs]  # noqa: E731
        self.inner.generate_continuous(guided(requests), lambda n: guided(refill(n)), on_done, admit_every)

    def update_weights(self, state_dict) -> None:
        self.inner.update_weights(state_dict)


class ReplayGuide:
    """Replays recorded assistant turns: finds the episode by its user message and the turn by count."""

    def __init__(self, tokenizer, trajectories: Sequence[Trajectory], assistant_header: str = "<|im_start|>assistant"):
        self.tokenizer, self.header = tokenizer, assistant_header
        self.turns: dict[str, list[str]] = {}
        for t in trajectories:
            user = next(m["content"] for m in t.messages if m["role"] == "user")
            self.turns[user] = [m["content"] for m in t.messages if m["role"] == "assistant"]

    @classmethod
    def from_turns(cls, tokenizer, turns_by_user_text: dict[str, list[str]]) -> ReplayGuide:
        """A guide from scripted assistant turns, keyed by the user message (the query text)."""
        guide = cls(tokenizer, [])
        guide.turns = {u: list(t) for u, t in turns_by_user_text.items()}
        return guide

    def __call__(self, prompt_ids: list[int]) -> str | None:
        text = self.tokenizer.decode(prompt_ids, skip_special_tokens=False)
        for user, turns in self.turns.items():
            if user in text:
                i = text.count(self.header) - 1
                return turns[i] if 0 <= i < len(turns) else None
        return None
