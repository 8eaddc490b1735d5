"""SFT -> paired evaluation -> GRPO under a wall-clock budget -> paired evaluation, on one device (a GPU
lease: scripts/device_grpo.sh). Every step is the project's own CLI; this script only chains them,
keeps each inside the deadline and pairs the two evaluations over the same queries and seeds.

    python bench/gpu_grpo.py travelplanner --base models/base --data DIR --out DIR --budget-s 420
    python bench/gpu_grpo.py learn --base models/base --data data/learn --out DIR --budget-s 420

travelplanner: the `cpu` profile's pipeline (DIR holds splits/ and sft/train.jsonl from `dvc repro
sft_data`), GRPO at `--set rl.KEY=VALUE` scale; learn: the `learn` profile (search-tool QA, SmolLM2; DIR
from `star learn data`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# What a profile needs changed to run at a GPU's scale (anything here can be overridden with --set).
SCALE = {
    "travelplanner": ["rl.num_generations=8", "rl.batch_queries=16", "rl.train_queries=null", "rl.mini_batches=2",
                      "rl.micro_batch_size=4", "rl.rollout_batch=128", "rl.max_steps=200", "rl.save_every=0",
                      "rl.torch_threads=6", "sft.bf16=true", "rl.bf16=true", "eval.limit=null"],
    # learn: the profile's recipe (SmolLM2, 24 SFT steps, DAPO 8 x 8 a step) in bf16, stepping until the budget's
    # evaluation reserve, and 2 seeds over the 800 held-out questions (the GPU affords the smaller s.e.)
    "learn": ["sft.torch_threads=3", "sft.bf16=true", "rl.bf16=true", "rl.rollout_batch=64", "rl.max_steps=400",
              "rl.old_logprobs=recompute", "rl.micro_batch_size=8", "rl.torch_threads=3", "learn.eval_samples=2",
              "learn.torch_threads=3", "learn.episode.batch_size=200"],
}
PROFILE = {"travelplanner": "cpu", "learn": "learn"}


class Run:
    """The step log: each command's wall time and return code, written after every step."""

    def __init__(self, out: Path, deadline: float):
        self.out, self.deadline, self.steps = out, deadline, []
        out.mkdir(parents=True, exist_ok=True)

    def left(self) -> float:
        return self.deadline - time.time()

    def __call__(self, name: str, *argv: str, timeout: float | None = None) -> None:
        cmd = [sys.executable, "-m", "star.cli", *argv]
        t0 = time.time()
        print(f"== {name}: {' '.join(cmd[2:])}", flush=True)
        limit = max(5.0, min(timeout or self.left(), self.left()))
        try:
            rc = subprocess.run(cmd, cwd=ROOT, timeout=limit).returncode
        except subprocess.TimeoutExpired:
            rc = 124
        self.steps.append({"step": name, "seconds": round(time.time() - t0, 1), "rc": rc})
        self.save({})
        print(f"== {name}: rc {rc} in {time.time() - t0:.0f} s", flush=True)
        if rc != 0:
            raise SystemExit(f"{name} failed (rc {rc})")

    def save(self, extra: dict) -> None:
        path = self.out / "report.json"
        report = json.loads(path.read_text()) if path.is_file() else {}
        report.update({"steps": self.steps, **extra})
        path.write_text(json.dumps(report, indent=2, default=str) + "\n")


def resolve(task: str, sets: list[str], out: Path) -> dict:
    """The task's profile with `sets` on top, written to `out` (what every step's --config reads)."""
    import yaml

    subprocess.run([sys.executable, "-m", "star.config", "resolve", "--profile", PROFILE[task],
                    *sum((["--set", s] for s in sets), []), "--out", str(out)], cwd=ROOT, check=True)
    return yaml.safe_load(out.read_text())


def timed_params(run: Run, params: dict, out: Path) -> float:
    """`out`: the params with rl.time_limit_s = what is left but one more evaluation (the one just measured,
    x1.6: the CPU run's RL policy searched 1.6x as often as its SFT model) and a margin; returns that budget."""
    import yaml

    budget = max(run.left() - 1.6 * run.steps[-1]["seconds"] - 30, 1.0)
    out.write_text(yaml.safe_dump({**params, "rl": {**params["rl"], "time_limit_s": round(budget)}}, sort_keys=False))
    return budget


