"""Walk the README's doors the way a user does, with real servers, and check what they leave behind.

    .venv/bin/python scripts/walk_doors.py                 # every door (CI runs this)
    .venv/bin/python scripts/walk_doors.py --only ablation # one door: repro | ablation | ui | exp | learn

1. `dvc repro` on the committed params.yaml (smoke): SFT took optimizer steps with a falling loss,
   GRPO ran its steps of scored rollouts; a second `dvc repro` is a no-op.
2. `star serve`, then the README's `prefect deployment run star/ablation --param ablation=reward
   --watch`; then through the Prefect and MLflow APIs: the flow run Completed, one FINISHED child
   run per variant with evaluation metrics, the comparison report (tables and plots) on the parent;
   `dvc exp show` lists every variant with metrics; the worker log shows upstream stages restored
   from DVC's run-cache.
3. The MLflow UI, in headless Chromium, renders the ablation's parent run and its report.
4. `star serve --stop`.
5. `dvc exp run -S rl.reward=macro`: params.yaml still resolves to the same values (plus the one
   set; its stages come from the run-cache the ablation filled); then params.yaml is restored.
6. The learning demonstration's command, `resolve --profile learn` then `dvc repro learn/dvc.yaml`, in a
   clone at a small scale (its SmolLM2, a few steps and questions; the profile itself takes 74 min): every
   stage ran as an MLflow run, SFT took steps, GRPO rolled out on vLLM where it is installed (the profile's
   `auto`) and updated the policy from non-zero advantages, both evaluations ran on the same backend over the
   same held-out questions and seeds, and the comparison was written.
Exit status 0 only if every check passed; each failure names the door and what was wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DOORS = ("repro", "ablation", "ui", "pool", "exp", "learn")
PREFECT_PORT, MLFLOW_PORT = 4200, 5000
API = f"http://127.0.0.1:{PREFECT_PORT}/api"
MLFLOW = f"http://127.0.0.1:{MLFLOW_PORT}"


_walked: set[str] = set()  # the doors this walk takes (a later door may reuse an earlier one's services)


class DoorFailed(AssertionError):
    pass


def check(cond: bool, door: str, what: str) -> None:
    if not cond:
        raise DoorFailed(f"[{door}] {what}")
    print(f"  ok [{door}] {what}", flush=True)


def sh(cmd: list[str], timeout: float, env: dict | None = None, cwd: Path = PROJECT) -> subprocess.CompletedProcess:
    print(f"$ {'' if cwd == PROJECT else f'(in {cwd}) '}{' '.join(cmd)}", flush=True)
    start = time.time()
    proc = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=timeout)
    print(f"  ({time.time() - start:.0f}s, exit {proc.returncode})", flush=True)
    return proc


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def door_repro() -> None:
    import yaml

    proc = sh([str(BIN / "dvc"), "repro"], timeout=3600)
    check(proc.returncode == 0, "repro", "dvc repro finished" + ("" if proc.returncode == 0 else
                                                                 f":\n{(proc.stdout + proc.stderr)[-3000:]}"))
    sft = json.loads((PROJECT / "models/sft/sft_summary.json").read_text())
    check(sft["steps"] > 0 and sft["train"] > 0, "repro",
          f"SFT took {sft['steps']} optimizer steps on {sft['train']} teacher trajectories "
          f"({sft.get('truncated', 0)} truncated, {sft.get('dropped', 0)} dropped)")
    check(sft["last_loss"] < sft["first_loss"], "repro", f"SFT loss fell {sft['first_loss']:.3f} -> {sft['last_loss']:.3f}")
    steps = jsonl(PROJECT / "models/rl/metrics.jsonl")
    summary = json.loads((PROJECT / "models/rl/summary.json").read_text())
    check(len(steps) == summary["steps"] > 0 and all(s["rollout_tokens_per_s"] > 0 for s in steps), "repro",
          f"GRPO ran {len(steps)} steps of scored rollouts (rewards {[round(s['reward_mean'], 3) for s in steps]}, "
          f"format errors {[s.get('finish_format_error') for s in steps]}, "
          f"updates {sum(s.get('optimizer_steps', 0) > 0 for s in steps)})")
    paired = json.loads((PROJECT / "metrics/compare/compare.json").read_text())
    params = yaml.safe_load((PROJECT / "params.yaml").read_text())
    limit = params["eval"].get("limit") or 10**9
    val = min(limit, len((PROJECT / "data/splits/val.jsonl").read_text().splitlines()))
    reward = params["rl"]["reward"]
    row = paired["modes"]["official"]["headline"][0]
    check(row["key"] == f"official/reward_{reward}", "repro", f"compare's headline is the trained reward ({reward})")
    check(paired["queries"] == val and (PROJECT / "metrics/compare/compare.png").is_file(), "repro",
          f"compare paired the SFT and RL evaluations over {val} validation queries: RL - SFT reward ({reward}) "
          f"{row['diff']:+.3f} (s.e. {row['diff_se']:.3f})")
    sft_eval = json.loads((PROJECT / "metrics/eval/sft/metrics.json").read_text())
    sft_eval = sft_eval.get("metrics", sft_eval)
    check(sft_eval["mean_tool_calls"] > 0, "repro",
          f"the SFT model calls tools ({sft_eval['mean_tool_calls']:.1f} an episode; delivery "
          f"{sft_eval['delivery_rate']:.2f}; answered {sft_eval['finish_reasons'].get('answer', 0)} "
          f"of {sft_eval['n']})")
    check(summary.get("optimizer_steps", 0) > 0 and any(s["reward_std"] > 0 for s in steps), "repro",
          f"GRPO updated the policy from non-zero advantages ({summary.get('optimizer_steps')} optimizer steps; "
          f"reward std per step {[round(s['reward_std'], 3) for s in steps]})")
    again = sh([str(BIN / "dvc"), "repro"], timeout=600)
    check(again.returncode == 0 and "Data and pipelines are up to date" in again.stdout, "repro",
          "a second dvc repro is a no-op")


def _prefect_flow_run(run_id: str) -> dict:
    import httpx

    return httpx.get(f"{API}/flow_runs/{run_id}", timeout=30).json()


def _where_stuck(run_ids: list[str]) -> None:
    """Print what a run that did not finish was doing: its unfinished task runs, the busiest processes, the
    worker log's tail (CI shows this output, not the server's files)."""
    import httpx

    for run_id in run_ids:
        print(f"flow run {run_id}: {(_prefect_flow_run(run_id).get('state') or {}).get('type')}", flush=True)
    unfinished = {"state": {"type": {"any_": ["RUNNING", "PENDING", "SCHEDULED", "PAUSED"]}}}
    for kind in ("flow_runs", "task_runs"):  # every run on the server: the variants' subflows and their stages
        rows = httpx.post(f"{API}/{kind}/filter", json={kind: unfinished, "limit": 50}, timeout=30).json()
        print(f"unfinished {kind}: " + (", ".join(f"{r['name']} ({(r.get('state') or {}).get('name')}, since "
                                                  f"{(r.get('state') or {}).get('timestamp')})" for r in rows)
                                        or "none"), flush=True)
    print(subprocess.run(["ps", "-eo", "pid,ppid,etime,time,pcpu,rss,args", "--sort=-pcpu"], capture_output=True,
                         text=True).stdout[:4000], flush=True)
    log = PROJECT / "runs/serve/prefect-worker.log"
    print(log.read_text(errors="replace")[-6000:] if log.exists() else "(no worker log)", flush=True)


def door_ablation(ablation: str) -> None:
    env = {"PREFECT_API_URL": API}
    began_ms = int(time.time() * 1000)  # a walk again in the same tree finds the earlier walk's models too
    served = sh([str(BIN / "star"), "serve"], timeout=600, env=env)
    print(served.stdout[-2000:], served.stderr[-2000:])
    check(served.returncode == 0, "ablation", "star serve started Prefect server, worker and MLflow UI")
    limit = sh([str(BIN / "prefect"), "gcl", "inspect", "star-compute"], timeout=120, env=env)
    check(limit.returncode == 0 and "star-compute" in limit.stdout, "ablation",
          "star serve set the global concurrency limit of training and evaluation stages (star-compute)")
    # A second run of the same ablation, submitted first and left running beside the README's one: runs
    # side by side wait for each other's variant workspaces instead of failing on them.
    beside = sh([str(BIN / "prefect"), "deployment", "run", "star/ablation", "--param", f"ablation={ablation}"],
                timeout=300, env=env)
    m2 = re.search(r"UUID:\s*([0-9a-f-]{36})", beside.stdout + beside.stderr)
    check(m2 is not None, "ablation", "a second run of the same ablation was submitted beside it")
    # ~18 min on 2 cores here (docs/orchestration.md): a run still going at 40 min is stuck, and says where
    proc = sh([str(BIN / "prefect"), "deployment", "run", "star/ablation", "--param", f"ablation={ablation}",
               "--watch", "--watch-timeout", "2400"], timeout=2700, env=env)
    out = proc.stdout + proc.stderr
    m = re.search(r"UUID:\s*([0-9a-f-]{36})", out)
    check(m is not None, "ablation", "the deployment run was submitted" + ("" if m else f":\n{out[-2000:]}"))
    if proc.returncode != 0:
        _where_stuck([m.group(1), m2.group(1)])
    deadline = time.time() + 600
    while time.time() < deadline and not (_prefect_flow_run(m2.group(1)).get("state") or {}).get("type") in (
            "COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
        time.sleep(5)
    log = (PROJECT / "runs/serve/prefect-worker.log").read_text(errors="replace")
    for run_id in (m.group(1), m2.group(1)):
        state = (_prefect_flow_run(run_id).get("state") or {}).get("type")
        check(state == "COMPLETED", "ablation", f"Prefect flow run {run_id} is {state}"
              + ("" if state == "COMPLETED" else f"; worker log tail:\n{log[-4000:]}"))
    check("is held by" in log, "ablation", "the runs waited for each other's variant workspaces (worker log: "
          f"{log.count('is held by')} waits)")

    from mlflow import MlflowClient

    from star.ablations import load_ablation, variant_slug

    variants = [v.name for v in load_ablation(ablation).variants()]
    client = MlflowClient(MLFLOW)
    exp = client.get_experiment_by_name("star")
    parents = client.search_runs([exp.experiment_id], f"tags.`star.kind` = 'ablation' and tags.`star.ablation` = '{ablation}'",
                                 order_by=["attributes.start_time DESC"], max_results=2)
    check(len(parents) == 2, "ablation", "MLflow holds both runs' parent runs")
    scores = []
    for parent in parents:
        check(parent.info.status == "FINISHED", "ablation", f"the parent run {parent.info.run_id} is {parent.info.status}")
        children = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
        finished = {c.info.run_name: c for c in children if c.info.status == "FINISHED"}
        check(sorted(finished) == sorted(variants), "ablation", f"one FINISHED child run per variant: {sorted(finished)}")
        ran = {c.data.tags.get("git.commit") for c in finished.values()}
        check(ran == {parent.data.params.get("commit")}, "ablation",
              f"every child names the commit its workspace ran: {sorted(ran)}")
        scores.append({n: {k: v for k, v in r.data.metrics.items() if k.startswith("eval.")} for n, r in finished.items()})
    check(scores[0] == scores[1], "ablation", "the two runs side by side hold the same evaluation metrics")
    parent = parents[0]  # either run: both must carry their report
    for name, run in finished.items():
        keys = [k for k in run.data.metrics if k.startswith("eval.")]
        check("eval.success_rate" in run.data.metrics and len(keys) >= 6, "ablation",
              f"{name}: {len(keys)} evaluation metrics (success {run.data.metrics.get('eval.success_rate')}, "
              f"cs micro {run.data.metrics.get('eval.commonsense_micro')})")
    artifacts = {a.path for a in client.list_artifacts(parent.info.run_id, "report")}
    check({"report/report.md", "report/report.json"} <= artifacts and any(a.endswith(".png") for a in artifacts),
          "ablation", f"the comparison report on the parent run: {sorted(artifacts)}")

    _mlflow_entities(client, exp.experiment_id, finished)
    _learning(client, exp.experiment_id, parent, sorted(finished), began_ms)
    _prefect_artifacts(m.group(1), ablation)

    shown = sh([str(BIN / "dvc"), "exp", "show", "--json"], timeout=600)
    exps = {e["name"]: e for base in json.loads(shown.stdout) for e in (base.get("experiments") or [])}
    names = [variant_slug(v) for v in variants]
    check(set(names) <= set(exps), "ablation", f"dvc exp show lists every variant: {sorted(set(exps) & set(names))}")
    for name in names:
        metrics = exps[name]["revs"][0]["data"].get("metrics") or {}
        check("metrics/eval/rl/metrics.json" in metrics, "ablation", f"dvc exp {name} carries its evaluation metrics")
    restored = set(re.findall(r"\[([\w@]+)\] restored", log))
    check({"sandbox", "teacher", "sft"} <= restored, "ablation",
          f"upstream stages restored from DVC's run-cache, not recomputed: {sorted(restored)}")


def _mlflow_entities(client, experiment_id: str, variants: dict) -> None:
    """What an MLflow user looks for: stage runs named by variant, datasets used, logged and registered models."""
    for name, run in variants.items():
        stages = {r.info.run_name: r for r in client.search_runs([experiment_id],
                                                                  f"tags.mlflow.parentRunId = '{run.info.run_id}'")}
        check(f"{name} · grpo" in stages and f"{name} · eval_agent@rl" in stages, "ablation",
              f"{name}: stage runs named by variant and stage ({len(stages)}: {sorted(stages)[:3]}, ...)")
    runs = client.search_runs([experiment_id], "tags.`star.stage` = 'eval_agent_rl'", max_results=50)
    inputs = [d.dataset.name for r in runs for d in r.inputs.dataset_inputs]
    check("data/splits/val.jsonl" in inputs, "ablation", f"evaluation runs list their datasets: {sorted(set(inputs))}")
    versions = client.search_model_versions("name = 'star-smoke'")
    stages = sorted({v.tags.get("star.stage") for v in versions})
    check({"sft", "grpo"} <= set(stages), "ablation",
          f"SFT and RL models registered as star-smoke: {len(versions)} versions from {stages}")


def _learning(client, experiment_id: str, parent, variants: list[str], since_ms: int = 0) -> None:
    """GRPO updated the variants whose reward paid some rollout; the verdict names the copies; the RL models
    of variants that trained differently are different weights, those of copies the same."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        report = json.loads(Path(client.download_artifacts(parent.info.run_id, "report/report.json", tmp)).read_text())
    verdict = {v["variant"]: v for v in report["verdict"]}
    updated = sorted(n for n, v in verdict.items() if v["optimizer_steps"])
    check(sorted(verdict) == variants and updated, "ablation", "GRPO updated the policy in "
          + ", ".join(f"{n} ({v['optimizer_steps']} steps)" for n, v in sorted(verdict.items()) if v["optimizer_steps"])
          + f"; no update in {sorted(set(variants) - set(updated)) or 'none'}")
    models = client.search_logged_models([experiment_id], filter_string="tags.`star.stage` = 'grpo'")
    digests = {m.tags.get("star.variant"): m.tags.get("star.model_digest") for m in models
               if m.tags.get("star.path") == "models/rl/selected" and m.tags.get("star.variant") in variants
               and (m.creation_timestamp or 0) >= since_ms}
    alike = {n: v["trained_as"] for n, v in verdict.items() if v.get("trained_as")}
    distinct = [n for n in variants if n not in alike]
    check(sorted(digests) == variants and len({digests[n] for n in distinct}) == len(distinct)
          and all(digests[n] == digests[o] for n, o in alike.items()), "ablation",
          f"the variants' RL models differ where their training did ({len(set(digests.values()))} distinct weights "
          f"over {len(variants)} variants; copies per the verdict: {alike or 'none'})")


