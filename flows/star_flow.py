"""Prefect flow `star`: one pipeline variant, or (deployment `ablation`) every variant of an ablation.

    star(profile="smoke")                                   # one pipeline run (like `dvc repro`)
    star(ablation="reward", variant="reward=sum")           # one variant
    star(ablation="reward")                                 # fan out all variants as subflows + report

Prefect orchestrates, DVC runs and caches, MLflow tracks. Each variant gets its own workspace, a git
worktree of the project at the ablation's commit under `flow.runs_dir`, holding the variant's
resolved params.yaml and sharing the project's DVC cache. Each stage is a Prefect task running
`dvc repro --single-item STAGE` there, so DVC's run-cache restores any stage another variant (or the
project's own `dvc repro`) already ran with the same command, deps and params. A finished variant is
saved as a DVC experiment named after it (`dvc exp show` lists it, `dvc exp apply` restores it).
MLflow: a parent run for the ablation, a child per variant, a nested run per stage; the comparison
report lands on the parent run and in runs_dir/PROFILE/ABLATION/report/. A run is named by what it
ran: its overrides (and a profile other than the default) are part of its DVC experiment's name, its
folder (runs_dir/PROFILE/ABLATION_OVERRIDES/), its MLflow parent's name and tags, and its report, so
an earlier run's experiments and report stay.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger, task
from prefect.cache_policies import NO_CACHE

from star.config import DEFAULT_PROFILE
from star.tracking.mlflow_logging import quiet_telemetry

PROJECT_DIR = Path(__file__).resolve().parents[1]

quiet_telemetry()


def _runs_dir(cfg) -> Path:
    """flow.runs_dir; $STAR_RUNS_DIR, set on a worker, gives that worker (node) a workspace root of its own."""
    runs = Path(os.environ.get("STAR_RUNS_DIR") or cfg["flow"].runs_dir)
    return runs if runs.is_absolute() else PROJECT_DIR / runs


def _remote(cfg) -> str | None:
    return os.environ.get("STAR_DVC_REMOTE") or cfg["flow"].dvc_remote


def _stage_locks(cfg, ablation_dir: Path) -> Path | None:
    """With a remote in a folder every worker mounts, the per-stage locks live beside it, so two workers
    never compute the same stage at once: the second waits, then restores it through the remote."""
    remote = _remote(cfg)
    if not remote or "://" in remote:
        return None  # object storage holds no locks: workers may then compute a shared stage twice
    return Path(remote) / ".star-locks" / ablation_dir.relative_to(_runs_dir(cfg))


# What the report reads of a variant (star.report.load.load_variant_dir), logged on its MLflow run so
# that a parent on another machine can fetch it.
VARIANT_FILES = ("params.yaml", "metrics/eval/rl/metrics.json", "metrics/eval/rl/trajectories.jsonl",
                 "metrics/eval/sft/metrics.json", "metrics/eval/base/metrics.json", "models/rl/metrics.jsonl")


# GRPO's step curves a variant's run charts (the stage run holds them all).
VARIANT_CURVES = ("reward_mean", "reward_std", "delivered", "finish_format_error", "tool_calls", "optimizer_steps")


def _ablation_dir(cfg, profile: str | None, ablation: str | None, overrides: dict | None) -> Path:
    """runs/PROFILE/ABLATION[_OVERRIDES]/: a run with other overrides gets its own folder and report."""
    from star.ablations import run_dir_name

    return _runs_dir(cfg) / (profile or "default") / run_dir_name(ablation or "single", overrides)


def _workspace_path(cfg, profile: str | None, ablation: str | None, variant: str | None,
                    overrides: dict | None = None) -> Path:
    from star.ablations import variant_slug

    return _ablation_dir(cfg, profile, ablation, overrides) / variant_slug(variant or "default")


def _read_metrics(path: Path) -> dict:
    if not path.is_file():
        return {}
    data = json.loads(path.read_text())
    return data.get("metrics", data) if isinstance(data, dict) else {}


def experiment_name(variant: str | None, profile: str | None, overrides: dict | None = None) -> str:
    """The DVC experiment a run is saved as, named by what it ran: a variant's slug led by its profile
    unless that is the default one (`reward-sum`, `cpu_reward-sum`), a single run `PROFILE-pipeline`;
    then the overrides (`reward-sum_rl.learning_rate-0.0002`), so another run never replaces it."""
    from star.ablations import overrides_slug, variant_slug
    from star.config import DEFAULT_PROFILE

    profile = profile or "default"
    if variant:
        name = variant_slug(variant) if profile == DEFAULT_PROFILE else f"{profile}_{variant_slug(variant)}"
    else:
        name = f"{profile}-pipeline"
    slug = overrides_slug(overrides)
    return f"{name}_{slug}" if slug else name


def run_title(name: str, profile: str | None, overrides: dict | None) -> str:
    """An MLflow parent run's name: `reward (smoke)`, `reward (cpu; rl.learning_rate=0.0002)`."""
    from star.ablations import overrides_label

    label = overrides_label(overrides)
    return f"{name} ({profile or 'default'}{'; ' + label if label else ''})"


