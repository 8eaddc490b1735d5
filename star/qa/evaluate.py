"""Out-of-domain QA evaluation: run a policy through the QA env on each dataset, score exact match.

Episodes go through the project's rollout engine (batched generation, tools in threads, token-in /
token-out); only the environment differs from TravelPlanner. `evaluate_ood` is the stage function
(`star eval-qa`, the `eval_qa` DVC stage, the Prefect task): it writes

    OUT/results.json            per-dataset EM, answer / format-error rates, searches, recall@k
    OUT/table.md                the Table-2-shaped row (datasets in the paper's order + average)
    OUT/metrics.json            the same numbers flat (`mlflow_metrics`), for DVC metrics and MLflow
    OUT/predictions/NAME.jsonl  one record per example: prediction, EM, finish reason, messages

and returns the results dict; `mlflow_metrics(results)` flattens it for MLflow.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from statistics import mean

from star.agent.config import AgentConfig
from star.qa.config import BuiltinDataConfig, QAConfig
from star.qa.corpus import write_jsonl
from star.qa.datasets import QADataset, load_qa, split_by_dataset
from star.qa.env import QAEnv, em_reward
from star.qa.report import table2_markdown
from star.qa.retrieval import Retriever, retrieval_recall, retriever_for
from star.rollout.backends import TransformersBackend
from star.rollout.config import RolloutConfig
from star.rollout.engine import RolloutEngine


def run_episodes(backend, examples: list[dict], retriever: Retriever, config: QAConfig | None = None,
                 agent_name: str = "policy", progress: bool = True) -> list:
    """One episode per example through the rollout engine; returns Trajectory records in order."""
    config = config or QAConfig()
    ep = config.episode
    agent_cfg = AgentConfig(tool_budget=max(1, ep.max_turns - 1), max_context=ep.max_context)
    roll_cfg = RolloutConfig(max_batch=ep.batch_size, max_in_flight=2 * ep.batch_size, tool_workers=2,
                             temperature=ep.temperature, top_p=ep.top_p, max_new_tokens=ep.max_new_tokens,
                             seed=ep.seed, progress=progress)
    engine = RolloutEngine(backend, None, agent_cfg, roll_cfg, reward_fn=em_reward, agent_name=agent_name,
                           env_factory=lambda seed: QAEnv(retriever, ep, reward_fn=em_reward))
    return engine.run(examples, samples_per_query=1)


def score_dataset(dataset: QADataset, trajectories: list) -> dict:
    """EM and behaviour rates of one dataset's episodes."""
    n = len(trajectories)
    if n == 0:
        return {"n": 0, "em": 0.0}
    reasons = [t.finish_reason for t in trajectories]
    return {
        "title": dataset.title,
        "n": n,
        "em": mean(float(t.scores.get("em", 0.0)) for t in trajectories),
        "answered": reasons.count("answer") / n,
        "format_error": reasons.count("format_error") / n,
        "call_budget": reasons.count("call_budget") / n,
        "context_overflow": reasons.count("context_overflow") / n,
        "searches_per_episode": mean(t.tool_calls for t in trajectories),
        "tokens_per_episode": mean(t.n_tokens for t in trajectories),
        "source": dataset.source,
    }


def _prediction_records(dataset: QADataset, trajectories: list) -> list[dict]:
    out = []
    for example, t in zip(dataset.examples, trajectories):
        out.append({"id": example["id"], "question": example["question"], "golden_answers": example["golden_answers"],
                    "prediction": t.answer, "em": float(t.scores.get("em", 0.0)), "finish_reason": t.finish_reason,
                    "format_error": t.format_error, "tool_calls": t.tool_calls, "n_tokens": t.n_tokens,
                    "messages": t.messages})
    return out


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=2, ensure_ascii=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_datasets(specs: list[str], limit: int | None = None, builtin: BuiltinDataConfig | None = None) -> list[QADataset]:
    """Each spec (name, world[:DB], or path) -> its dataset(s); a merged file yields one per benchmark."""
    out: list[QADataset] = []
    for spec in specs:
        for ds in split_by_dataset(load_qa(spec, builtin=builtin)):
            if limit is not None:
                ds.examples = ds.examples[:limit]
            out.append(ds)
    names = [d.name for d in out]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise ValueError(f"dataset(s) {sorted(dupes)} given more than once")
    return out


def evaluate_ood(model, out_dir: str | Path, config: QAConfig | None = None, *, backend=None,
                 model_name: str | None = None, progress: bool = True) -> dict:
    """The OOD stage: every dataset of `config.datasets` over `config.corpus`, written under `out_dir`.

    `model` is a saved model directory (loaded with the transformers backend) unless `backend` is
    given (any GenerationBackend: vLLM, OpenAI-compatible, an in-memory policy)."""
    config = config or QAConfig()
    if model is None and backend is None:
        raise ValueError("evaluate_ood: give a model directory or a generation backend")
    out_dir = Path(out_dir)
    t0 = time.perf_counter()
    # Bad input fails here, before the slow parts and before anything is written.
    datasets = load_datasets(config.datasets, config.limit, config.builtin)
    retriever = retriever_for(config.corpus, config.retrieval, config.builtin.db)
    if backend is None:
        backend = TransformersBackend.from_pretrained(str(model), max_batch=config.episode.batch_size)
    name = model_name or (Path(str(model)).name if model is not None else "policy")
    per_dataset: dict[str, dict] = {}
    for ds in datasets:
        trajectories = run_episodes(backend, ds.examples, retriever, config, agent_name=name, progress=progress)
        result = score_dataset(ds, trajectories)
        if any((e.get("metadata") or {}).get("supporting_ids") for e in ds.examples):
            result["retrieval"] = retrieval_recall(retriever, ds.examples, config.retrieval.top_k)
        per_dataset[ds.name] = result
        write_jsonl(out_dir / "predictions" / f"{ds.name}.jsonl", _prediction_records(ds, trajectories))
    results = {
        "model": name,
        "corpus": config.corpus,
        "passages": len(retriever.passages),
        "retriever": config.retrieval.method,
        "top_k": config.retrieval.top_k,
        "temperature": config.episode.temperature,
        "datasets": per_dataset,
        "average_em": mean(r["em"] for r in per_dataset.values()) if per_dataset else 0.0,
        "elapsed_s": round(time.perf_counter() - t0, 2),
        "config": config.model_dump(),
    }
    _write_json(out_dir / "results.json", results)
    _write_json(out_dir / "metrics.json", mlflow_metrics(results))
    _write_text(out_dir / "table.md", table2_markdown({name: results}))
    return results


def mlflow_metrics(results: dict) -> dict[str, float]:
    """Flat metric names for MLflow: `qa.<dataset>.em`, …, `qa.average_em` (fractions) and
    `ood_average` (percent, the key star.report.paper_results compares with the paper)."""
    out = {"qa.average_em": float(results["average_em"]), "ood_average": 100.0 * float(results["average_em"])}
    for name, r in results["datasets"].items():
        for key in ("em", "answered", "format_error", "searches_per_episode"):
            if key in r:
                out[f"qa.{name}.{key}"] = float(r[key])
        for key, value in (r.get("retrieval") or {}).items():
            if key not in ("k", "examples"):
                out[f"qa.{name}.retrieval_{key}"] = float(value)
    return out
