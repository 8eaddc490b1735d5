"""Params composition: default -> profile -> ablation -> variant -> --set, variant naming, errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from star.ablations import ablations, load_ablation, parse_variant_name, variant_name, variant_slug
from star.config import profiles, resolve
from star.params_io import PARAMS_DIR, PROJECT_DIR, ConfigError, parse_set


def test_default_holds_the_papers_rl_and_sft_defaults():
    cfg = resolve()
    rl, sft = cfg["rl"], cfg["sft"]
    assert (rl.num_generations, rl.batch_queries, rl.epochs, rl.learning_rate) == (8, 32, 5, 2e-6)
    assert (rl.temperature, rl.max_context, rl.tool_call_budget) == (1.0, 30000, 60)
    assert (sft.batch_size, sft.learning_rate, sft.warmup_ratio, sft.epochs) == (32, 5e-6, 0.1, 4)
    assert cfg["split"].rl_size == 1000 and cfg["split"].ratio == "4:3:3"
    assert (cfg["eval"].temperature, cfg["eval"].top_p) == (0.6, 0.95)


def test_profile_overrides_only_what_it_names():
    base, smoke = resolve(), resolve("smoke")
    assert smoke["rl"].batch_queries == 1 and smoke["model"].profile == "smoke"
    assert smoke["rl"].epsilon_high == base["rl"].epsilon_high  # untouched by the profile
    assert smoke.sources["rl.batch_queries"].endswith("profiles/smoke.yaml")
    assert smoke.sources["rl.epsilon_high"].endswith("default.yaml")


def test_paper_profiles_carry_each_scales_recipe():
    assert resolve("paper-1.5b")["sft"].epochs == 6
    assert resolve("paper-1.5b")["rl"].algorithm == "arpo"
    assert resolve("paper-3b")["rl"].reward == "curriculum"
    assert resolve("paper-7b")["rl"].reward == "sum"


def test_ablation_variant_overrides_the_profile_and_set_overrides_everything():
    cfg = resolve("paper-3b", "reward", "reward=macro")
    assert cfg["rl"].reward == "macro" and cfg.variant == "reward=macro"
    assert cfg.name == "paper-3b/reward/reward=macro"
    cfg = resolve("paper-3b", "reward", "reward=macro", parse_set(["rl.reward=success", "rl.learning_rate=1e-6"]))
    assert cfg["rl"].reward == "success" and cfg["rl"].learning_rate == 1e-6


def test_ablation_fixed_settings_apply_to_every_variant():
    for v in load_ablation("data_size").variants():
        cfg = resolve("paper-3b", "data_size", v.name)
        assert cfg["rl"].max_steps == 155 and cfg["rl"].reward == "curriculum"
    assert resolve("paper-3b", "data_size", "data_size=100")["split"].rl_size == 100
    assert resolve("paper-3b", "difficulty", "difficulty=hard")["split"].ratio == "0:0:1"
    assert resolve("paper-3b", "env_failure", "env_failure=10")["rl"].env_failure_rate == 0.10


def test_scale_axis_applies_a_whole_profile():
    cfg = resolve("smoke", "scale", "scale=7b")
    assert cfg["model"].profile == "paper-7b" and cfg["rl"].zero_stage == 3


def test_qa_section_holds_the_papers_setting_and_the_smoke_profile_shrinks_it():
    from star.qa.config import QAConfig

    base, smoke = resolve()["qa"], resolve("smoke")["qa"]
    assert isinstance(smoke, QAConfig)
    assert (base.retrieval.top_k, base.episode.temperature, base.episode.top_p, base.limit) == (5, 0.6, 0.95, None)
    assert (smoke.limit, smoke.episode.max_turns, smoke.builtin.questions) == (2, 3, 40)
    assert resolve("smoke").sources["qa.limit"].endswith("profiles/smoke.yaml")
    assert yaml.safe_load((PROJECT_DIR / "params.yaml").read_text())["qa"]["limit"] == 2


def test_every_section_is_validated_by_its_packages_model():
    assert resolve("smoke").unvalidated == []


def test_every_variant_of_every_ablation_and_grid_resolves():
    for name in ablations():
        for v in load_ablation(name).variants():
            resolve("paper-3b", name, v.name)


def test_grid_is_the_full_factorial_of_its_axes():
    grid = load_ablation("reward_x_algorithm")
    assert grid.factorial and list(grid.axes) == ["reward", "algorithm"]
    names = [v.name for v in grid.variants()]
    assert len(names) == 4 * 3 and len(set(names)) == 12
    assert "reward=curriculum,algorithm=arpo" in names
    cfg = resolve("smoke", grid, "reward=curriculum,algorithm=arpo")
    assert (cfg["rl"].reward, cfg["rl"].algorithm) == ("curriculum", "arpo")
    sub = load_ablation("reward_x_env_failure")
    assert [v.name for v in sub.variants()][:2] == ["reward=sum,env_failure=0", "reward=sum,env_failure=5"]
    assert sub.fixed["rl.reward"] == "macro"  # the env_failure file's fixed setting, overridden per level


def test_variant_names_round_trip_and_make_directory_names():
    levels = {"reward": "sum", "algorithm": "dapo"}
    name = variant_name(levels)
    assert name == "reward=sum,algorithm=dapo"
    assert parse_variant_name(name) == levels
    assert variant_slug(name) == "reward-sum__algorithm-dapo"
    assert variant_name({}) == "default" and parse_variant_name("default") == {}
    with pytest.raises(ConfigError):
        variant_name({"reward": "a/b"})
    with pytest.raises(ConfigError):
        parse_variant_name("reward")


@pytest.mark.parametrize("call, message", [
    (lambda: resolve("nope"), "unknown profile 'nope'"),
    (lambda: resolve("smoke", "nope", "x=y"), "unknown ablation 'nope'"),
    (lambda: resolve("smoke", "reward", "reward=nope"), "has no variant 'reward=nope'"),
    (lambda: resolve("smoke", "reward"), "name a variant"),
    (lambda: resolve(overrides={"rl.learnin_rate": 1}), "rl.learnin_rate"),
    (lambda: resolve(overrides={"nosection.x": 1}), "unknown section 'nosection'"),
    (lambda: resolve(overrides={"rl.num_generations": "many"}), "rl.num_generations"),
    (lambda: resolve(overrides={"model.typo": 1}), "model.typo: Extra inputs are not permitted (set in --set)"),
    (lambda: resolve(overrides={"model.profile": "paper-70b"}), "model.profile"),
    (lambda: parse_set(["rl.lr"]), "expected KEY=VALUE"),
])
def test_bad_parameters_fail_naming_the_problem(call, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        call()


def test_a_bad_key_in_a_params_file_names_that_file(tmp_path):
    import shutil

    shutil.copytree(PARAMS_DIR, tmp_path / "params")
    (tmp_path / "params/profiles/broken.yaml").write_text("rl: {num_generatons: 4}\n")
    with pytest.raises(ConfigError, match="profiles/broken.yaml"):
        resolve("broken", params_dir=tmp_path / "params")
    (tmp_path / "params/profiles/bad_yaml.yaml").write_text("rl: {num_generations: [\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        resolve("bad_yaml", params_dir=tmp_path / "params")


def test_set_values_are_yaml_scalars_never_evaluated():
    assert parse_set(["a.b=1e-6", "a.c=true", "a.d=null", "a.e=__import__('os')"]) == {
        "a.b": 1e-6, "a.c": True, "a.d": None, "a.e": "__import__('os')"}


def test_committed_params_yaml_is_the_smoke_resolution():
    """params.yaml as committed (what a fresh `dvc repro` runs) is derived: it must equal default + smoke.
    The committed version, not the working file: `dvc exp run -S …` rewrites the working one on purpose."""
    import subprocess

    shown = subprocess.run(["git", "show", "HEAD:params.yaml"], cwd=PROJECT_DIR, capture_output=True, text=True)
    text = shown.stdout if shown.returncode == 0 else (PROJECT_DIR / "params.yaml").read_text()  # not a git clone
    assert yaml.safe_load(text) == resolve("smoke").to_params(), \
        "params.yaml is stale: run `python -m star.config resolve --profile smoke --out params.yaml` and commit it"


def test_resolve_cli_writes_atomically(tmp_path):
    from star.config import main

    out = tmp_path / "p.yaml"
    assert main(["resolve", "--profile", "smoke", "--ablation", "reward", "--variant", "reward=macro",
                 "--out", str(out)]) == 0
    data = yaml.safe_load(out.read_text())
    assert data["run"] == {"profile": "smoke", "ablation": "reward", "variant": "reward=macro"}
    assert data["rl"]["reward"] == "macro"
    assert main(["resolve", "--profile", "nope", "--out", str(out)]) == 2
    assert yaml.safe_load(out.read_text()) == data  # the failed call left the file alone
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.yaml"]


def test_digest_is_a_content_address_of_the_chosen_keys():
    a = resolve("smoke", "reward", "reward=sum")
    b = resolve("smoke", "reward", "reward=macro")
    assert a.digest(["synthesis", "split"]) == b.digest(["synthesis", "split"])
    assert a.digest(["rl"]) != b.digest(["rl"])
    assert set(profiles()) >= {"smoke", "cpu", "paper-1.5b", "paper-3b", "paper-7b"}


@pytest.mark.parametrize("profile", profiles())
def test_params_survive_dvcs_own_yaml_writer(tmp_path, profile):
    """`dvc exp run -S` rewrites params.yaml with DVC's writer (quotes and explicit nulls go): every
    profile must read back as the same values, plus the one that was set."""
    from dvc.utils.hydra import apply_overrides

    from star.params_io import load_yaml, write_yaml

    path = write_yaml(tmp_path / "params.yaml", resolve(profile).to_params())
    apply_overrides(str(path), ["rl.learning_rate=0.0002"])
    assert load_yaml(path) == resolve(profile, overrides={"rl.learning_rate": 0.0002}).to_params()


def test_every_ablation_variant_survives_dvcs_yaml_writer(tmp_path):
    from dvc.utils.hydra import apply_overrides

    from star.ablations import ablations, load_ablation
    from star.params_io import load_yaml, write_yaml

    for name in ablations():
        for v in load_ablation(name).variants():
            path = write_yaml(tmp_path / "params.yaml", resolve("smoke", name, v.name).to_params())
            apply_overrides(str(path), ["eval.seed=1"])
            assert load_yaml(path) == resolve("smoke", name, v.name, {"eval.seed": 1}).to_params(), (name, v.name)


def test_a_ratio_that_yaml_turned_into_a_number_is_a_clear_error():
    from star.params_io import ConfigError

    with pytest.raises(ConfigError, match=r"(?s)synthesis.ratio.*base 60.*\[4, 3, 3\]"):
        resolve("smoke", overrides={"synthesis.ratio": 14583})  # what YAML 1.1 makes of an unquoted 4:3:3
    assert resolve("smoke", overrides={"split.ratio": [1, 0, 0]})["split"].ratio == "1:0:0"


def test_a_wrong_type_in_params_yaml_stops_the_stage_with_the_key_named(tmp_path):
    import subprocess
    import sys

    from star.params_io import write_yaml

    values = resolve("smoke").to_params()
    values["rl"]["learning_rate"] = "abc"
    write_yaml(tmp_path / "params.yaml", values)
    proc = subprocess.run([sys.executable, "-m", "star.orchestration.stage_run", "grpo", "--params", "params.yaml",
                           "--sections", "model,rl", "--", "star", "grpo", "--help"], cwd=tmp_path,
                          capture_output=True, text=True, env={**__import__("os").environ,
                                                               "MLFLOW_TRACKING_URI": f"sqlite:///{tmp_path}/m.db"})
    assert proc.returncode == 2
    assert "rl.learning_rate" in proc.stderr and "'abc'" in proc.stderr and "dvc checkout" in proc.stderr


def test_an_ablation_over_some_of_its_levels_keeps_their_variants_and_refuses_unknown_ones():
    from star.ablations import load_ablation
    from star.params_io import ConfigError

    whole = load_ablation("reward")
    part = whole.only(["sum", "success"])
    assert [v.name for v in part.variants()] == ["reward=sum", "reward=success"]
    assert {v.name for v in part.variants()} <= {v.name for v in whole.variants()}
    grid = load_ablation("reward_x_algorithm")
    assert len(grid.only(["sum"]).variants()) == len(grid.axes["algorithm"])  # the other axis keeps every level
    with pytest.raises(ConfigError, match="no level.*'sparse'.*known"):
        whole.only(["sparse"])