def _artifact_key(text: str) -> str:
    """Prefect artifact keys: lower-case letters, digits and dashes."""
    import re

    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-")[:100] or "star"


def _report_artifacts(tracker, parent: str, name: str, markdown: str, outcomes: list[dict]) -> None:
    """The report as the flow run's markdown artifact, and links to the MLflow parent and each variant's run."""
    from prefect.artifacts import create_link_artifact, create_markdown_artifact

    from star.tracking.mlflow_logging import ui_url

    base = os.environ.get("STAR_MLFLOW_UI", "http://127.0.0.1:5000")
    key = _artifact_key(f"{name}-report")
    create_markdown_artifact(markdown, key=key, description=f"ablation {name}: verdict, metrics, paired tests")
    create_link_artifact(ui_url(base, tracker.experiment_id, parent), link_text=f"MLflow: ablation {name}",
                         key=_artifact_key(f"{name}-mlflow"), description="the MLflow parent run (report artifacts)")
    for o in outcomes:
        create_link_artifact(ui_url(base, tracker.experiment_id, o["run_id"]), link_text=f"MLflow: {o['variant']}",
                             key=_artifact_key(f"{name}-{o['variant']}-mlflow"),
                             description=f"variant {o['variant']}: its MLflow run (stages nested below)")


def _restored_run(tracker, ws, stage: str, run_id: str, status: str) -> str:
    """A stage DVC restored from its run-cache: a run named like the computed one, carrying the metrics of
    the run that computed these outputs (found by the digest of its result files) and a link to it."""
    from star.orchestration.stage_run import OUTPUTS_DIGEST, outputs_digest, parse_stage_command
    from star.orchestration.stages import stage_command
    from star.tracking import mlflow_logging as ml

    args = parse_stage_command(stage_command(ws.path, stage))
    digest = outputs_digest(args, ws.path) if args is not None else None
    source = None
    if digest:
        found = tracker.find_runs(f"tags.`{OUTPUTS_DIGEST}` = '{digest}' and attributes.status = 'FINISHED'")
        source = next((r for r in found if r.data.tags.get("star.cached") != "true"), None)
    variant = tracker.client.get_run(run_id).data.tags.get(ml.VARIANT) or ""
    name = f"{variant} · {stage}" if variant else stage
    tags = {ml.STAGE: stage, "star.cached": "true", "star.dvc": status}
    if digest:
        tags[OUTPUTS_DIGEST] = digest
    if source is not None:
        tags["star.computed_by"] = source.info.run_id
        tags["mlflow.note.content"] = (f"Restored by DVC from its run-cache: computed by run "
                                       f"[{source.info.run_name}]({ui_url_rel(source)}); its metrics are copied here.")
    sid = tracker.start_run(name, "stage", parent_id=run_id, tags=tags)
    if source is not None:
        tracker.log_metrics(sid, dict(source.data.metrics))
    tracker.end_run(sid)
    return sid


def ui_url_rel(run) -> str:
    return f"#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}"


