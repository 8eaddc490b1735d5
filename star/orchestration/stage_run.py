"""Run one pipeline stage's command inside its own MLflow run, then log what the stage wrote.

    python -m star.orchestration.stage_run grpo --params params.yaml --sections rl,model \
        --steps models/rl/steps.jsonl --metrics models/rl/summary.json -- star grpo …

dvc.yaml wraps every stage command with this, and the Prefect tasks run the same rendered
commands, so both doors log identically. The stage run nests under $STAR_MLFLOW_PARENT_RUN_ID
(the flow's variant run) or, under `dvc repro`, under a pipeline run found by the params digest
and git commit. The stage's own process sees MLFLOW_RUN_ID / MLFLOW_TRACKING_URI, so code that
calls `mlflow.start_run()` logs into the stage run. Tracking problems are reported and never
fail the stage: the command's exit status is what this returns.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from star.config import validate_sections
from star.params_io import ConfigError
from star.tracking.config import TrackingConfig
from star.tracking.mlflow_logging import (
    DVC_LOCK,
    KIND,
    PARAMS_DIGEST,
    PARENT_ENV,
    PROFILE,
    PROJECT_DIR,
    STAGE,
    Tracker,
    provenance_tags,
    quiet_telemetry,
    read_jsonl,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("stage", help="stage name (the MLflow run name)")
    parser.add_argument("--params", default="params.yaml", help="resolved params file (its sections are logged)")
    parser.add_argument("--sections", default="", help="comma-separated params sections this stage reads")
    parser.add_argument("--steps", action="append", default=[], help="JSONL of per-step metrics the stage wrote")
    parser.add_argument("--metrics", action="append", default=[], help="JSON of final metrics the stage wrote")
    parser.add_argument("--eval", dest="eval_tables", action="append", default=[], metavar="NAME=FILE",
                        help="an evaluation metric table (JSON) logged as metrics NAME.* and artifacts")
    parser.add_argument("--trajectories", action="append", default=[], help="JSONL of trajectories to sample from")
    parser.add_argument("--artifact", action="append", default=[], help="file or directory to attach")
    parser.add_argument("--project-dir", default=str(PROJECT_DIR), help=argparse.SUPPRESS)


def _load_params(path: str) -> dict:
    import yaml

    p = Path(path)
    if not p.is_file():
        return {}
    data = yaml.safe_load(p.read_text()) or {}
    return data if isinstance(data, dict) else {}


def _dvc_session() -> str:
    """The `dvc repro` process this stage runs under (its pid and start time), so that every stage of
    one repro nests under one pipeline run; 'none' outside DVC."""
    pid = os.getppid()
    for _ in range(3):  # dvc -> /bin/sh -c -> this process (or dvc -> this process)
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return "none"
        if any(Path(a).name == "dvc" for a in argv[:2]):
            return f"{pid}-{stat[19]}"  # stat field 22: the process start time, so a reused pid differs
        pid = int(stat[1])  # stat field 4: the parent pid
        if pid <= 1:
            break
    return "none"


def _pipeline_parent(tracker, params: dict, params_path: str) -> str:
    """Under `dvc repro`: one pipeline run per repro invocation (and params digest), reused by its stages."""
    digest = hashlib.sha256(Path(params_path).read_bytes()).hexdigest()[:12] if Path(params_path).is_file() else "none"
    session = _dvc_session()
    if session != "none":
        found = tracker.find_runs(f"tags.`{KIND}` = 'pipeline' and tags.`{PARAMS_DIGEST}` = '{digest}' "
                                  f"and tags.`star.dvc_session` = '{session}'")
        if found:
            return found[-1].info.run_id
    profile = (params.get("run") or {}).get("profile") or "default"
    run_id = tracker.start_run(f"dvc repro ({profile})", "pipeline",
                               tags={PARAMS_DIGEST: digest, PROFILE: profile, "star.door": "dvc",
                                     "star.dvc_session": session})
    tracker.log_params(run_id, {k: v for k, v in params.items() if k != "run"})
    return run_id


def tracker_tags(tracker) -> dict:
    return provenance_tags()


def _after(tracker, run_id: str, args, elapsed: float) -> None:
    import json

    tracker.log_metrics(run_id, {"stage.seconds": elapsed})
    for path in args.metrics:
        if Path(path).is_file():
            data = json.loads(Path(path).read_text())
            if isinstance(data, dict):
                tracker.log_results(run_id, data)
            tracker.log_artifact(run_id, path, "outputs")
    already = set(tracker.client.get_run(run_id).data.metrics)
    for path in args.steps:
        if Path(path).is_file():
            records = read_jsonl(path)
            # The stage may have logged its own curves live (MLFLOW_RUN_ID); do not double them.
            keys = {k for r in records for k in r if k != "step"}
            if not keys & already:
                tracker.log_step_metrics(run_id, records)
            tracker.log_artifact(run_id, path, "outputs")
    for item in args.eval_tables:
        name, sep, path = item.partition("=")
        if not sep:
            name, path = "eval", item
        if Path(path).is_file():
            data = json.loads(Path(path).read_text())
            table = data.get("metrics", data) if isinstance(data, dict) else {}
            tracker.log_eval_table(run_id, table, name=name)
    for path in args.trajectories:
        if Path(path).is_file():
            tracker.log_trajectories(run_id, read_jsonl(path), name=f"trajectories/{Path(path).stem}")
    for path in args.artifact:
        if Path(path).exists():
            tracker.log_artifact(run_id, path, "outputs")


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """Options before `--`, the stage command after it."""
    if "--" not in argv:
        return argv, []
    i = argv.index("--")
    return argv[:i], argv[i + 1:]


def normalise_command(command: list[str]) -> list[str]:
    """`star …` runs with this interpreter (DVC's shell may not have the venv on PATH), and an
    option whose value rendered as `None` (a null param in params.yaml) is dropped, so the stage
    CLI falls back to its own default of None."""
    out: list[str] = []
    i = 0
    while i < len(command):
        if command[i].startswith("--") and i + 1 < len(command) and command[i + 1] == "None":
            i += 2
            continue
        out.append(command[i])
        i += 1
    if out and out[0] == "star":
        out = [sys.executable, "-m", "star.cli", *out[1:]]
    return out


class _Stopped(Exception):
    """SIGTERM reached the stage wrapper (its process group is being stopped)."""


def _stop(signum, frame):
    raise _Stopped()


def run(args: argparse.Namespace) -> int:
    quiet_telemetry()
    command = normalise_command(list(getattr(args, "command", []) or []))
    if not command:
        print("stage_run: no command given after --", file=sys.stderr)
        return 2
    params = _load_params(args.params)
    sections = [s for s in args.sections.split(",") if s]
    try:
        validate_sections(params, sections, args.params)
    except ConfigError as exc:
        print(f"stage {args.stage}: {exc}\n(DVC removed this stage's outputs before running it: "
              "`dvc checkout` brings back the last good ones)", file=sys.stderr)
        return 2
    tracker = run_id = None
    try:
        tracking = TrackingConfig.model_validate(params.get("tracking") or {})
        tracker = Tracker(tracking, Path(args.project_dir))
        parent = os.environ.get(PARENT_ENV) or _pipeline_parent(tracker, params, args.params)
        run_id = tracker.start_run(args.stage, "stage", parent_id=parent, tags={STAGE: args.stage})
        tracker.log_params(run_id, {s: params[s] for s in sections if s in params})
        tracker.log_dict(run_id, {"command": command}, "command.json")
    except Exception as exc:  # tracking must never cost a stage its work
        print(f"stage_run: MLflow tracking unavailable ({type(exc).__name__}: {exc}); running untracked",
              file=sys.stderr)
        tracker = None
    env = dict(os.environ)
    if tracker is not None:
        env.update({"MLFLOW_RUN_ID": run_id, "MLFLOW_TRACKING_URI": tracker.uri,
                    "MLFLOW_EXPERIMENT_ID": tracker.experiment_id})
    start = time.time()
    stopped = None
    previous = signal.signal(signal.SIGTERM, _stop)
    try:
        rc = subprocess.run(command, env=env).returncode  # an exception here kills the command
    except FileNotFoundError:
        print(f"stage_run: command not found: {command[0]}", file=sys.stderr)
        rc = 127
    except (KeyboardInterrupt, _Stopped) as exc:
        stopped = "SIGINT" if isinstance(exc, KeyboardInterrupt) else "SIGTERM"
        rc = 130 if stopped == "SIGINT" else 143
    finally:
        signal.signal(signal.SIGTERM, previous)
    elapsed = time.time() - start
    if tracker is not None:
        try:
            if rc == 0:
                _after(tracker, run_id, args, elapsed)
            if stopped:  # cancelled, or the run's process died: say so where the stage's run is read
                tracker.client.set_tag(run_id, "star.failed_stage", args.stage)
                tracker.client.set_tag(run_id, "star.error", f"stage {args.stage} stopped by {stopped} after "
                                       f"{elapsed:.0f}s (the run was cancelled, or its flow or worker died)")
            tracker.end_run(run_id, "FINISHED" if rc == 0 else "KILLED" if stopped else "FAILED")
            if not os.environ.get(PARENT_ENV):
                parent = tracker.client.get_run(run_id).data.tags.get("mlflow.parentRunId")
                if parent:
                    tracker.end_run(parent, "FINISHED" if rc == 0 else "FAILED")
        except Exception as exc:
            print(f"stage_run: logging the results of {args.stage} failed ({type(exc).__name__}: {exc})",
                  file=sys.stderr)
    return rc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m star.orchestration.stage_run", description=__doc__.splitlines()[0])
    add_arguments(parser)
    options, command = split_command(list(sys.argv[1:] if argv is None else argv))
    args = parser.parse_args(options)
    args.command = command
    return run(args)


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["main", "run", "add_arguments", "DVC_LOCK"]
