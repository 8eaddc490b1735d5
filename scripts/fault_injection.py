"""Kill a real ablation at five points, rerun it, and check the rerun ends as an uninterrupted run does.

    .venv/bin/python scripts/fault_injection.py                       # all five points (~1 h on 2 cores)
    .venv/bin/python scripts/fault_injection.py --points mid_grpo     # one point

Every trial runs in its own clone of HEAD (its own DVC cache, MLflow store and runs/), so each stage
really computes; one more clone runs uninterrupted and is the reference. A trial starts the ablation
the way a worker does (the `star` flow, against a real Prefect server this script starts on
127.0.0.1), waits for its point, SIGKILLs the flow-run process, then reruns the same command.

Points: stage_start (the teacher stage has just started), mid_sft (SFT has run a few seconds),
mid_grpo (GRPO wrote its first checkpoint), exp_save (`dvc exp save` is running), report (the
report is being written; STAR_PAUSE_AT holds the flow there so the kill can land).

Checks per trial: the rerun exits 0; every variant's evaluation metrics (base, sft, rl) equal the
reference's; `dvc status` of the evaluated stages is clean in every workspace; every object in the
DVC cache re-hashes to its name; no process of the killed run is left; no MLflow run is left RUNNING,
and the killed run's variant run ended KILLED naming its stage; no Prefect flow run is left Running.
Prints a markdown table (docs/orchestration.md keeps it). Exit status 0 only if every trial passed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
POINTS = ("stage_start", "mid_sft", "mid_grpo", "exp_save", "report")
PORT = 4321
ABLATION = """description: fault-injection ablation (two rewards, shared upstream stages)
axis: reward
levels:
  sum: {rl.reward: sum}
  success: {rl.reward: success}
"""


def log(msg: str) -> None:
    print(msg, flush=True)


class Trial:
    def __init__(self, root: Path, name: str, env: dict, ablation: Path, profile: str, commit: str):
        self.name, self.ablation, self.profile = name, ablation, profile
        self.repo = root / name / "repo"
        subprocess.run(["git", "clone", "-q", str(PROJECT), str(self.repo)], check=True)
        subprocess.run(["git", "checkout", "-q", "-B", "faults", commit], cwd=self.repo, check=True)
        (self.repo / ".venv").symlink_to(PROJECT / ".venv")
        self.env = {**env, "MLFLOW_TRACKING_URI": f"sqlite:///{self.repo / 'mlflow.db'}"}
        for key in ("user.name", "user.email"):
            if not subprocess.run(["git", "config", key], cwd=self.repo, capture_output=True, text=True).stdout.strip():
                subprocess.run(["git", "config", key, "star-faults" if key == "user.name" else "star@localhost"],
                               cwd=self.repo, check=True)
        self.runs = self.repo / "runs" / profile / "faults"

    def start(self, logfile: Path, extra_env: dict | None = None) -> subprocess.Popen:
        cmd = [str(BIN / "python"), "flows/star_flow.py", "--ablation", str(self.ablation), "--profile", self.profile,
               "--stages", "eval_agent"]
        fh = open(logfile, "w")
        return subprocess.Popen(cmd, cwd=self.repo, env={**self.env, **(extra_env or {})}, stdout=fh,
                                stderr=subprocess.STDOUT)

    def records(self) -> list[dict]:
        found = []
        for path in (self.runs / ".locks").glob("workspace-*.json") if (self.runs / ".locks").is_dir() else []:
            try:
                found.append(json.loads(path.read_text()))
            except (OSError, ValueError):
                pass
        return found

    def workspaces(self) -> list[Path]:
        return sorted(p for p in self.runs.iterdir() if (p / "params.yaml").is_file()) \
            if self.runs.is_dir() else []

    def metrics(self) -> dict:
        out = {}
        for ws in self.workspaces():
            for model in ("base", "sft", "rl"):
                path = ws / "metrics" / "eval" / model / "metrics.json"
                if path.is_file():
                    out[f"{ws.name}/{model}"] = json.loads(path.read_text())
        return out


def _procs_with(pred) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry.name}/cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(f"/proc/{entry.name}/cwd")
        except OSError:
            continue
        if pred([a.decode(errors="replace") for a in argv], cwd):
            found.append(int(entry.name))
    return found


def wait_for_point(trial: Trial, point: str, proc: subprocess.Popen, logfile: Path, timeout: float) -> str:
    """Block until the run reaches `point`; returns what was seen (raises if the run ended first)."""
    start, sft_seen = time.time(), None
    repo = str(trial.repo)
    while time.time() - start < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"the run ended (exit {proc.returncode}) before reaching {point}")
        stages = {r.get("stage") for r in trial.records()}
        if point == "stage_start" and "teacher" in stages:
            return "teacher stage started"
        if point == "mid_sft" and "sft" in stages:
            sft_seen = sft_seen or time.time()
            if time.time() - sft_seen > 8:
                return "SFT running for 8 s"
        if point == "mid_grpo":
            done = [ws for ws in trial.workspaces()
                    if (ws / "checkpoints" / "grpo" / "step-000001" / "trainer_state.json").is_file()]
            if done:
                return f"GRPO checkpoint step 1 written in {done[0].name}"
        if point == "exp_save" and _procs_with(lambda a, cwd: "exp" in a and "save" in a and cwd.startswith(repo)):
            return "dvc exp save running"
        if point == "report" and "pause point report" in logfile.read_text(errors="replace"):
            return "report being written"
        time.sleep(0.05 if point == "exp_save" else 0.5)
    raise RuntimeError(f"{point} not reached in {timeout:.0f}s")


def cache_rehashes(repo: Path) -> tuple[int, list[str]]:
    """(objects checked, objects whose content does not hash to their name) in the clone's DVC cache."""
    root = repo / ".dvc" / "cache" / "files" / "md5"
    bad, n = [], 0
    for path in root.rglob("*") if root.is_dir() else []:
        if not path.is_file() or path.name.endswith(".tmp") or len(path.parent.name) != 2:
            continue
        n += 1
        h = hashlib.md5()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        if path.parent.name + path.name.removesuffix(".dir") != h.hexdigest():
            bad.append(str(path.relative_to(root)))
    return n, bad