class VariantFailed(RuntimeError):
    """A variant failed; the message is one line: the variant, the stage and the reason."""


def failure_line(exc: BaseException) -> str:
    """One line saying what failed and why (the full text is on the MLflow run and in the worker log)."""
    from star.orchestration.stages import StageError

    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    own = isinstance(exc, (VariantFailed, AblationFailed, StageError))  # their first line says it all
    return first if own else f"{type(exc).__name__}: {first}"


def _last_word(exc: BaseException) -> None:
    """The flow's final log line names what failed and why, sent before the run turns Failed: `prefect
    deployment run --watch` stops listening soon after that, and otherwise ends on a bare state name."""
    from prefect.logging.handlers import APILogHandler

    get_run_logger().error(f"star failed: {failure_line(exc)}")
    try:
        APILogHandler.flush()
    except Exception:  # the line is still in the worker log; never hide the flow's own error
        pass


def run_one(profile: str | None, ablation: str | None, variant: str | None, overrides: dict | None,
            stages: list[str] | None, parent_run_id: str | None, commit: str | None = None) -> dict[str, Any]:
    from star.ablations import overrides_label, parse_variant_name
    from star.config import resolve
    from star.tracking import mlflow_logging as ml
    from star.orchestration.stages import Workspace, head_commit, needed_stages
    from star.orchestration.workspace_hold import WorkspaceHold
    from tasks.stages import retries, task_for

    logger = get_run_logger()
    cfg = resolve(profile, ablation, variant, overrides)  # `ablation` may be a name or a file's path
    ablation = cfg.ablation
    tracker = ml.Tracker(cfg["tracking"])
    kind = "variant" if parent_run_id else "pipeline"
    commit = commit or head_commit(PROJECT_DIR)
    # The workspace is a clean checkout of `commit`, which the project's HEAD may have moved past meanwhile.
    run_id = tracker.start_run(cfg.variant or run_title("pipeline", profile, overrides), kind,
                               parent_id=parent_run_id,
                               tags={ml.PROFILE: profile or "default", ml.ABLATION: ablation or "",
                                     ml.VARIANT: cfg.variant or "", ml.OVERRIDES: overrides_label(overrides),
                                     "star.door": "prefect", ml.PARAMS_DIGEST: cfg.digest(),
                                     ml.GIT_COMMIT: commit, ml.GIT_DIRTY: "false"})
    tracker.log_params(run_id, cfg.values)
    path = _workspace_path(cfg, profile, ablation, variant, overrides)
    ws = Workspace(path, PROJECT_DIR, cache_dir=os.environ.get("STAR_DVC_CACHE") or None,
                   env={ml.PARENT_ENV: run_id, "MLFLOW_TRACKING_URI": tracker.uri}, remote=_remote(cfg),
                   stage_lock_dir=_stage_locks(cfg, path.parent))
    status, stage = "FAILED", "workspace"
    hold = WorkspaceHold(ws.lock_dir, ws.path.name, {**_flow_run_ids(), "mlflow_run": run_id,
                                                     "parent_run": parent_run_id, "owner_pid": os.getpid()},
                         log=logger.info)
    try:
        hold.acquire()  # another run of this variant (a second deployment run, a rerun) waits here
        if hold.waited_s > 1:
            logger.info(f"{cfg.name}: workspace free after {hold.waited_s:.0f}s")
        if hold.stale:
            _clean_up_after(hold.stale, ws, tracker, logger)
        ws.hold_record = hold.record_path
        logger.info(f"{cfg.name}: workspace {ws.path} at {commit[:12]}, MLflow run {run_id}")
        ws.prepare(cfg.to_params(), commit)
        results = {}
        for stage in needed_stages(ws.path, stages):
            t = task_for(stage).with_options(retries=retries(stage, cfg["flow"].retries), retry_delay_seconds=5)
            result = t(ws, stage)
            results[stage] = result.status
            if result.cached:  # still one stage run per stage in MLflow, saying where the output came from
                _restored_run(tracker, ws, stage, run_id, result.status)
        stage = "dvc exp save"
        hold.update(stage=stage, pgid=None)
        _pause_point("exp_save")
        exp = ws.save_experiment(experiment_name(cfg.variant, profile, overrides), list(results))
        tracker.client.set_tag(run_id, "star.dvc_experiment", exp)
        final = _read_metrics(ws.path / "metrics/eval/rl/metrics.json")
        if final:  # the headline rates as metrics (charted, compared across variants); the full table as files
            tracker.log_eval_table(run_id, final, name="eval", only=ml.HEADLINE_KEYS)
        summary_file = ws.path / "models/rl/summary.json"
        if summary_file.is_file():
            tracker.log_metrics(run_id, {"grpo.updates": json.loads(summary_file.read_text()).get("optimizer_steps", 0)})
        curves = ws.path / "models/rl/metrics.jsonl"
        if curves.is_file():  # GRPO's curves on the variant's own page, not only two levels down on its stage
            tracker.log_step_metrics(run_id, [{k: r[k] for k in ("step", *VARIANT_CURVES) if k in r}
                                              for r in ml.read_jsonl(curves)], prefix="grpo.")
        for rel in VARIANT_FILES:
            if (ws.path / rel).is_file():
                tracker.log_artifact(run_id, ws.path / rel, str(Path("variant") / Path(rel).parent))
        status = "FINISHED"
        logger.info(f"{cfg.name}: saved as DVC experiment {exp!r}; stages: {results}")
        return {"variant": cfg.variant, "levels": parse_variant_name(cfg.variant) if cfg.variant else {},
                "run_id": run_id, "workspace": str(ws.path), "experiment": exp,
                "success_rate": final.get("success_rate"), "stages": results}
    except Exception as exc:
        # Visible where people look: the worker log, and the variant's MLflow run (tag + text).
        text = f"stage {stage}: {type(exc).__name__}: {exc}"
        logger.error(f"{cfg.name} failed at {text}")
        tracker.client.set_tag(run_id, "star.failed_stage", stage)
        tracker.client.set_tag(run_id, "star.error", text[:4900])
        tracker.log_text(run_id, text + "\n\n" + traceback.format_exc(), "error.txt")
        reason = failure_line(exc)
        where = "" if reason.startswith(f"stage {stage} ") else f"stage {stage}: "
        raise VariantFailed(f"{cfg.variant or cfg.name}: {where}{reason}") from exc
    except BaseException:  # cancelled (Prefect's TerminationSignal): the stage goes down with the run
        tracker.client.set_tag(run_id, "star.failed_stage", stage)
        tracker.client.set_tag(run_id, "star.error", f"stage {stage}: the run was cancelled or terminated")
        status = "KILLED"
        raise
    finally:
        tracker.end_run(run_id, status)
        hold.release()


