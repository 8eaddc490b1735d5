"""dvc.yaml as the one place of stage commands: rendering, dependency order, shared upstream work."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import yaml

from star.config import PROJECT_DIR, resolve
from star.tracking.stages import StageError, VariantRunner, load_stages, needed_stages, render, run_variant

PIPELINE = ["sandbox", "synthesize", "validate", "split", "teacher", "sft_data", "sft", "grpo", "evaluate"]


def test_dvc_yaml_has_every_stage_of_the_design_in_dependency_order():
    names = [s.name for s in load_stages(resolve("smoke").values)]
    for stage in PIPELINE:
        assert any(n == stage or n.startswith(stage + "@") for n in names), stage
    pos = {n: i for i, n in enumerate(names)}
    for a, b in [("sandbox", "synthesize"), ("synthesize", "validate"), ("validate", "split"), ("split", "teacher"),
                 ("teacher", "sft_data"), ("sft_data", "sft"), ("sft", "grpo"), ("grpo", "evaluate@rl")]:
        assert pos[a] < pos[b]


def test_commands_carry_the_resolved_values():
    stages = {s.name: s for s in load_stages(resolve("smoke", "reward", "reward=macro").values)}
    assert "--config params.yaml" in stages["grpo"].cmd and stages["grpo"].param_values["rl"]["reward"] == "macro"
    assert "--n 60" in stages["synthesize"].cmd and "--model models/rl/selected" in stages["evaluate@rl"].cmd
    assert "--limit 8" in stages["evaluate@base"].cmd
    assert stages["grpo"].cmd.startswith(sys.executable)


def test_ood_evaluation_follows_the_selected_rl_model_and_reads_the_qa_section():
    stages = {s.name: s for s in load_stages(resolve("smoke").values)}
    names = list(stages)
    assert names.index("qa_data") < names.index("qa_index") < names.index("evaluate_ood")
    assert names.index("grpo") < names.index("evaluate_ood")
    ood = stages["evaluate_ood"]
    assert "--model models/rl/selected" in ood.cmd and "--corpus data/qa/index" in ood.cmd
    assert "--limit 4" in ood.cmd and "--max-turns 3" in ood.cmd  # smoke profile's qa overrides
    assert "models/rl/selected" in ood.deps and "data/qa/index" in ood.deps


def test_only_grpo_and_its_evaluations_read_rl_parameters():
    """What makes `dvc repro` after an rl.* change re-run only grpo and the RL model's evaluations."""
    doc = yaml.safe_load((PROJECT_DIR / "dvc.yaml").read_text())
    readers = [name for name, spec in doc["stages"].items()
               if any(str(p if isinstance(p, str) else next(iter(p))).split(".")[0] == "rl"
                      for p in (spec.get("params") or spec.get("do", {}).get("params") or []))]
    assert readers == ["grpo"]
    stages = load_stages(resolve("smoke").values)
    downstream = {"grpo"}
    for s in stages:
        if any(d.startswith("models/rl") for d in s.deps):
            downstream.add(s.name)
    assert downstream == {"grpo", "evaluate@rl", "evaluate_ood"}


def test_render_is_dvc_style_and_names_missing_keys():
    assert render("--x ${a.b} --flag ${c}", {"a": {"b": 1e-06}, "c": True}) == "--x 1e-06 --flag true"
    with pytest.raises(StageError, match=r"\$\{a.zz\}"):
        render("${a.zz}", {"a": {}}, "dvc.yaml stage x")


def test_dvc_parses_the_pipeline():
    proc = subprocess.run([str(PROJECT_DIR / ".venv/bin/dvc"), "stage", "list"], cwd=PROJECT_DIR,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "evaluate@rl" in proc.stdout and "grpo" in proc.stdout


TOY = textwrap.dedent("""
    stages:
      make:
        cmd: ${py} -c "import pathlib,sys; pathlib.Path('data').mkdir(exist_ok=True); pathlib.Path('data/x.txt').write_text('${a.n}')"
        params: [a]
        outs: [data]
      use:
        cmd: ${py} -c "import pathlib; pathlib.Path('out.txt').write_text(pathlib.Path('data/x.txt').read_text() + '-${b.k}')"
        deps: [data/x.txt]
        params: [b]
        outs: [out.txt]
      broken:
        cmd: ${py} -c "raise SystemExit(4)"
        outs: [never.txt]
""")


def test_variants_share_upstream_outputs_and_recompute_only_what_differs(tmp_path, monkeypatch):
    dvc_yaml = tmp_path / "dvc.yaml"
    dvc_yaml.write_text(TOY)
    cache = tmp_path / "cache"

    def runner(n, k, name):
        return VariantRunner({"a": {"n": n}, "b": {"k": k}}, tmp_path / name, cache, dvc_yaml, version="v1")

    r1 = runner(1, "x", "v1")
    assert needed_stages(r1, ["use"]) == ["make", "use"]
    first = [r1.run(s, log=lambda _: None) for s in ("make", "use")]
    assert [r.cached for r in first] == [False, False]
    assert (tmp_path / "v1/out.txt").read_text() == "1-x"
    assert (tmp_path / "v1/out.txt").is_symlink()

    r2 = runner(1, "y", "v2")  # same upstream parameter: `make` is shared, `use` differs
    second = [r2.run(s, log=lambda _: None) for s in ("make", "use")]
    assert [r.cached for r in second] == [True, False]
    assert second[0].path == first[0].path
    assert (tmp_path / "v2/out.txt").read_text() == "1-y"

    r3 = runner(2, "x", "v3")  # upstream changed: the key of the downstream stage changes too
    third = [r3.run(s, log=lambda _: None) for s in ("make", "use")]
    assert [r.cached for r in third] == [False, False] and third[1].key != first[1].key
    assert (tmp_path / "v3/out.txt").read_text() == "2-x"

    with pytest.raises(StageError, match="stage broken failed with exit status 4"):
        r3.run("broken", log=lambda _: None)
    assert not list((cache / "broken").glob("*/"))  # nothing half-written left as a result
    with pytest.raises(StageError, match="run \\['make'\\] first"):
        runner(5, "z", "v4").run("use", log=lambda _: None)


def test_run_variant_runs_what_the_named_stage_needs(tmp_path):
    dvc_yaml = tmp_path / "dvc.yaml"
    dvc_yaml.write_text(TOY)
    from star.tracking import stages as st

    runner = VariantRunner({"a": {"n": 7}, "b": {"k": "q"}}, tmp_path / "w", tmp_path / "c", dvc_yaml, version="v")
    for name in needed_stages(runner, ["use"]):
        runner.run(name, log=lambda _: None)
    assert (tmp_path / "w/out.txt").read_text() == "7-q"
    with pytest.raises(StageError, match="unknown stages"):
        needed_stages(runner, ["nope"])
    assert callable(st.run_variant) and run_variant is st.run_variant


def test_variants_render_identical_upstream_commands_wherever_their_workspace_is(tmp_path):
    a = VariantRunner(resolve("smoke", "reward", "reward=sum").to_params(), tmp_path / "a", tmp_path / "c", version="v")
    b = VariantRunner(resolve("smoke", "reward", "reward=macro").to_params(), tmp_path / "b", tmp_path / "c", version="v")
    from star.tracking.stages import stage_key

    same = [s.name for s in a.stages if stage_key(s, {}, "v") == stage_key(b.stage(s.name), {}, "v")]
    assert set(same) == {s.name for s in a.stages} - {"grpo"}  # evaluate@rl differs through grpo's key