def _prefect_artifacts(flow_run_id: str, ablation: str) -> None:
    import httpx

    run = _prefect_flow_run(flow_run_id)
    check(run.get("name", "").startswith(f"{ablation} · "), "ablation", f"the flow run is named {run.get('name')!r}")
    arts = httpx.post(f"{API}/artifacts/filter", json={"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}},
                      timeout=30).json()
    # Prefect stores a link artifact as markdown ("[text](url)"); results it persists are artifacts too (no type).
    shown = [str(a.get("data") or "") for a in arts if a.get("type") == "markdown"]
    links = [d for d in shown if d.startswith("[MLflow") and "](http://127.0.0.1:" in d]
    check(any("## Verdict" in d for d in shown) and len(links) >= 2, "ablation",
          f"the flow run holds the report (markdown) and {len(links)} links to its MLflow runs")


def door_ui(ablation: str) -> None:
    from mlflow import MlflowClient

    client = MlflowClient(MLFLOW)
    exp = client.get_experiment_by_name("star")
    parent = client.search_runs([exp.experiment_id], f"tags.`star.ablation` = '{ablation}' and tags.`star.kind` = 'ablation'",
                                order_by=["attributes.start_time DESC"], max_results=1)[0]
    out = PROJECT / "runs/ci/mlflow_ui_parent.png"
    proc = sh([sys.executable, str(PROJECT / "scripts/mlflow_ui_screenshot.py"), "--url", MLFLOW, "--run",
               parent.info.run_id, "--expect", "report", "--out", str(out)], timeout=600)
    print(proc.stdout[-1500:], proc.stderr[-1500:])
    check(proc.returncode == 0, "ui", f"the MLflow UI renders the parent run with its report ({out})")
    # What an MLflow user opens next: the registered models, and an evaluation's Datasets used.
    out = PROJECT / "runs/ci/mlflow_ui_models.png"
    proc = sh([sys.executable, str(PROJECT / "scripts/mlflow_ui_screenshot.py"), "--url", MLFLOW, "--page", "#/models",
               "--expect", "star-smoke", "--out", str(out)], timeout=600)
    check(proc.returncode == 0, "ui", f"the MLflow UI lists the registered model star-smoke ({out})"
          + ("" if proc.returncode == 0 else f": {proc.stderr[-500:]}"))
    run = client.search_runs([exp.experiment_id], "tags.`star.stage` = 'eval_agent_rl'", max_results=1,
                             order_by=["attributes.start_time DESC"])[0]
    out = PROJECT / "runs/ci/mlflow_ui_eval_run.png"
    proc = sh([sys.executable, str(PROJECT / "scripts/mlflow_ui_screenshot.py"), "--url", MLFLOW, "--run",
               run.info.run_id, "--page", "", "--expect", "val.jsonl", "--out", str(out)], timeout=600)
    check(proc.returncode == 0, "ui", f"the evaluation run {run.info.run_name!r} shows its datasets ({out})"
          + ("" if proc.returncode == 0 else f": {proc.stderr[-500:]}"))


POOL = "star-nodes"
TWO_VARIANTS = """description: two rewards (the pool door)
axis: reward
levels:
  sum: {rl.reward: sum}
  success: {rl.reward: success}
"""


def door_pool() -> None:
    """Two process workers stand for two nodes: each its own workspace root and DVC cache, one shared DVC
    remote (a folder). The ablation fans its variants out over them (`--param pool=`); each upstream stage
    runs on one worker and is restored on the other from what the first pushed."""
    import tempfile

    from mlflow import MlflowClient

    from star.tracking.mlflow_logging import default_tracking_uri

    env = {"PREFECT_API_URL": API}
    if "ablation" not in _walked:  # the ablation door started the services already
        check(sh([str(BIN / "star"), "serve"], timeout=600, env=env).returncode == 0, "pool", "star serve started")
    root = Path(tempfile.mkdtemp(prefix="star-pool-door-"))
    (root / "two.yaml").write_text(TWO_VARIANTS)
    sh([str(BIN / "prefect"), "work-pool", "create", POOL, "--type", "process"], timeout=120, env=env)
    dep = sh([str(BIN / "prefect"), "--no-prompt", "deploy", "--name", "variant-nodes"], timeout=300, env=env)
    check(dep.returncode == 0, "pool", f"deployment star/variant-nodes on pool {POOL}"
          + ("" if dep.returncode == 0 else f": {dep.stdout[-1500:]}{dep.stderr[-1500:]}"))
    workers = {}
    for node in ("node-a", "node-b"):
        node_env = {**os.environ, **env, "STAR_RUNS_DIR": str(root / node / "runs"),
                    "STAR_DVC_CACHE": str(root / node / "cache"), "STAR_DVC_REMOTE": str(root / "remote"),
                    "MLFLOW_TRACKING_URI": os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(PROJECT)}
        workers[node] = subprocess.Popen(
            [str(BIN / "prefect"), "worker", "start", "--pool", POOL, "--limit", "1", "--name", node],
            cwd=PROJECT, env=node_env, stdout=open(root / f"{node}.log", "w"), stderr=subprocess.STDOUT,
            start_new_session=True)
    try:
        proc = sh([str(BIN / "prefect"), "deployment", "run", "star/ablation", "--param", f"ablation={root / 'two.yaml'}",
                   "--param", f"pool={POOL}", "--param", 'stages=["split"]', "--watch", "--watch-timeout", "1500"],
                  timeout=1800, env=env)
        m = re.search(r"UUID:\s*([0-9a-f-]{36})", proc.stdout + proc.stderr)
        check(m is not None, "pool", "the fanned-out ablation was submitted")
        state = (_prefect_flow_run(m.group(1)).get("state") or {}).get("type")
        logs = {n: (root / f"{n}.log").read_text(errors="replace") for n in workers}
        check(state == "COMPLETED", "pool", f"flow run {m.group(1)} is {state}"
              + ("" if state == "COMPLETED" else "".join(f"\n{n} log tail:\n{t[-2500:]}" for n, t in logs.items())))
    finally:
        for w in workers.values():
            os.killpg(w.pid, signal.SIGINT)  # a Prefect worker stops on SIGINT
        for w in workers.values():
            try:
                w.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(w.pid, signal.SIGKILL)
    for node, text in logs.items():
        check("Flow run" in text and "[split]" in text, "pool", f"{node} ran a variant on its own workspace root")
    for stage in ("sandbox", "synthesize", "validate", "split"):
        how = {n: set(re.findall(rf"\[{stage}\] (ran|restored)", t)) for n, t in logs.items()}
        ran = [n for n, h in how.items() if "ran" in h]
        restored = [n for n, h in how.items() if "restored" in h]
        check(len(ran) == 1 and len(restored) == 1 and ran != restored, "pool",
              f"{stage}: computed on {ran}, restored on {restored} from the shared remote")
    check(any((root / "remote").rglob("*")), "pool", "the shared remote holds the pushed outputs and run-cache")
    client = MlflowClient(MLFLOW)
    exp = client.get_experiment_by_name("star")
    parent = client.search_runs([exp.experiment_id], "tags.`star.kind` = 'ablation' and tags.`star.ablation` = 'two'",
                                order_by=["attributes.start_time DESC"], max_results=1)[0]
    children = client.search_runs([exp.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    check(parent.info.status == "FINISHED" and sorted(c.info.status for c in children) == ["FINISHED", "FINISHED"],
          "pool", f"MLflow: the parent and both variants' runs FINISHED ({[c.info.run_name for c in children]})")
    shutil.rmtree(root, ignore_errors=True)


def door_exp() -> None:
    import yaml

    from star.config import resolve
    from star.params_io import load_yaml

    before = load_yaml(PROJECT / "params.yaml")
    # rl.reward=macro is also a variant of the reward ablation: after that door, DVC's run-cache holds
    # its grpo and evaluations, so the experiment restores them instead of training again.
    proc = sh([str(BIN / "dvc"), "exp", "run", "-S", "rl.reward=macro"], timeout=1800)
    try:
        check(proc.returncode == 0, "exp", "dvc exp run -S rl.reward=macro finished"
              + ("" if proc.returncode == 0 else f":\n{(proc.stdout + proc.stderr)[-3000:]}"))
        print(proc.stdout[-1500:])
        after = load_yaml(PROJECT / "params.yaml")
        want = resolve((before.get("run") or {}).get("profile"), overrides={"rl.reward": "macro"}).to_params()
        check(after == want, "exp", "params.yaml after DVC rewrote it resolves to the same values plus the one set"
              + ("" if after == want else f":\n{yaml.safe_dump(after)}"))
    finally:
        sh(["git", "checkout", "--", "params.yaml"], timeout=60)
        sh([str(BIN / "dvc"), "checkout", "--force"], timeout=600)


# The learn door's scale: the profile's model, stages and settings, a few steps and questions.
# DAPO over-sampling stays on (up to 4 draws of 2 questions) so the one step has a group with a reward spread
# to learn from: the door asserts an update, not just scored rollouts.
LEARN_SMALL = ["sft.max_steps=6", "rl.max_steps=1", "rl.batch_queries=2", "rl.num_generations=4",
               "rl.dapo.max_draws=4", "learn.questions=60", "learn.sft_questions=24", "learn.rl_questions=12",
               "learn.heldout_questions=12"]


def door_learn() -> None:
    import tempfile

    import yaml
    from mlflow import MlflowClient

    from star.rollout.backends.select import vllm_available

    work = Path(tempfile.mkdtemp(prefix="star-learn-door-")) / "repo"
    sh(["git", "clone", "-q", str(PROJECT), str(work)], timeout=300)
    (work / ".venv").symlink_to(PROJECT / ".venv")
    uri = f"sqlite:///{work / 'mlflow.db'}"
    run = lambda cmd, timeout: sh(cmd, timeout, env={"MLFLOW_TRACKING_URI": uri}, cwd=work)  # noqa: E731
    sets = [a for kv in LEARN_SMALL for a in ("--set", kv)]
    proc = run([str(BIN / "python"), "-m", "star.config", "resolve", "--profile", "learn", *sets, "--out", "params.yaml"],
               120)
    check(proc.returncode == 0, "learn", "the learn profile resolves" + ("" if proc.returncode == 0 else f": {proc.stderr}"))
    proc = run([str(BIN / "dvc"), "repro", "learn/dvc.yaml"], 2700)
    check(proc.returncode == 0, "learn", "dvc repro learn/dvc.yaml finished"
          + ("" if proc.returncode == 0 else f":\n{(proc.stdout + proc.stderr)[-3000:]}"))
    sft = json.loads((work / "models/learn/sft/sft_summary.json").read_text())
    check(sft["steps"] > 0 and sft["last_loss"] < sft["first_loss"], "learn",
          f"SFT took {sft['steps']} steps, loss {sft['first_loss']:.3f} -> {sft['last_loss']:.3f}")
    steps = jsonl(work / "models/learn/rl/metrics.jsonl")
    backend = "vllm" if vllm_available() else "transformers"  # the profile's `auto`
    check(len(steps) == 1 and steps[0]["rollout_tokens_per_s"] > 0 and steps[0]["rollout_backend"] == backend,
          "learn", f"GRPO scored its rollouts from {steps[0]['rollout_backend']} (reward {steps[0]['reward_mean']:.3f}, "
          f"{steps[0]['groups']} informative groups in {steps[0]['dapo_draws']} draws)")
    check(steps[0]["optimizer_steps"] > 0 and steps[0]["update_skipped"] == 0 and steps[0]["grad_norm"] > 0, "learn",
          f"GRPO updated the policy from non-zero advantages ({steps[0]['optimizer_steps']} optimizer steps, "
          f"grad norm {steps[0]['grad_norm']:.3g})")
    sft_eps, rl_eps = (jsonl(work / f"metrics/learn/{m}/episodes.jsonl") for m in ("sft", "rl"))
    used = {m: json.loads((work / f"metrics/learn/{m}/summary.json").read_text())["backend"] for m in ("sft", "rl")}
    check(set(used.values()) == {backend}, "learn", f"both evaluations generated with {backend}: {used}")
    pairs = lambda eps: sorted((e["id"], e["seed"]) for e in eps)  # noqa: E731
    compare = json.loads((work / "metrics/learn/compare/compare.json").read_text())
    heldout = int(dict(kv.split("=") for kv in LEARN_SMALL)["learn.heldout_questions"])
    check(pairs(sft_eps) == pairs(rl_eps) and compare["questions"] == heldout, "learn",
          f"both models ran the same {heldout} held-out questions and seeds; RL - SFT = {compare['diff']:+.3f} EM "
          f"(s.e. {compare['diff_se']:.3f})")
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("star").experiment_id])
    stages = sorted(r.info.run_name for r in runs if r.info.status == "FINISHED" and r.info.run_name.startswith("learn_"))
    want = sorted(yaml.safe_load((work / "learn/dvc.yaml").read_text())["stages"])  # the one list of them
    check(stages == want, "learn", f"one FINISHED MLflow run per stage: {stages}")
    # Passed: the clone (models, DVC cache: ~3 GB) goes; a failed walk leaves it to look into.
    shutil.rmtree(work.parent, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", choices=DOORS, action="append", help="walk only these doors (repeatable)")
    p.add_argument("--ablation", default="reward", help="the ablation the README's deployment command runs")
    args = p.parse_args(argv)
    doors = args.only or list(DOORS)
    os.environ.update({"DO_NOT_TRACK": "1", "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
                       "MLFLOW_DISABLE_TELEMETRY": "true", "GX_ANALYTICS_ENABLED": "false"})
    start = time.time()
    _walked.update(doors)
    try:
        if "repro" in doors:
            door_repro()
        try:
            if "ablation" in doors:
                door_ablation(args.ablation)
            if "ui" in doors:
                door_ui(args.ablation)
            if "pool" in doors:
                door_pool()
        finally:
            if {"ablation", "pool"} & set(doors):
                sh([str(BIN / "star"), "serve", "--stop"], timeout=120)
        if "exp" in doors:
            door_exp()
        if "learn" in doors:
            door_learn()
    except (DoorFailed, subprocess.TimeoutExpired) as exc:
        print(f"FAILED {exc}", file=sys.stderr)
        return 1
    print(f"every door walked in {time.time() - start:.0f}s: {', '.join(doors)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
