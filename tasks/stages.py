"""One thin Prefect task per dvc.yaml stage, derived from dvc.yaml (the one list of stages).

Each task runs its stage through DVC in the variant's workspace (`dvc repro --single-item STAGE`,
see star.orchestration.stages.Workspace) and returns whether DVC ran it or restored it from its
run-cache. A stage is retried `flow.retries` times unless dvc.yaml marks it `meta: {retries: 0}`
(training: a rerun costs the whole run; `star grpo --resume` exists for that). A stage marked
`meta: {compute: true}` first takes a slot of Prefect's global concurrency limit `star-compute`
(`flow.compute_slots`, set by `star serve`), so runs side by side never train or evaluate at once
on one machine; without that limit it runs at once.
"""

from __future__ import annotations

from functools import lru_cache

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE
from prefect.concurrency.sync import concurrency

from star.orchestration.cli_serve import COMPUTE_LIMIT
from star.orchestration.stages import PROJECT_DIR, StageResult, Workspace, stage_meta, stage_order


def _run(workspace: Workspace, stage: str) -> StageResult:
    log = get_run_logger().info
    if not _meta().get(stage, {}).get("compute"):
        return workspace.repro(stage, log=log)
    with concurrency(COMPUTE_LIMIT, occupy=1):  # a DVC restore inside takes the slot briefly, harmlessly
        return workspace.repro(stage, log=log)


@lru_cache(maxsize=None)
def stage_tasks() -> dict[str, object]:
    """{stage name: Prefect task} for every stage dvc.yaml declares (foreach items included)."""
    return {name: task(_run, name=name, cache_policy=NO_CACHE, persist_result=True) for name in stage_order(PROJECT_DIR)}


@lru_cache(maxsize=None)
def _meta() -> dict[str, dict]:
    return stage_meta(PROJECT_DIR)


def retries(stage: str, default: int) -> int:
    """How often the flow retries a failed stage: dvc.yaml's `meta: {retries: N}`, else `default`."""
    return int(_meta().get(stage, {}).get("retries", default))


def task_for(stage: str):
    """The task of a dvc.yaml stage (`eval_agent@rl`)."""
    tasks = stage_tasks()
    if stage not in tasks:
        raise KeyError(f"dvc.yaml has no stage {stage!r}; it has {', '.join(tasks)}")
    return tasks[stage]