def dvc_clean(trial: Trial) -> list[str]:
    dirty = []
    for ws in trial.workspaces():
        proc = subprocess.run([str(BIN / "dvc"), "status", "--with-deps", "eval_agent@base", "eval_agent@sft",
                               "eval_agent@rl"], cwd=ws, capture_output=True, text=True, env=trial.env)
        if proc.returncode != 0 or "up to date" not in proc.stdout:
            dirty.append(f"{ws.name}: {(proc.stdout + proc.stderr).strip()[:300]}")
    return dirty


def mlflow_state(trial: Trial) -> tuple[list[str], list[str]]:
    """(runs left RUNNING, 'variant: stage' of runs closed KILLED)."""
    from mlflow import MlflowClient

    client = MlflowClient(trial.env["MLFLOW_TRACKING_URI"])
    exp = client.get_experiment_by_name("star")
    runs = client.search_runs([exp.experiment_id], max_results=5000) if exp else []
    running = [r.info.run_name for r in runs if r.info.status == "RUNNING"]
    killed = [f"{r.info.run_name}: {r.data.tags.get('star.failed_stage', '?')}" for r in runs
              if r.info.status == "KILLED" and r.data.tags.get("star.kind") == "variant"]
    return running, killed


def prefect_running(env: dict) -> int:
    proc = subprocess.run([str(BIN / "python"), "-c", (
        "from prefect.client.orchestration import get_client\n"
        "from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterState, FlowRunFilterStateType\n"
        "with get_client(sync_client=True) as c:\n"
        "    state = FlowRunFilterState(type=FlowRunFilterStateType(any_=['RUNNING']))\n"
        "    runs = c.read_flow_runs(flow_run_filter=FlowRunFilter(state=state))\n"
        "    print(len(runs))")], capture_output=True, text=True, env=env)
    return int(proc.stdout.strip() or -1)


