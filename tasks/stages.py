"""One thin Prefect task per pipeline stage.

Each task runs its dvc.yaml stage through `star.tracking.stages.VariantRunner` (the same rendered
command `dvc repro` runs, logged as a nested MLflow stage run) and returns where the output lives.
Stages whose outputs are written atomically into a fresh directory are safe to retry; training
stages are not retried automatically (a rerun costs the whole training; `star grpo --resume` exists).
"""

from __future__ import annotations

from prefect import get_run_logger, task
from prefect.cache_policies import NO_CACHE

from star.tracking.stages import StageResult, VariantRunner

RETRY_SAFE = {"sandbox", "synthesize", "validate", "split", "teacher", "sft_data", "build_model", "evaluate",
              "qa_data", "qa_index", "evaluate_ood"}


def _run(runner: VariantRunner, stage: str, parent_run_id: str | None) -> StageResult:
    logger = get_run_logger()
    result = runner.run(stage, parent_run_id, log=logger.info)
    logger.info(f"{stage}: {'reused' if result.cached else 'computed'} {result.path} ({result.seconds:.1f}s)")
    return result


def _stage_task(name: str):
    # Inputs hold a live runner object: Prefect's input-hash cache would not be meaningful, and our
    # own content-addressed stage directories already give the reuse.
    return task(_run, name=name, task_run_name=f"{name}" + "[{stage}]", cache_policy=NO_CACHE,
                retries=2 if name in RETRY_SAFE else 0, retry_delay_seconds=5, persist_result=True)


sandbox = _stage_task("sandbox")
synthesize = _stage_task("synthesize")
validate = _stage_task("validate")
split = _stage_task("split")
teacher = _stage_task("teacher")
sft_data = _stage_task("sft_data")
build_model = _stage_task("build_model")
sft = _stage_task("sft")
grpo = _stage_task("grpo")
evaluate = _stage_task("evaluate")

STAGE_TASKS = {t.name: t for t in (sandbox, synthesize, validate, split, teacher, sft_data, build_model, sft,
                                   grpo, evaluate)}


def task_for(stage: str):
    """The task of a dvc.yaml stage name (`evaluate@rl` -> evaluate)."""
    base = stage.split("@")[0]
    if base not in STAGE_TASKS:
        raise KeyError(f"no Prefect task for stage {stage!r}; add one to tasks/stages.py")
    return STAGE_TASKS[base]
