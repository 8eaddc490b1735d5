"""Evaluating a policy on a query set: run every query, score every plan, tabulate (recipe §5).

A local checkpoint runs through the rollout engine (transformers, token-in/token-out); an
endpoint runs through the same engine over HTTP when a tokenizer is known (token ids), else in
chat mode (the LLM-teacher loop). Metrics come from the evaluator's own aggregation in the
configured mode; a trajectory that overflows, exhausts its calls or breaks the format counts as
an undelivered plan.
"""

from __future__ import annotations

import json
from pathlib import Path

from star.agent.config import AgentConfig
from star.agent.trajectory import Trajectory, write_jsonl, write_trajectories
from star.evaluation.audit import audit_scores, audit_table, hacking_audit, hacking_table, score_both
from star.evaluation.evaluator import MODES, aggregate
from star.evaluation.lookup import Lookup
from star.evaluation.rewards import REWARDS, MissingScore, compute_reward
from star.policy_eval.config import EvalConfig
from star.rollout.config import RolloutConfig
from star.rollout.engine import RolloutEngine
from star.sandbox.rows import Database
from star.training.checkpoint import fingerprint

METRIC_COLUMNS = [("delivery_rate", "delivery"), ("commonsense_micro", "cs micro"), ("commonsense_macro", "cs macro"),
                  ("hard_micro", "hard micro"), ("hard_macro", "hard macro"), ("success_rate", "success")]


def agent_config(cfg: EvalConfig) -> AgentConfig:
    return AgentConfig(prompt=cfg.prompt, tool_budget=cfg.tool_budget, max_context=cfg.max_context,
                       failure_rate=0.0, eval_mode=cfg.mode)  # evaluation always runs clean (recipe §4)


def run_policy(backend, db: Database, queries: list[dict], cfg: EvalConfig, max_batch: int = 8,
               progress: bool = True, agent_name: str = "policy", journal=None) -> list[Trajectory]:
    """`journal` (an EpisodeJournal): episodes it holds are kept, each new one is appended as it ends."""
    rc = RolloutConfig(max_batch=max_batch, max_in_flight=max(2 * max_batch, 1), temperature=cfg.temperature,
                       top_p=cfg.top_p, max_new_tokens=cfg.max_new_tokens, seed=cfg.seed, progress=progress)
    engine = RolloutEngine(backend, db, agent_config(cfg), rc, agent_name=agent_name)
    if journal is None:
        return engine.run(queries, cfg.samples)
    done = journal.load()
    if done and progress:
        print(f"resuming: {len(done)} episodes already in {journal.path}")
    try:
        return engine.run(queries, cfg.samples, done=done, on_finish=journal.append)
    finally:
        journal.close()


def journal_key(model: str, queries: list[dict], db_spec: str | None, cfg: EvalConfig) -> str:
    """What a journal must share with a run to resume it: the model's files (or endpoint), the queries, the
    database and every eval setting but how many episodes decode together."""
    return fingerprint(model, {"model": model, "queries": queries, "db": db_spec}, cfg.model_dump(), skip={"batch"})


def metrics(trajectories: list[Trajectory], queries: list[dict], db: Database, mode: str) -> dict:
    """The evaluator's aggregate over the trajectories' plans in `mode` (plus finish reasons), and the
    loophole audit: every plan scored in both modes (flat `official_*` / `strict_*` / `loophole_gap*` keys)."""
    from collections import Counter

    if mode not in MODES:
        raise ValueError(f"unknown evaluator mode {mode!r}; expected one of {MODES}")
    by_id = {str(q.get("id", q.get("idx", i))): q for i, q in enumerate(queries)}
    lookup = Lookup.for_db(db)
    both = [score_both(by_id[t.query_id], t.plan, db, lookup) for t in trajectories]
    out = aggregate([b[mode] for b in both])
    out.update(audit_scores(both))
    out["finish_reasons"] = dict(Counter(t.finish_reason for t in trajectories))
    out["mean_tool_calls"] = sum(t.tool_calls for t in trajectories) / max(len(trajectories), 1)
    out["mean_tokens"] = sum(t.n_tokens for t in trajectories) / max(len(trajectories), 1)
    # The training rewards of these episodes (scored in the episodes' own evaluator mode), so a policy's
    # reward on its RL queries can be measured before and after training.
    out["mean_reward"] = {}
    per_episode: dict[str, list[float]] = {}
    for name in REWARDS:
        try:
            per_episode[name] = [compute_reward(name, t.scores, t.finish_reason) for t in trajectories]
        except MissingScore:  # episodes journaled by an older evaluator: that reward is left out, not 0
            continue
        out["mean_reward"][name] = sum(per_episode[name]) / max(len(trajectories), 1)
    # Which of these plans are not plans, and how much of each reward they earn (strict reading).
    out.update(hacking_audit([b["strict"].to_dict() for b in both], per_episode))
    return out


def metric_table(m: dict) -> str:
    head = "| level | n | " + " | ".join(name for _, name in METRIC_COLUMNS) + " |"
    lines = [f"evaluator mode: {m.get('mode')}; rates as fractions in [0, 1]", "", head,
             "|" + "---|" * (len(METRIC_COLUMNS) + 2)]
    rows = [(lvl, r) for lvl, r in m.get("per_level", {}).items()] + [("all", m)]
    for lvl, r in rows:
        lines.append(f"| {lvl} | {r['n']} | " + " | ".join(f"{r[k]:.3f}" for k, _ in METRIC_COLUMNS) + " |")
    lines += ["", "finish reasons: " + ", ".join(f"{k}: {v}" for k, v in sorted(m.get("finish_reasons", {}).items()))]
    if "loophole_gap" in m:
        lines += ["", "loophole audit (every plan scored in both evaluator modes):", "", audit_table(m)]
    if "hacked_rate" in m:
        lines += ["", hacking_table(m)]
    if m.get("mean_reward"):
        lines += ["", "mean reward per episode: " + ", ".join(f"{k} {v:.3f}" for k, v in m["mean_reward"].items())]
    return "\n".join(lines)


def write_outputs(out_dir: str | Path, trajectories: list[Trajectory], m: dict, cfg: EvalConfig) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    write_trajectories(out / "trajectories.jsonl", trajectories)
    write_jsonl(out / "metrics.jsonl", [{"config": cfg.model_dump(), **m}])
    (out / "metrics.json").write_text(json.dumps({"config": cfg.model_dump(), **m}, indent=2) + "\n", encoding="utf-8")
    (out / "metrics.md").write_text(metric_table(m) + "\n", encoding="utf-8")
    return out