def travelplanner(args, run: Run, sets: list[str]) -> dict:
    from star.stats import paired_difference
    from star.evaluation.rewards import compute_reward

    w, data = args.out, args.data
    params = w / "params.yaml"
    p = resolve(args.task, sets, params)
    run("sft", "sft", "--model", str(args.base), "--data", str(data / "sft" / "train.jsonl"), "--out", str(w / "sft"),
        "--config", str(params), "--no-small-overrides", "--quiet")
    ev = p["eval"]

    def evaluate(name: str, model: Path) -> list[dict]:
        run(f"eval_{name}", "eval-agent", "--model", str(model), "--queries", str(data / "splits" / "val.jsonl"),
            "--db", args.db, "--out", str(w / f"eval_{name}"), "--temperature", str(ev["temperature"]),
            "--top-p", str(ev["top_p"]), "--max-context", str(ev["max_context"]),
            "--max-new-tokens", str(ev["max_new_tokens"]), "--tool-budget", str(ev["tool_budget"]),
            "--samples", str(args.eval_samples), "--batch", str(args.eval_batch), "--mode", "strict", "--quiet",
            *(["--limit", str(ev["limit"])] if ev.get("limit") else []))
        return [json.loads(line) for line in (w / f"eval_{name}" / "trajectories.jsonl").read_text().splitlines()]

    before = evaluate("sft", w / "sft")
    budget = timed_params(run, p, w / "params_grpo.yaml")
    run("grpo", "grpo", "--model", str(w / "sft"), "--queries", str(data / "splits" / "rl_train.jsonl"), "--db", args.db,
        "--out", str(w / "rl"), "--config", str(w / "params_grpo.yaml"), "--no-small-overrides", "--quiet",
        timeout=budget + 240)
    after = evaluate("rl", w / "rl" / "selected")
    values = {"reward_sum": lambda t: compute_reward("sum", t["scores"], t["finish_reason"])}
    for key in ("delivered", "cs_micro", "hard_micro", "success"):
        values[key] = lambda t, k=key: float(t["scores"].get(k) or 0.0)
    return {name: paired_difference(before, after, value, query="query_id") for name, value in values.items()}


def learn(args, run: Run, sets: list[str]) -> dict:
    w = args.out
    params = w / "params.yaml"
    p = resolve(args.task, sets, params)
    run("sft", "sft", "--model", str(args.base), "--data", str(args.data / "sft.jsonl"), "--out", str(w / "sft"),
        "--config", str(params), "--no-small-overrides", "--quiet")
    heldout = str(args.data / "splits" / "heldout.jsonl")
    run("eval_sft", "learn", "evaluate", "--config", str(params), "--model", str(w / "sft"), "--name", "sft",
        "--questions", heldout, "--out", str(w / "eval_sft"), "--quiet")
    budget = timed_params(run, p, w / "params_grpo.yaml")
    run("grpo", "learn", "grpo", "--config", str(w / "params_grpo.yaml"), "--model", str(w / "sft"),
        "--queries", str(args.data / "splits" / "rl.jsonl"), "--out", str(w / "rl"), "--quiet", timeout=budget + 240)
    run("eval_rl", "learn", "evaluate", "--config", str(params), "--model", str(w / "rl" / "selected"), "--name", "rl",
        "--questions", heldout, "--out", str(w / "eval_rl"), "--quiet")
    run("compare", "learn", "compare", "--before", str(w / "eval_sft"), "--after", str(w / "eval_rl"),
        "--questions", heldout, "--out", str(w / "compare"))
    return {"em": json.loads((w / "compare" / "compare.json").read_text())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=sorted(SCALE))
    parser.add_argument("--base", type=Path, required=True, help="the base model (star build-model --profile cpu)")
    parser.add_argument("--data", type=Path, required=True, help="the task's data (see above)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--db", default="generated:0", help="travelplanner: the database the data was made on")
    parser.add_argument("--eval-samples", type=int, default=4, help="travelplanner: episodes per validation query")
    parser.add_argument("--eval-batch", type=int, default=96, help="travelplanner: episodes decoded together in evaluation")
    parser.add_argument("--budget-s", type=float, default=420.0, help="wall-clock seconds for the whole run")
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                        help="override a params value after the GPU scale (e.g. rl.learning_rate=1e-5)")
    args = parser.parse_args(argv)
    t0 = time.time()
    args.out = args.out.resolve()
    run = Run(args.out, t0 + args.budget_s)
    sets = SCALE[args.task] + args.set
    run.save({"task": args.task, "profile": PROFILE[args.task], "sets": sets, "budget_s": args.budget_s})
    try:
        result = (travelplanner if args.task == "travelplanner" else learn)(args, run, sets)
    except SystemExit as exc:
        run.save({"error": str(exc), "total_s": round(time.time() - t0, 1)})
        print(exc, file=sys.stderr)
        return 1
    run.save({"paired": result, "total_s": round(time.time() - t0, 1)})
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    raise SystemExit(main())
