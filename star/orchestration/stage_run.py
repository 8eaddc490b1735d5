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
from star.params_io import ConfigError, flatten
from star.tracking.config import TrackingConfig
from star.tracking import lineage
from star.tracking.episodes import log_episode_table, log_episode_traces
from star.tracking.mlflow_logging import (
    DVC_LOCK,
    HEADLINE_KEYS,
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


OUTPUTS_DIGEST = "star.outputs_digest"  # the result files a stage wrote: a restored copy of it has the same


def result_files(args) -> list[str]:
    """The files the stage reports (metrics, step curves, evaluation tables, trajectories), in option order."""
    evals = [item.partition("=")[2] or item for item in args.eval_tables]
    return [*args.metrics, *args.steps, *evals, *args.trajectories]


def outputs_digest(args, root: Path = Path(".")) -> str | None:
    """sha256 over the stage's result files: DVC restoring the stage from its run-cache brings back these
    same bytes, so the restored stage's run finds the run that computed them by this tag."""
    files = [root / f for f in result_files(args)]
    if not files or not all(f.is_file() for f in files):
        return None
    return hashlib.sha256("".join(lineage.file_md5(f) for f in files).encode()).hexdigest()[:32]


def stage_label(stage: str) -> str:
    """The stage as DVC names it where the wrapper's name is its `@`-less spelling (`eval_agent_rl` runs as
    `eval_agent@rl`, the name a restored copy's run gets too); the wrapper's own name otherwise (the learn
    pipeline's `learn_sft`, whose DVC address `learn_sft@learn` only switches the pipeline on)."""
    address = os.environ.get("DVC_STAGE", "").split(":")[-1]
    return address if address and address.replace("@", "_") == stage else stage


def run_name(stage: str, params: dict) -> str:
    """`reward=sum · grpo` inside an ablation's variant, the stage's name alone elsewhere."""
    variant = (params.get("run") or {}).get("variant")
    return f"{variant} · {stage}" if variant else stage


def dvc_stage(root: Path) -> tuple[str, list[str], list[str]] | None:
    """The DVC stage this process runs as ($DVC_STAGE, set by DVC): its address, deps and outs."""
    address = os.environ.get("DVC_STAGE")
    if not address:
        return None
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        stage = repo.stage.collect(address)[0]
        return address, [d.def_path for d in stage.deps], [o.def_path for o in stage.outs]


def log_lineage(tracker, run_id: str, params: dict, metrics: dict, trained: bool = False,
                sections: list[str] | None = None, root: Path = Path(".")) -> None:
    """Datasets read as MLflow inputs; the model directories a training stage (`trained`) wrote as logged,
    registered models; a model read (an evaluation's) as the run's model input, with the evaluation's
    headline metrics against it."""
    found = dvc_stage(root)
    if found is None:
        return
    address, deps, outs = found
    client, run = tracker.client, (params.get("run") or {})
    lineage.log_datasets(client, run_id, lineage.data_deps(deps, root), root, lineage.dataset_context(address))
    for rel in lineage.model_dirs([d for d in deps if d.startswith("models/")], root):
        model_id = lineage.find_model(client, tracker.experiment_id, root / rel)
        if model_id:
            lineage.link_model_input(client, run_id, model_id)
            if metrics and address.startswith("eval"):
                lineage.log_model_metrics(client, run_id, model_id, metrics)
    profile = run.get("profile") or (params.get("model") or {}).get("profile") or "default"
    if trained:  # a model's params: the sections its stage reads (--sections), as the stage run logs them
        own = flatten({s: params[s] for s in sections or [] if isinstance(params.get(s), dict)})
        lineage.log_models(client, tracker.experiment_id, run_id, lineage.model_dirs(outs, root), root, address,
                           profile, run.get("variant"), own)


def _after(tracker, run_id: str, args, elapsed: float, params: dict | None = None) -> None:
    import json

    tracker.log_metrics(run_id, {"stage.seconds": elapsed})
    digest = outputs_digest(args)
    if digest:
        tracker.client.set_tag(run_id, OUTPUTS_DIGEST, digest)
    for path in args.metrics:
        if Path(path).is_file():
            data = json.loads(Path(path).read_text())
            if isinstance(data, dict):
                tracker.log_results(run_id, data)
            tracker.log_artifact(run_id, path, "outputs")
    already = set(tracker.client.get_run(run_id).data.metrics)
    headline: dict[str, float] = {}
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
            headline.update(headline_metrics(table, name))
    for path in args.trajectories:
        if Path(path).is_file():
            episodes = read_jsonl(path)
            tracker.log_trajectories(run_id, episodes, name=f"trajectories/{Path(path).stem}")
            try:  # browsable episodes: a table of all; a trace each for an evaluation's
                log_episode_table(tracker.client, run_id, episodes, f"episodes/{Path(path).stem}.json")
                if args.eval_tables:
                    log_episode_traces(tracker.client, tracker.experiment_id, run_id, episodes)
            except Exception as exc:
                print(f"stage_run: episodes of {path} not logged as a table/traces ({type(exc).__name__}: {exc})",
                      file=sys.stderr)
    for path in args.artifact:
        if Path(path).exists():
            tracker.log_artifact(run_id, path, "outputs")
    try:
        log_lineage(tracker, run_id, params or {}, headline, trained=bool(args.steps),
                    sections=[x for x in args.sections.split(",") if x])
    except Exception as exc:  # lineage is bookkeeping: the stage's results are already logged
        print(f"stage_run: datasets/models of {args.stage} not logged ({type(exc).__name__}: {exc})",
              file=sys.stderr)


def headline_metrics(table: dict, name: str) -> dict[str, float]:
    """The evaluation's headline rates (one unit: fractions) for the model they describe."""
    return {f"{name}.{k}": float(table[k]) for k in HEADLINE_KEYS if isinstance(table.get(k), (int, float))}


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """Options before `--`, the stage command after it."""
    if "--" not in argv:
        return argv, []
    i = argv.index("--")
    return argv[:i], argv[i + 1:]


def parse_stage_command(cmd: str) -> argparse.Namespace | None:
    """The wrapper's options in a stage's rendered dvc.yaml command (None when it is not wrapped)."""
    import shlex

    words = shlex.split(cmd)
    if "star.orchestration.stage_run" not in words:
        return None
    options, _ = split_command(words[words.index("star.orchestration.stage_run") + 1:])
    parser = argparse.ArgumentParser(add_help=False)
    add_arguments(parser)
    return parser.parse_known_args(options)[0]


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


def system_monitor(tracker, run_id: str):
    """MLflow's system metrics (CPU, memory, disk, GPU where present) on a training stage's run (one with
    step curves), sampled every 5 s while its command runs; None when MLflow cannot start the monitor."""
    try:
        from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

        monitor = SystemMetricsMonitor(run_id, sampling_interval=5, tracking_uri=tracker.uri)
        monitor.start()
        return monitor
    except Exception as exc:
        print(f"stage_run: no system metrics ({type(exc).__name__}: {exc})", file=sys.stderr)
        return None


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
        run_id = tracker.start_run(run_name(stage_label(args.stage), params), "stage", parent_id=parent,
                                   tags={STAGE: args.stage})
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
    monitor = system_monitor(tracker, run_id) if tracker is not None and args.steps else None
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
        if monitor is not None:
            monitor.finish()
    elapsed = time.time() - start
    if tracker is not None:
        try:
            if rc == 0:
                _after(tracker, run_id, args, elapsed, params)
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
