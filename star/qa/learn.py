"""The `learn` demonstration: does our RL loop improve a policy? Measured on a short-horizon tool task.

Task: knowledge QA over the built-in encyclopedia with one tool, BM25 `Search` (star.qa.env.QAEnv),
exact-match reward. Episodes are a few hundred tokens (TravelPlanner's are ~3,000), so a GRPO step
of 32 rollouts takes minutes on two CPU cores. The same machinery as TravelPlanner runs it: the
protocol env, the rollout engine, SFT and the GRPOTrainer on DeepSpeed; only the env differs.

Steps (each a `star learn` sub-command and a stage of learn/dvc.yaml):
    data      questions -> disjoint sft / rl / held-out splits; the built-in teacher's episodes on the
              sft split, rejection-sampled (exact match, answer read from a retrieved passage)
    grpo      GRPO from the SFT model on the rl split
    evaluate  one model on the held-out split, `eval_samples` episodes per question; sample s of
              question q gets the same seed whichever model runs, so two models pair up
    compare   the paired before/after: per-question EM difference, its standard error and z
"""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

from star.agent.config import AgentConfig
from star.qa.builtin_data import build_questions
from star.qa.config import LearnConfig
from star.qa.corpus import write_jsonl
from star.qa.env import QAEnv, em_reward
from star.qa.retrieval import retriever_for
from star.rollout.backends.select import load_backend, resolve_backend
from star.rollout.config import RolloutConfig
from star.rollout.engine import RolloutEngine
from star.sandbox.database import load_database
from star.stats import paired_difference
from star.training.grpo import train_grpo

SPLITS = ("sft", "rl", "heldout")


# -- data ------------------------------------------------------------------------------------------
def split_questions(cfg: LearnConfig) -> dict[str, list[dict]]:
    """Disjoint slices of one seeded shuffle of the world's questions."""
    sizes = {"sft": cfg.sft_questions, "rl": cfg.rl_questions, "heldout": cfg.heldout_questions}
    need = sum(sizes.values())
    if need > cfg.questions:
        raise ValueError(f"learn: the splits need {need} questions but learn.questions is {cfg.questions}")
    questions = build_questions(load_database(cfg.db), cfg.questions, cfg.seed)
    if len(questions) < need:
        raise ValueError(f"learn: world {cfg.db!r} yields only {len(questions)} distinct questions, splits need {need}")
    random.Random(f"learn-split:{cfg.seed}").shuffle(questions)
    out, start = {}, 0
    for name in SPLITS:
        out[name] = questions[start:start + sizes[name]]
        start += sizes[name]
    return out


def retriever(cfg: LearnConfig):
    return retriever_for(f"builtin:{cfg.db}", cfg.retrieval, cfg.db)


def make_env(cfg: LearnConfig, search) -> QAEnv:
    return QAEnv(search, cfg.episode, top_k=cfg.retrieval.top_k, tool_budget=cfg.episode.max_turns - 1,
                 reward_fn=em_reward)


def _call(query: str) -> str:
    return '<tool_call>{"name": "Search", "arguments": {"query": ' + json.dumps(query) + "}}</tool_call>"


def teacher_episode(env: QAEnv, example: dict, titles: dict[str, str]) -> dict:
    """The built-in teacher: search each supporting passage by its title, then answer with the gold
    answer only if a retrieved passage states it. Returns the episode record (messages, EM, why)."""
    env.reset(example)
    answer = example["golden_answers"][0]
    support = (example.get("metadata") or {}).get("supporting_ids") or []
    why, seen = "ok", ""
    for i, pid in enumerate(support):
        title = titles.get(pid)
        if title is None:
            why = f"unknown passage {pid}"
            break
        think = (f"I need to look up {title}." if i == 0 else
                 f"The passage places it in {title}. Now I look up {title} to find its state.")
        obs, _, done, info = env.step(f"<think>{think}</think>\n{_call(title)}")
        if done:
            why = f"ended early ({env.finish_reason})"
            break
        if pid not in info["result"].passage_ids:
            why = f"search for {title!r} missed {pid}"
            break
        seen = obs["content"]
    if why == "ok" and answer.lower() not in seen.lower():
        why = "answer not in the retrieved passages"
    if why == "ok":
        env.step(f"<think>The passage states it: {answer}.</think>\n<answer>{answer}</answer>")
    elif not env.done:
        env.stop("call_budget")
    return {"id": example["id"], "question": example["question"], "messages": list(env.messages),
            "finish_reason": env.finish_reason, "em": float(env.scores.get("em", 0.0)), "why": why,
            "tool_calls": env.tool_calls}