def _flow_run_ids() -> dict:
    """This flow run and the one at the top of its tree (a variant subflow's ablation)."""
    try:
        from prefect.runtime import flow_run

        return {"flow_run": flow_run.get_id(), "root_flow_run": flow_run.get_root_flow_run_id()}
    except Exception:  # outside a flow run (the library used alone)
        return {}


def _pid_alive(pid) -> bool:
    try:
        os.kill(int(pid), 0)
        return True
    except (ProcessLookupError, TypeError, ValueError):
        return False
    except PermissionError:
        return True


def _clean_up_after(stale: dict, ws, tracker, logger) -> None:
    """A run that held this workspace died mid-run (its record stayed): stop the stage processes it
    left, and close its MLflow runs and Prefect flow runs with the stage and the reason."""
    from star.orchestration.stages import stop_leftover_stage

    stage = stale.get("stage") or "workspace"
    who = f"PID {stale.get('pid')}" + (f", flow run {stale['flow_run']}" if stale.get("flow_run") else "")
    reason = f"interrupted at stage {stage}: its process ({who}) died; a later run took the workspace over"
    if ws is not None and stale.get("pgid") and stop_leftover_stage(stale["pgid"], ws.path):
        logger.warning(f"stopped the stage processes (group {stale['pgid']}) that the dead run left at {stage}")
    closed = tracker.close_interrupted(stale["mlflow_run"], stage, reason) if stale.get("mlflow_run") else []
    owner_alive = _pid_alive(stale.get("owner_pid"))
    if stale.get("parent_run") and not owner_alive:
        # Only the parent itself: each variant's run is closed with its own stage when its workspace is taken.
        closed += tracker.close_interrupted(stale["parent_run"], stage, reason, descendants=False)
    if not owner_alive:
        _crash_flow_runs([stale.get("flow_run"), stale.get("root_flow_run")], reason)
    where = f"workspace {ws.path.name}" if ws is not None else "ablation run"
    logger.warning(f"{where}: the last run {reason}; MLflow runs closed as KILLED: {len(closed)}")


