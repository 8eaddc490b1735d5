"""A rollout batch as training tensors: ids, per-token loss mask, advantages and old log-probs.

Rules applied here, in one place:
- only policy tokens carry loss (tool responses and prompts are masked by the rollout's policy_mask);
- overlength rollouts (finish reason `context_overflow`) carry no loss at all — they still took
  part in their group's advantage statistics upstream (overlong filtering; `mask_overlength=False`
  trains them like any other failed rollout, so looping until the context fills is penalised);
- ARPO branches share their parent's prefix: the prefix tokens are trained once, on the parent,
  with the mean advantage of every trajectory that shares them; the branch trains only its own
  continuation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

OVERLENGTH = "context_overflow"


def is_overlength(finish_reason: str) -> bool:
    return finish_reason == OVERLENGTH


@dataclass
class Sample:
    token_ids: list[int]
    loss_mask: list[int]
    """1 on the tokens that carry loss (aligned with token_ids)."""
    advantages: list[float]
    """Per-token advantage (aligned with token_ids)."""
    rollout_logprobs: list[float]
    """Sampling log-probs from the rollout backend (aligned; 0 where not generated)."""


def shared_prefix_advantages(advantages: Sequence[float], parents: Sequence[int | None],
                             branch_points: Sequence[int], lengths: Sequence[int]) -> list[list[float]]:
    """Per-token advantages with ARPO's branch bookkeeping.

    parents[i] is the index of the trajectory i branched from (None for a root) and
    branch_points[i] the first token it generated on its own. A root's token t is shared by
    every branch with branch point > t, so it gets the mean of their advantages and its own.
    """
    out = []
    for i, (adv, n) in enumerate(zip(advantages, lengths)):
        row = [float(adv)] * n
        if parents[i] is None:
            children = sorted((branch_points[j], advantages[j]) for j in range(len(parents)) if parents[j] == i)
            for t in range(n):
                sharing = [a for b, a in children if b > t]
                if sharing:
                    row[t] = (adv + sum(sharing)) / (1 + len(sharing))
        out.append(row)
    return out


def build_samples(trajectories: Sequence, advantages: Sequence[float], parents: Sequence[int | None] | None = None,
                  branch_points: Sequence[int] | None = None, mask_overlength: bool = True) -> list[Sample]:
    n = len(trajectories)
    parents = list(parents) if parents is not None else [None] * n
    branch_points = list(branch_points) if branch_points is not None else [0] * n
    lengths = [len(t.token_ids) for t in trajectories]
    per_token = shared_prefix_advantages(advantages, parents, branch_points, lengths)
    samples = []
    for i, t in enumerate(trajectories):
        mask = [int(m) for m in t.policy_mask]
        if len(mask) != len(t.token_ids):
            raise ValueError(f"trajectory {t.query_id}/{t.sample}: policy_mask has {len(mask)} entries "
                             f"for {len(t.token_ids)} tokens")
        if mask_overlength and is_overlength(t.finish_reason):
            mask = [0] * len(mask)
        if parents[i] is not None:  # the parent trains the shared prefix
            mask[: branch_points[i]] = [0] * min(branch_points[i], len(mask))
        lp = list(t.logprobs) if len(t.logprobs) == len(t.token_ids) else [0.0] * len(t.token_ids)
        samples.append(Sample(list(t.token_ids), mask, per_token[i], lp))
    return samples


def collate(samples: Sequence[Sample], pad_id: int):
    """Right-padded tensors, shifted for next-token prediction: masks/advantages/log-probs are [B, T-1]."""
    import torch

    width = max(len(s.token_ids) for s in samples)
    B = len(samples)
    ids = torch.full((B, width), pad_id, dtype=torch.long)
    attn = torch.zeros((B, width), dtype=torch.long)
    mask = torch.zeros((B, width), dtype=torch.float32)
    adv = torch.zeros((B, width), dtype=torch.float32)
    lp = torch.zeros((B, width), dtype=torch.float32)
    for b, s in enumerate(samples):
        n = len(s.token_ids)
        ids[b, :n] = torch.tensor(s.token_ids)
        attn[b, :n] = 1
        mask[b, :n] = torch.tensor(s.loss_mask, dtype=torch.float32)
        adv[b, :n] = torch.tensor(s.advantages, dtype=torch.float32)
        lp[b, :n] = torch.tensor(s.rollout_logprobs, dtype=torch.float32)
    # Position t of the log-prob tensor scores token t+1.
    return {"input_ids": ids, "attention_mask": attn, "loss_mask": mask[:, 1:], "advantages": adv[:, 1:],
            "rollout_logprobs": lp[:, 1:]}