def write_data(cfg: LearnConfig, out_dir: str | Path) -> dict:
    """splits/{sft,rl,heldout}.jsonl, teacher.jsonl (every episode), sft.jsonl (kept), report.json."""
    out = Path(out_dir)
    splits = split_questions(cfg)
    for name, rows in splits.items():
        write_jsonl(out / "splits" / f"{name}.jsonl", rows)
    search = retriever(cfg)
    titles = {p.id: p.title for p in search.passages}
    env = make_env(cfg, search)
    episodes = [teacher_episode(env, ex, titles) for ex in splits["sft"]]
    kept = [e for e in episodes if e["finish_reason"] == "answer" and e["em"] == 1.0]
    write_jsonl(out / "teacher.jsonl", episodes)
    write_jsonl(out / "sft.jsonl", [{"id": e["id"], "messages": e["messages"]} for e in kept])
    reasons: dict[str, int] = {}
    for e in episodes:
        if e["why"] != "ok":
            key = e["why"].split(" for ")[0].split(" (")[0]
            reasons[key] = reasons.get(key, 0) + 1
    report = {"questions": {k: len(v) for k, v in splits.items()}, "teacher_episodes": len(episodes),
              "sft_conversations": len(kept), "kept_rate": len(kept) / max(len(episodes), 1),
              "rejected": reasons}
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    return report


# -- GRPO --------------------------------------------------------------------------------------------
def train(model_dir, queries: list[dict], out, rl_cfg, cfg: LearnConfig, progress: bool = True) -> dict:
    """GRPO on the QA task: the TravelPlanner trainer with the QA env; reward = the env's success (EM)."""
    if rl_cfg.reward != "success":
        raise ValueError(f"learn: the QA task scores exact match only; set rl.reward to success, not {rl_cfg.reward!r}")
    search = retriever(cfg)
    return train_grpo(model_dir, queries, out, rl_cfg, progress=progress,
                      env_factory=lambda seed: make_env(cfg, search))