def _crash_flow_runs(ids: list, reason: str) -> None:
    """Mark flow runs that still say Running (their process is gone) as Crashed, with the reason."""
    from prefect.client.orchestration import get_client
    from prefect.states import Crashed

    try:
        with get_client(sync_client=True) as client:
            for fid in dict.fromkeys(i for i in ids if i):
                if client.read_flow_run(fid).state.is_running():
                    client.set_flow_run_state(fid, Crashed(message=reason), force=True)
    except Exception as exc:  # bookkeeping only: never fail the run over it
        try:
            get_run_logger().warning(f"could not mark the dead run's flow runs Crashed: {exc}")
        except Exception:  # outside a run's context (the worker watcher)
            print(f"star: could not mark flow runs Crashed: {exc}", file=sys.stderr)


def _pause_point(name: str) -> None:
    """A fault-injection hook (scripts/fault_injection.py): STAR_PAUSE_AT=name:SECONDS sleeps here, so
    a kill can land inside a step that is otherwise too short to hit."""
    spec = os.environ.get("STAR_PAUSE_AT", "")
    point, _, seconds = spec.partition(":")
    if point == name:
        get_run_logger().info(f"pause point {name}: sleeping {seconds or 30}s (STAR_PAUSE_AT)")
        time.sleep(float(seconds or 30))


@task(name="variant", cache_policy=NO_CACHE, persist_result=True)
def variant_task(profile: str | None, ablation: str, variant: str, overrides: dict | None, stages: list[str] | None,
                 parent_run_id: str, gate: Any = None, commit: str | None = None) -> dict[str, Any]:
    """Runs one variant as a `star` subflow, holding one slot of the ablation's concurrency limit."""
    from star.orchestration.stages import STOPPING

    sem = _GATES[gate]
    with sem:
        if STOPPING.is_set():  # the run is being cancelled: the variants still queued do not start
            raise VariantFailed(f"{variant}: not started (the run was cancelled)")
        return star(ablation=ablation, variant=variant, profile=profile, overrides=overrides, stages=stages,
                    parent_run_id=parent_run_id, commit=commit)


_GATES: dict[str, threading.Semaphore] = {}


