"""ARPO: entropy-guided adaptive rollout at tool-call boundaries.

Per query: sample `initial` complete rollouts; measure the policy's mean token entropy over the
first k tokens it generated at the start of the episode (H0) and after every tool response
(H_t). Where H_t - H0 exceeds the threshold, the policy is uncertain after that observation:
branch extra partial trajectories from that prefix (the episode replayed up to there, then
sampled afresh). Branches are budgeted so the group holds exactly G trajectories; budget left
over (no uncertain step) goes to fresh complete rollouts. Each branch remembers its parent and
branch point for the advantage bookkeeping in batch.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from star.rollout.base import Generation, derive_seed
from star.rollout.lockstep import run_lockstep
from star.training.losses import token_logprobs


def turn_starts(policy_mask: Sequence[int]) -> list[int]:
    """Index of the first token of each policy turn (a 0→1 edge of the mask)."""
    return [t for t, m in enumerate(policy_mask) if m and (t == 0 or not policy_mask[t - 1])]


def turn_entropies(entropy: Sequence[float], starts: Sequence[int], k: int) -> list[float]:
    """Mean entropy over the first k tokens of each turn; entropy[t] is the policy's entropy when producing token t."""
    out = []
    for i, s in enumerate(starts):
        end = min(s + k, starts[i + 1] if i + 1 < len(starts) else len(entropy))
        window = [entropy[t] for t in range(s, max(end, s + 1)) if t < len(entropy)]
        out.append(sum(window) / len(window) if window else 0.0)
    return out


@dataclass(frozen=True)
class BranchPlan:
    parent: int
    """Index of the trajectory (within its group) to branch from."""
    turn: int
    """Policy turn at which the branch starts sampling afresh (>= 1: after a tool response)."""
    delta: float
    """Entropy rise H_t - H0 that triggered it."""


def plan_branches(entropies: Sequence[Sequence[float]], budget: int, threshold: float,
                  per_point: int) -> list[BranchPlan]:
    """Choose branch points across a group: highest entropy rise first, at most per_point each, budget in all."""
    candidates = [BranchPlan(i, t, h[t] - h[0]) for i, h in enumerate(entropies) for t in range(1, len(h))
                  if h[t] - h[0] > threshold]
    candidates.sort(key=lambda c: (-c.delta, c.parent, c.turn))
    plans: list[BranchPlan] = []
    for c in candidates:
        for _ in range(per_point):
            if len(plans) >= budget:
                return plans
            plans.append(c)
    return plans


def trajectory_entropies(model, trajectories, k: int, temperature: float = 1.0) -> list[list[float]]:
    """Per-turn entropy profile of each trajectory under the current policy (no gradients)."""
    import torch

    out = []
    with torch.no_grad():
        for t in trajectories:
            ids = torch.tensor([t.token_ids])
            _, ent = token_logprobs(model, ids, torch.ones_like(ids), temperature, with_entropy=True)
            per_token = [0.0] + ent[0].tolist()  # align: entropy when producing token t
            out.append(turn_entropies(per_token, turn_starts(t.policy_mask), k))
    return out


def branch_episode(stepper, parent, query: dict, turn: int, index: int, branch_id: int):
    """A new episode that replays the parent's first `turn` turns (same tools, same observations)
    and samples on from there with its own seed. None if the replay does not reproduce the prefix."""
    ep = stepper.start(index, query, parent.query_id, parent.sample)  # parent's seed: same tool failures
    starts = turn_starts(parent.policy_mask)
    mask = parent.policy_mask
    for j in range(turn):
        s = starts[j]
        e = s
        while e < len(mask) and mask[e]:
            e += 1
        gen = Generation(list(parent.token_ids[s:e]), list(parent.logprobs[s:e]), "stop")
        stepper.execute(ep, gen, stepper.base.max_new_tokens)
        if ep.env.done:
            return None
    if ep.ids != list(parent.token_ids[: starts[turn]]):
        return None
    ep.seed = derive_seed(parent.seed, "branch", turn, branch_id)  # fresh sampling from here on
    ep.sample = branch_id
    return ep


def arpo_group(engine, model, query: dict, group_size: int, initial: int, threshold: float, k: int,
               per_point: int, temperature: float = 1.0):
    """One query's group of `group_size` trajectories; returns (trajectories, parents, branch_points, n_branches)."""
    stepper, backend = engine.stepper, engine.backend
    roots = engine.run([query], initial)
    plans = plan_branches(trajectory_entropies(model, roots, k, temperature), group_size - initial, threshold, per_point)
    episodes, parents, points = [], [], []
    for n, plan in enumerate(plans):
        ep = branch_episode(stepper, roots[plan.parent], query, plan.turn, index=n, branch_id=initial + n)
        if ep is not None:
            episodes.append(ep)
            parents.append(plan.parent)
            points.append(turn_starts(roots[plan.parent].policy_mask)[plan.turn])
    n_branches = len(episodes)
    # Budget not spent on branches: fresh complete rollouts keep the group at G.
    qid = roots[0].query_id
    for j in range(group_size - initial - n_branches):
        episodes.append(stepper.start(n_branches + j, query, qid, initial + n_branches + j))
        parents.append(None)
        points.append(0)
    extra = run_lockstep(stepper, backend, episodes) if episodes else []
    return list(roots) + extra, [None] * initial + parents, [0] * initial + points, n_branches