# -- evaluation --------------------------------------------------------------------------------------
def evaluate(model_dir, questions: list[dict], out, cfg: LearnConfig, name: str | None = None,
             progress: bool = True) -> dict:
    """`eval_samples` episodes per held-out question at the evaluation temperature; episodes.jsonl + summary.json."""
    import torch

    if cfg.torch_threads:
        torch.set_num_threads(cfg.torch_threads)
    ep = cfg.episode
    search = retriever(cfg)
    backend_name = resolve_backend(cfg.backend)
    backend = load_backend(backend_name, model_dir, max_batch=ep.batch_size, max_model_len=ep.max_context,
                           seed=ep.seed, vllm=cfg.vllm)
    engine = RolloutEngine(
        backend, None, AgentConfig(tool_budget=max(1, ep.max_turns - 1), max_context=ep.max_context),
        RolloutConfig(max_batch=ep.batch_size, max_in_flight=2 * ep.batch_size, tool_workers=2,
                      temperature=ep.temperature, top_p=ep.top_p, max_new_tokens=ep.max_new_tokens, seed=ep.seed,
                      progress=progress),
        reward_fn=em_reward, agent_name=name or Path(str(model_dir)).name, env_factory=lambda s: make_env(cfg, search))
    trajs = engine.run(questions, samples_per_query=cfg.eval_samples)
    records = [{"id": t.query_id, "sample": t.sample, "seed": t.seed, "em": float(t.scores.get("em", 0.0)),
                "finish_reason": t.finish_reason, "answer": t.answer, "tool_calls": t.tool_calls,
                "n_tokens": t.n_tokens, "messages": t.messages} for t in trajs]
    out = Path(out)
    write_jsonl(out / "episodes.jsonl", records)
    n = len(records)
    reasons = [r["finish_reason"] for r in records]
    summary = {"model": str(model_dir), "backend": backend_name, "questions": len(questions),
               "samples": cfg.eval_samples, "episodes": n,
               "em": statistics.fmean(r["em"] for r in records),
               "em_se": _se([statistics.fmean(g) for g in _per_question(records).values()]),
               "answered": reasons.count("answer") / n, "format_error": reasons.count("format_error") / n,
               "searches": statistics.fmean(r["tool_calls"] for r in records),
               "tokens": statistics.fmean(r["n_tokens"] for r in records),
               "temperature": ep.temperature}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _per_question(records: list[dict]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for r in records:
        out.setdefault(r["id"], []).append(r["em"])
    return out


def _se(xs: list[float]) -> float:
    return statistics.stdev(xs) / math.sqrt(len(xs)) if len(xs) > 1 else float("nan")


def compare(before: list[dict], after: list[dict]) -> dict:
    """Paired over (question, sample seed): the after-minus-before EM per question (mean over its samples),
    its mean, standard error over questions, and z = mean / s.e."""
    try:
        r = paired_difference(before, after, lambda rec: rec["em"])
    except ValueError as exc:
        raise ValueError(f"learn compare: {exc}") from None
    return {"questions": r["queries"], "episodes": r["episodes"], "em_before": r["before"], "em_after": r["after"],
            "diff": r["diff"], "diff_se": r["diff_se"], "z": r["z"],
            "questions_better": r["queries_better"], "questions_worse": r["queries_worse"]}


def compare_by_kind(before: list[dict], after: list[dict], questions: list[dict]) -> list[dict]:
    """`compare` within each question kind (a question's metadata.type), largest gain first: where the
    policy changed, which an overall EM hides (a kind learnt and another lost can net to little)."""
    kinds = {q["id"]: (q.get("metadata") or {}).get("type") or "untyped" for q in questions}
    missing = sorted({r["id"] for r in before} - set(kinds))
    if missing:
        raise ValueError(f"learn compare: {len(missing)} evaluated questions are not in the questions file "
                         f"(e.g. {missing[0]!r})")
    rows = []
    for kind in sorted(set(kinds[r["id"]] for r in before)):
        r = compare([x for x in before if kinds[x["id"]] == kind], [x for x in after if kinds[x["id"]] == kind])
        rows.append({"kind": kind, **r})
    return sorted(rows, key=lambda r: (-r["diff"], r["kind"]))


def by_kind_table(rows: list[dict], names=("SFT", "GRPO")) -> str:
    """The per-kind rows of `compare_by_kind` (markdown)."""
    out = [f"| kind | questions | {names[0]} EM | {names[1]} EM | difference | s.e. |", "|---|---|---|---|---|---|"]
    for r in rows:
        se = "-" if math.isnan(r["diff_se"]) else f"{r['diff_se']:.3f}"
        out.append(f"| {r['kind']} | {r['questions']} | {r['em_before']:.3f} | {r['em_after']:.3f} "
                   f"| {r['diff']:+.3f} | {se} |")
    return "\n".join(out) + "\n"


def compare_table(result: dict, before: dict, after: dict, names=("SFT", "GRPO")) -> str:
    """The before/after table (markdown)."""
    rows = ["| model | EM (held-out) | s.e. | answered | format errors | searches / episode | tokens / episode |",
            "|---|---|---|---|---|---|---|"]
    for name, s in zip(names, (before, after)):
        rows.append(f"| {name} | {s['em']:.3f} | {s['em_se']:.3f} | {s['answered']:.3f} | {s['format_error']:.3f} "
                    f"| {s['searches']:.2f} | {s['tokens']:.0f} |")
    rows.append("")
    seeds = result["episodes"] // result["questions"]
    rows.append(f"Paired over {result['questions']} held-out questions x {seeds} seed{'s' if seeds > 1 else ''}"
                f": {names[1]} - {names[0]} = {result['diff']:+.3f} EM, s.e. {result['diff_se']:.3f}, "
                f"z = {result['z']:.2f} ({result['questions_better']} questions better, "
                f"{result['questions_worse']} worse).")
    return "\n".join(rows) + "\n"