def _variant_deployment(pool: str) -> str:
    """`star/NAME`: the deployment of this flow tagged `variant` on work pool `pool` (star serve deploys
    `variant` on local-pool; `prefect deploy --name variant --pool POOL` puts one on another pool)."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import WorkPoolFilter, WorkPoolFilterName

    with get_client(sync_client=True) as client:
        found = client.read_deployments(work_pool_filter=WorkPoolFilter(name=WorkPoolFilterName(any_=[pool])))
        flows = {d.flow_id: client.read_flow(d.flow_id).name for d in found}
    names = sorted(d.name for d in found if flows[d.flow_id] == "star" and "variant" in (d.tags or []))
    if not names:
        raise ValueError(f"no deployment of flow 'star' tagged 'variant' on work pool {pool!r}; deploy one with "
                         f"`prefect --no-prompt deploy --name variant --pool {pool}`")
    return f"star/{names[0]}"


@task(name="pool-variant", cache_policy=NO_CACHE, persist_result=True)
def pool_variant_task(deployment: str, profile: str | None, ablation: str, variant: str, overrides: dict | None,
                      stages: list[str] | None, parent_run_id: str, gate: Any, commit: str,
                      fetch_dir: str) -> dict[str, Any]:
    """Runs one variant as a flow run of `deployment` on its pool and waits for it; what the report needs
    of it comes back through MLflow (the worker may be another machine)."""
    from prefect.deployments import run_deployment

    from star.ablations import parse_variant_name, variant_slug
    from star.tracking import mlflow_logging as ml
    from star.tracking.config import TrackingConfig
    from star.config import resolve

    with _GATES[gate]:
        run = run_deployment(deployment, parameters={
            "ablation": ablation, "variant": variant, "profile": profile, "overrides": overrides, "stages": stages,
            "parent_run_id": parent_run_id, "commit": commit}, timeout=None, as_subflow=True)
    if not run.state.is_completed():
        raise VariantFailed(f"{variant}: flow run {run.name} on the pool ended {run.state.name}: "
                            f"{run.state.message or 'see its log'}")
    tracker = ml.Tracker(resolve(profile, ablation, variant, overrides)["tracking"])
    child = tracker.find_runs(f"tags.mlflow.parentRunId = '{parent_run_id}' and tags.`{ml.VARIANT}` = '{variant}' "
                              "and attributes.status = 'FINISHED'")
    if not child:
        raise VariantFailed(f"{variant}: no FINISHED MLflow run under the ablation's parent")
    run_id = child[-1].info.run_id
    local = Path(fetch_dir) / variant_slug(variant)
    if local.exists():
        import shutil

        shutil.rmtree(local)
    local.mkdir(parents=True)
    if any(a.path == "variant" for a in tracker.client.list_artifacts(run_id)):
        tracker.client.download_artifacts(run_id, "variant", str(local))
    return {"variant": variant, "levels": parse_variant_name(variant), "run_id": run_id,
            "workspace": str(local / "variant"), "experiment": child[-1].data.tags.get("star.dvc_experiment"),
            "worker_flow_run": run.name}


class AblationFailed(RuntimeError):
    """Some variants failed; the report still compares the ones that finished."""


def run_ablation(ablation: str, profile: str | None, overrides: dict | None, stages: list[str] | None,
                 concurrency: int | None, pool: str | None = None, levels: list[str] | None = None) -> dict[str, Any]:
    import uuid

    from star.ablations import load_ablation, overrides_label, part_name
    from star.config import resolve
    from star.tracking import mlflow_logging as ml
    from star.report import build as rep_build, load as rep_load, write as rep_write
    from star.orchestration.stages import head_commit, needed_stages, uncommitted
    from star.orchestration.workspace_hold import WorkspaceHold, orphaned

    logger = get_run_logger()
    abl = load_ablation(ablation)
    if levels:  # its variants are the whole ablation's (same workspaces); its parent and report are its own
        abl = abl.only(list(levels))
    name = part_name(abl.name, levels)  # the parent, report and lock folder
    variants = abl.variants()
    base_cfg = resolve(profile, abl, variants[0].name, overrides)
    # On a pool the workers (and the pool's own limit) decide how many run at once.
    limit = concurrency or (len(variants) if pool else base_cfg["flow"].concurrency)
    tracker = ml.Tracker(base_cfg["tracking"])
    commit = head_commit(PROJECT_DIR)  # one commit for all variants, even if another lands meanwhile
    parent = tracker.start_run(run_title(name, profile, overrides), "ablation",
                               tags={ml.ABLATION: name, ml.PROFILE: profile or "default",
                                     ml.OVERRIDES: overrides_label(overrides), "star.door": "prefect",
                                     "star.variants": ", ".join(v.name for v in variants)})
    tracker.log_params(parent, {"ablation": name, "profile": profile or "default", "variants": len(variants),
                                "concurrency": limit, "overrides": overrides or {}, "commit": commit})
    logger.info(f"ablation {name}: {len(variants)} variants, {limit} at a time, commit {commit[:12]}, "
                f"MLflow parent {parent}")
    dirty = uncommitted(PROJECT_DIR)
    if dirty:
        logger.warning(f"uncommitted changes are not part of the variants (they run commit {commit[:12]}): {dirty}")
    gate = uuid.uuid4().hex
    _GATES[gate] = threading.Semaphore(limit)
    status = "FAILED"
    # This run's own record beside the workspaces: if its process dies, the next run of the ablation
    # closes what it left open (the MLflow parent, the Prefect flow run), even when no workspace was held.
    lock_dir = _ablation_dir(base_cfg, profile, name, overrides) / ".locks"
    run_hold = WorkspaceHold(lock_dir, gate, {**_flow_run_ids(), "parent_run": parent, "owner_pid": os.getpid(),
                                              "stage": "variants"}, kind="run").acquire()
    for stale in orphaned(lock_dir, "run"):
        _clean_up_after(stale, None, tracker, logger)
    try:
        if pool:  # each variant its own flow run on the pool: whichever worker takes it runs it
            deployment = _variant_deployment(pool)
            logger.info(f"variants go to work pool {pool!r} as flow runs of {deployment}")
            futures = [pool_variant_task.with_options(task_run_name=f"variant[{v.name}]").submit(
                deployment, profile, ablation, v.name, overrides, stages, parent, gate, commit,
                str(_ablation_dir(base_cfg, profile, name, overrides) / "fetched")) for v in variants]
        else:
            futures = [variant_task.with_options(task_run_name=f"variant[{v.name}]").submit(
                profile, ablation, v.name, overrides, stages, parent, gate, commit) for v in variants]
        outcomes, failed = [], {}
        for v, fut in zip(variants, futures):
            try:
                outcomes.append(fut.result())
            except Exception as exc:  # one broken variant must not hide the others' results
                logger.error(f"variant {v.name} failed: {exc}")
                failed[v.name] = failure_line(exc)
        summary: dict[str, Any] = {"ablation": name, "parent_run_id": parent, "variants": outcomes,
                                   "failed": failed}
        if stages is None or "eval_agent@rl" in needed_stages(PROJECT_DIR, stages):  # e.g. stages=["compare"]
            results = [rep_load.load_variant_dir(o["workspace"], o["variant"]) for o in outcomes]
            report = rep_build.build_report(results, name, abl.description, abl.paper_table, base_cfg["report"],
                                      eval_set=str(base_cfg["eval"].split), evaluator_mode=str(base_cfg["eval"].mode),
                                      failed=failed, profile=profile or "default", overrides=overrides_label(overrides))
            out_dir = _ablation_dir(base_cfg, profile, name, overrides) / "report"
            run_hold.update(stage="report")
            _pause_point("report")
            with WorkspaceHold(lock_dir, "report", {"parent_run": parent}, log=logger.info, kind="folder"):
                files = rep_write.write_report(report, results, out_dir)  # one run at a time writes the folder
            rep_write.log_report(tracker, parent, report, files)
            summary["report"] = str(files["markdown"])
            _report_artifacts(tracker, parent, name, files["markdown"].read_text(), outcomes)
            logger.info("\n" + files["markdown"].read_text())
        if failed:
            raise AblationFailed(f"{len(failed)} of {len(variants)} variants failed: " + "; ".join(failed.values()))
        status = "FINISHED"
        return summary
    except BaseException as exc:
        if not isinstance(exc, Exception):  # cancelled (Prefect's TerminationSignal), not a failure
            tracker.client.set_tag(parent, "star.error", "the ablation run was cancelled or terminated")
            status = "KILLED"
        raise
    finally:
        tracker.end_run(parent, status)
        _GATES.pop(gate, None)
        run_hold.release(remove_lock=True)


def flow_run_name() -> str:
    """A flow run's name says what it runs: `reward · smoke`, `reward=sum · smoke`, `pipeline · cpu`."""
    from prefect.runtime import flow_run

    p = flow_run.parameters or {}
    what = p.get("variant") or (Path(str(p["ablation"])).stem if p.get("ablation") else "pipeline")
    if p.get("levels"):
        what += "[" + ",".join(map(str, p["levels"])) + "]"
    name = f"{what} · {p.get('profile') or 'default'}"
    return name + (" · " + ", ".join(f"{k}={v}" for k, v in p["overrides"].items()) if p.get("overrides") else "")


