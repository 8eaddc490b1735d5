"""A stage's code deps are the import closure of its command, so `dvc repro` never keeps stale results."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("stage_deps", ROOT / "scripts" / "stage_deps.py")
stage_deps = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(stage_deps)


def _derived(pipeline: str = "dvc.yaml") -> dict[str, list[str]]:
    _, stages = stage_deps.plan(ROOT / pipeline)
    return {name: derived for name, (_, derived) in stages.items()}


def _covers(deps: list[str], path: str) -> bool:
    return any(path == d or path.startswith(d.rstrip("/") + "/") for d in deps)


@pytest.mark.parametrize("pipeline", stage_deps.PIPELINES)
def test_every_stage_lists_exactly_the_code_its_command_imports(pipeline):
    _, stages = stage_deps.plan(ROOT / pipeline)
    stale = {name: (w, d) for name, (w, d) in stages.items() if w != d}
    assert not stale, f"{pipeline}: run `python scripts/stage_deps.py --write`; stale stages: {sorted(stale)}"


def test_a_stage_missing_one_module_of_its_closure_is_reported(tmp_path):
    text = (ROOT / "dvc.yaml").read_text()
    planted = tmp_path / "dvc.yaml"
    planted.write_text(text.replace("      - star/evaluation/rewards.py\n", "", 1))
    _, stages = stage_deps.plan(planted)
    stale = [name for name, (w, d) in stages.items() if w != d]
    assert len(stale) == 1
    written, derived = stages[stale[0]]
    assert set(derived) - set(written) == {"star/evaluation/rewards.py"}


def test_every_stage_that_scores_a_reward_depends_on_the_rewards():
    deps = _derived()
    for stage in ("grpo", "eval_agent", "compare"):
        assert _covers(deps[stage], "star/evaluation/rewards.py"), stage


def test_the_tool_observations_text_reruns_teacher_grpo_and_evaluate():
    deps = _derived()
    for stage in ("teacher", "grpo", "eval_agent"):
        assert _covers(deps[stage], "star/sandbox/tools.py"), stage
        assert _covers(deps[stage], "star/sandbox/render.py"), stage


def test_the_ablation_report_reruns_no_training_stage():
    deps = {**_derived(), **_derived("learn/dvc.yaml")}
    for stage in ("build_model", "sft", "grpo", "learn_sft", "learn_grpo"):
        assert not _covers(deps[stage], "star/report/build.py"), stage


def test_function_local_and_string_named_imports_are_followed():
    # star/config.py loads each section's config model from a "star.x.config:Class" string
    found = stage_deps.imported_modules(ROOT / "star" / "config.py")
    assert "star.training.config" in found and "star.qa.config" in found


def test_a_command_that_is_not_a_star_subcommand_is_a_clear_error():
    with pytest.raises(SystemExit, match="not a star subcommand"):
        stage_deps.command_module("python -m star.orchestration.stage_run x -- star no-such-thing --out y")


def test_sft_does_not_rerun_when_a_reward_changes():
    deps = {**_derived(), **_derived("learn/dvc.yaml")}
    for stage in ("build_model", "sft", "learn_sft"):
        assert not _covers(deps[stage], "star/evaluation/rewards.py"), stage


def test_the_stage_table_in_the_docs_is_todays():
    assert (ROOT / "docs" / "stages.md").read_text() == stage_deps.stage_table()


@pytest.mark.parametrize("pipeline", stage_deps.PIPELINES)
def test_a_stage_is_one_hop_from_its_subcommand_and_module(pipeline):
    """Stage NAME runs `star NAME` (dashes for underscores) from star/<package>/cli_NAME.py; the learn pipeline's
    stages are `learn_` + the same rule, its steps (`star learn STEP`) in star/qa/cli_learn.py."""
    doc = stage_deps._yaml().load((ROOT / pipeline).read_text())
    for name, stage in doc["stages"].items():
        cmd = str((stage.get("do") or stage)["cmd"])
        words = stage_deps.command_words(cmd)
        module = stage_deps.command_module(cmd)
        base = name.split("@")[0].removeprefix("learn_") if pipeline.startswith("learn") else name.split("@")[0]
        if words[1] == "learn":
            assert base.split("_")[0] == words[2] and module == "star.qa.cli_learn", name
        else:
            assert base == words[1].replace("-", "_"), f"stage {name} runs `star {words[1]}`"
            assert module.rsplit(".", 1)[1] == f"cli_{base}", f"stage {name} runs {module}"


def test_every_subcommand_lives_in_the_module_named_after_it():
    from star.cli import COMMANDS

    for name, (module, _) in COMMANDS.items():
        assert module.rsplit(".", 1)[1] == "cli_" + name.replace("-", "_"), f"star {name} lives in {module}"


def test_every_stage_that_runs_episodes_opens_them_with_the_one_sandbox_prompt():
    import yaml

    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    for name in ("teacher", "grpo", "eval_agent"):
        stage = stages[name].get("do", stages[name])
        assert "sandbox.prompt" in stage["params"], name  # a prompt change reruns the stage
        assert "prompt ${sandbox.prompt}" in stage["cmd"] or "prompt=${sandbox.prompt}" in stage["cmd"], name


def test_training_and_evaluation_stages_take_the_compute_limit_and_nothing_else_does():
    from star.orchestration.stages import stage_meta

    heavy = sorted(name for name, meta in stage_meta(ROOT).items() if meta.get("compute"))
    assert heavy == ["eval_agent@base", "eval_agent@rl", "eval_agent@sft", "grpo", "sft"]