def start_server(home: Path) -> tuple[subprocess.Popen, dict]:
    env = {**os.environ, "PREFECT_HOME": str(home), "PREFECT_API_URL": f"http://127.0.0.1:{PORT}/api",
           "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1", "MLFLOW_DISABLE_TELEMETRY": "true",
           "GX_ANALYTICS_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "INFO"}
    server = subprocess.Popen([str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(PORT)],
                              env=env, stdout=open(home / "server.log", "w"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    import urllib.request

    for _ in range(240):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{PORT}/api/health", timeout=2)
            return server, env
        except OSError:
            time.sleep(0.5)
    raise RuntimeError(f"the Prefect server did not start; see {home / 'server.log'}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--points", default=",".join(POINTS), help=f"comma-separated, of {', '.join(POINTS)}")
    p.add_argument("--profile", default="smoke")
    p.add_argument("--timeout", type=float, default=1800, help="seconds a run may take")
    p.add_argument("--keep", action="store_true", help="keep the clones (default: removed when all passed)")
    args = p.parse_args(argv)
    points = [x for x in args.points.split(",") if x]
    unknown = set(points) - set(POINTS)
    if unknown:
        p.error(f"unknown points {sorted(unknown)}; known: {', '.join(POINTS)}")
    root = Path(tempfile.mkdtemp(prefix="star-faults-"))
    ablation = root / "faults.yaml"
    ablation.write_text(ABLATION)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT, capture_output=True, text=True,
                            check=True).stdout.strip()  # every trial runs the same code, whatever lands meanwhile
    server, env = start_server(root)
    log(f"fault injection in {root} at commit {commit[:12]}; Prefect server on 127.0.0.1:{PORT}")
    rows, ok_all = [], True
    try:
        ref = Trial(root, "reference", env, ablation, args.profile, commit)
        t0 = time.time()
        proc = ref.start(root / "reference.log")
        code = proc.wait(timeout=args.timeout)
        if code != 0:
            log((root / "reference.log").read_text()[-3000:])
            raise RuntimeError(f"the uninterrupted reference run failed (exit {code})")
        reference = ref.metrics()
        log(f"reference: {len(reference)} evaluations in {time.time() - t0:.0f}s")
        for point in points:
            trial = Trial(root, point, env, ablation, args.profile, commit)
            first_log = root / f"{point}.killed.log"
            pause = {"STAR_PAUSE_AT": "report:120"} if point == "report" else {}
            proc = trial.start(first_log, pause)
            problems: list[str] = []
            try:
                seen = wait_for_point(trial, point, proc, first_log, args.timeout)
            except RuntimeError as exc:
                proc.kill()
                rows.append((point, f"not reached: {exc}", "-", "-", "-", "-", "FAIL"))
                ok_all = False
                continue
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            killed_at = time.time()
            in_repo = lambda a, cwd: cwd.startswith(str(trial.repo))  # noqa: E731
            deadline = time.time() + 20  # the guard's grace period, then SIGKILL
            while _procs_with(in_repo) and time.time() < deadline:
                time.sleep(0.5)
            leftover = _procs_with(in_repo)
            t1 = time.time()
            rerun = trial.start(root / f"{point}.rerun.log")
            code = rerun.wait(timeout=args.timeout)
            rerun_s = time.time() - t1
            if code != 0:
                problems.append(f"rerun exit {code}: {(root / f'{point}.rerun.log').read_text()[-1500:]}")
            got = trial.metrics()
            same = got == reference
            if not same:
                diff = sorted(k for k in set(got) | set(reference) if got.get(k) != reference.get(k))
                problems.append(f"metrics differ from the reference: {diff}")
            dirty = dvc_clean(trial)
            problems += [f"dvc status: {d}" for d in dirty]
            n_obj, bad = cache_rehashes(trial.repo)
            problems += [f"cache object does not re-hash: {b}" for b in bad]
            running, killed = mlflow_state(trial)
            problems += [f"MLflow run left RUNNING: {r}" for r in running]
            if point != "report" and not killed:
                problems.append("no variant run was closed KILLED")
            n_running = prefect_running(env)
            if n_running:
                problems.append(f"{n_running} Prefect flow runs left Running")
            if leftover:
                problems.append(f"{len(leftover)} processes of the killed run were still alive 20 s after the kill")
            resumed = [ws.name for ws in trial.workspaces() if (ws / "models/rl/summary.json").is_file()
                       and json.loads((ws / "models/rl/summary.json").read_text()).get("resumed")]
            status = "ok" if not problems else "FAIL"
            ok_all &= not problems
            rows.append((point, seen, f"{rerun_s:.0f}s", "yes" if same else "NO",
                         "clean" if not dirty else "DIRTY", f"{n_obj} ok" if not bad else f"{len(bad)} bad",
                         status + (f" (GRPO resumed: {', '.join(resumed)})" if resumed else "")
                         + (f"; MLflow KILLED: {'; '.join(killed)}" if killed else "")))
            for line in problems:
                log(f"  [{point}] {line}")
            log(f"{point}: {status} ({time.time() - killed_at:.0f}s after the kill)")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
    log("\n| kill point | seen when killed | rerun | metrics = uninterrupted | dvc status | cache re-hash | result |")
    log("|---|---|---|---|---|---|---|")
    for row in rows:
        log("| " + " | ".join(row) + " |")
    if ok_all and not args.keep:
        shutil.rmtree(root, ignore_errors=True)
    else:
        log(f"clones and logs kept in {root}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