@flow(name="star", log_prints=True, persist_result=True, flow_run_name=flow_run_name)
def star(ablation: str | None = None, variant: str | None = None, profile: str | None = DEFAULT_PROFILE,
         overrides: dict[str, Any] | None = None, stages: list[str] | None = None, concurrency: int | None = None,
         parent_run_id: str | None = None, commit: str | None = None, pool: str | None = None,
         levels: list[str] | None = None) -> dict[str, Any]:
    """Run one pipeline variant; with an ablation and no variant, run all its variants and the report.

    ablation: params/ablations/NAME.yaml or params/grids/NAME.yaml; variant: e.g. "reward=sum";
    profile: params/profiles/NAME.yaml; overrides: {"rl.learning_rate": 1e-6}; stages: run only these
    (and what they need); concurrency: variants at a time (default: params flow.concurrency);
    commit: the git commit the variant's workspace checks out (default HEAD; the ablation sets one for all);
    pool: run each variant as a flow run of the `variant` deployment on this work pool (several workers,
    on several machines; they share stages through flow.dvc_remote), instead of subflows in this run;
    levels: run only these levels of the ablation (e.g. ["sum", "success"]; parent and report named by them)."""
    quiet_telemetry()
    _watch_worker()
    try:
        if ablation and variant is None:
            return run_ablation(ablation, profile, overrides, stages, concurrency, pool, levels)
        return run_one(profile, ablation, variant, overrides, stages, parent_run_id, commit)
    except Exception as exc:
        _last_word(exc)
        raise
    except BaseException:  # cancelled or terminated: no stage of this run computes on without it
        from star.orchestration.stages import stop_active_stages

        stop_active_stages()
        raise


_WATCHING: list[int] = []


def _watch_worker() -> None:
    """Under a Prefect worker, a flow run outlives a killed worker (it is re-parented) and would go on
    computing beside the rerun the restarted worker starts. A watcher notices the worker is gone, stops
    this run's stage processes (no new one starts), marks the flow run Crashed and ends the process."""
    if not os.environ.get("PREFECT__FLOW_RUN_ID") or _WATCHING:
        return
    _WATCHING.append(os.getppid())

    def watch(parent: int) -> None:
        while os.getppid() == parent:
            time.sleep(2)
        from star.orchestration.stages import stop_active_stages

        stopped = stop_active_stages()  # and no new stage starts
        reason = f"its worker (PID {parent}) died; {len(stopped)} running stage(s) stopped"
        try:  # the worker held our stdout/stderr pipes: writing may fail now, and must not stop the watcher
            print(f"star: {reason}", file=sys.stderr, flush=True)
        except OSError:
            pass
        ids = _flow_run_ids()
        _crash_flow_runs([ids.get("flow_run"), ids.get("root_flow_run"), os.environ.get("PREFECT__FLOW_RUN_ID")],
                         reason)
        time.sleep(10)  # the variants record their failed stage in MLflow; the next run closes the rest
        os._exit(70)

    threading.Thread(target=watch, args=(_WATCHING[0],), name="star-worker-watch", daemon=True).start()


if __name__ == "__main__":
    import argparse

    p = argparse.ArgumentParser(description="run the `star` flow in this process (no server needed)")
    p.add_argument("--ablation")
    p.add_argument("--variant")
    p.add_argument("--profile", default=DEFAULT_PROFILE)
    p.add_argument("--stages", nargs="*")
    p.add_argument("--concurrency", type=int)
    p.add_argument("--pool", help="fan the variants out over this work pool's workers")
    p.add_argument("--levels", nargs="*", help="only these levels of the ablation")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    a = p.parse_args()
    from star.params_io import parse_set

    print(json.dumps(star(ablation=a.ablation, variant=a.variant, profile=a.profile, overrides=parse_set(a.set) or None,
                          stages=a.stages, concurrency=a.concurrency, pool=a.pool, levels=a.levels),
                     indent=1, default=str))
