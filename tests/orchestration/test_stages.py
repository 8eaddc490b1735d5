"""dvc.yaml is the one list of stages; DVC runs them, in one git worktree per variant sharing one cache."""

from __future__ import annotations

import json
import subprocess
import textwrap

import pytest
import yaml

from star.config import profiles, resolve
from star.params_io import PROJECT_DIR, write_yaml
from star.orchestration.stages import StageError, Workspace, dvc_bin, needed_stages, stage_order

PIPELINE = ["sandbox", "synthesize", "validate", "split", "teacher", "sft_data", "sft", "grpo", "eval_agent"]


def test_dvc_yaml_has_every_stage_of_the_design_in_dependency_order():
    names = stage_order(PROJECT_DIR)
    for stage in PIPELINE:
        assert any(n == stage or n.startswith(stage + "@") for n in names), stage
    pos = {n: i for i, n in enumerate(names)}
    for a, b in [("sandbox", "synthesize"), ("synthesize", "validate"), ("validate", "split"), ("split", "teacher"),
                 ("teacher", "sft_data"), ("sft_data", "sft"), ("sft", "grpo"), ("grpo", "eval_agent@rl"),
                 ("qa_data", "qa_index"), ("qa_index", "eval_qa"), ("grpo", "eval_qa")]:
        assert pos[a] < pos[b], (a, b)


def test_every_dvc_stage_has_a_prefect_task_and_training_is_not_retried():
    from tasks.stages import retries, stage_tasks, task_for

    tasks = stage_tasks()
    assert list(tasks) == stage_order(PROJECT_DIR)  # derived from dvc.yaml: a new stage needs no second edit
    for name in stage_order(PROJECT_DIR):
        assert task_for(name).name == name
    with pytest.raises(KeyError, match="no stage 'nope'"):
        task_for("nope")
    assert retries("sft", 2) == retries("grpo", 2) == 0
    assert retries("teacher", 2) == 2 and retries("eval_agent@rl", 1) == 1


def test_the_rl_model_needs_its_upstream_but_not_the_other_evaluations():
    need = needed_stages(PROJECT_DIR, ["eval_agent@rl"])
    assert need[-1] == "eval_agent@rl" and {"sandbox", "teacher", "sft", "grpo"} <= set(need)
    assert "eval_agent@base" not in need and "qa_index" not in need
    assert {"eval_agent@base", "eval_agent@sft", "eval_agent@rl"} <= set(needed_stages(PROJECT_DIR, ["eval_agent"]))
    with pytest.raises(StageError, match="unknown stages"):
        needed_stages(PROJECT_DIR, ["nope"])


def test_only_grpo_and_what_follows_it_read_rl_parameters():
    """What makes `dvc repro` after an rl.* change re-run only grpo and the RL model's evaluations."""
    doc = yaml.safe_load((PROJECT_DIR / "dvc.yaml").read_text())
    readers = [name for name, spec in doc["stages"].items()
               if any(str(p if isinstance(p, str) else next(iter(p))).split(".")[0] == "rl"
                      for p in (spec.get("params") or spec.get("do", {}).get("params") or []))]
    # compare reads rl.reward only to head its table with the trained reward; it runs after grpo anyway
    assert readers == ["grpo", "compare"]
    order = stage_order(PROJECT_DIR)
    downstream = [n for n in order if "grpo" in needed_stages(PROJECT_DIR, [n])]
    assert downstream == ["grpo", "eval_agent@rl", "compare", "eval_qa"]


def test_dvc_parses_the_pipeline():
    proc = subprocess.run([dvc_bin(), "stage", "list"], cwd=PROJECT_DIR, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "eval_agent@rl" in proc.stdout and "grpo" in proc.stdout


@pytest.mark.parametrize("profile", profiles())
def test_dvc_parses_both_pipelines_under_every_profile(profile, tmp_path):
    """A stage command that names a key some profile's params.yaml lacks breaks `dvc repro` at its first
    parse (learn/dvc.yaml once read model.smoke.*, which only the old learn profile set)."""
    (tmp_path / "learn").mkdir()
    for name in ("dvc.yaml", "learn/dvc.yaml"):
        (tmp_path / name).write_text((PROJECT_DIR / name).read_text())
    write_yaml(tmp_path / "params.yaml", resolve(profile).to_params())
    subprocess.run([dvc_bin(), "init", "-q", "--no-scm"], cwd=tmp_path, check=True, capture_output=True)
    for pipeline in ("dvc.yaml", "learn/dvc.yaml"):
        proc = subprocess.run([dvc_bin(), "stage", "list", "--name-only", "-R", pipeline], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"{profile}: {pipeline}: {proc.stderr}"
        assert ("learn_build_model@learn" in proc.stdout) == (pipeline == "learn/dvc.yaml" and profile == "learn")


TOY = textwrap.dedent("""
    stages:
      make:
        cmd: python3 -c "import pathlib; pathlib.Path('data').mkdir(exist_ok=True); pathlib.Path('data/x.txt').write_text('${a.n}')"
        params: [a]
        outs: [data]
      use:
        cmd: python3 -c "import json,pathlib,sys; k='${b.k}'; sys.exit('the use stage refuses k=' + k) if k == 'fail' else None; pathlib.Path('out.txt').write_text(pathlib.Path('data/x.txt').read_text() + '-' + k); pathlib.Path('m.json').write_text(json.dumps(dict(score=len(k))))"
        deps: [data/x.txt]
        params: [b]
        outs: [out.txt]
        metrics: [m.json]
""")



@pytest.fixture
def toy_project(tmp_path):
    """A git + DVC project with the toy pipeline committed (what a clone of ours looks like)."""
    root = tmp_path / "project"
    root.mkdir()
    run = lambda *cmd: subprocess.run(cmd, cwd=root, check=True, capture_output=True, text=True)  # noqa: E731
    run("git", "init", "-q")
    run(dvc_bin(), "init", "-q")
    (root / "dvc.yaml").write_text(TOY)
    (root / "params.yaml").write_text("a: {n: 1}\nb: {k: x}\n")
    (root / ".gitignore").write_text("/runs/\n")
    run("git", "add", "-A")
    run("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "toy")
    return root


def test_variants_run_through_dvc_share_its_run_cache_and_become_experiments(toy_project):
    root = toy_project
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True).stdout.strip()

    def workspace(name, n, k):
        return Workspace(root / "runs" / name, root).prepare({"a": {"n": n}, "b": {"k": k}}, commit)

    quiet = lambda _: None  # noqa: E731
    w1 = workspace("v1", 1, "x")
    assert [w1.repro(s, quiet).status for s in ("make", "use")] == ["ran", "ran"]
    assert (w1.path / "out.txt").read_text() == "1-x"

    w2 = workspace("v2", 1, "yy")  # same upstream params: DVC restores `make` from the shared run-cache
    assert [w2.repro(s, quiet).status for s in ("make", "use")] == ["restored", "ran"]
    assert (w2.path / "out.txt").read_text() == "1-yy"
    assert w2.repro("use", quiet).status == "unchanged"
    w2.save_experiment("v2", ["make", "use"])
    w1.save_experiment("v1", ["make", "use"])

    shown = subprocess.run([dvc_bin(), "exp", "show", "--json"], cwd=root, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    exps = {e["name"]: e for base in json.loads(shown.stdout) for e in (base.get("experiments") or [])}
    assert set(exps) == {"v1", "v2"}
    metrics = {name: e["revs"][0]["data"]["metrics"]["m.json"]["data"]["score"] for name, e in exps.items()}
    assert metrics == {"v1": 1, "v2": 2}

    applied = subprocess.run([dvc_bin(), "exp", "apply", "v2"], cwd=root, capture_output=True, text=True)
    assert applied.returncode == 0, applied.stderr
    assert (root / "out.txt").read_text() == "1-yy"  # outputs come back from the shared cache

    w3 = workspace("v3", 2, "x")  # upstream changed: both stages run
    assert [w3.repro(s, quiet).status for s in ("make", "use")] == ["ran", "ran"]
    w3 = workspace("v3", 2, "fail")
    with pytest.raises(StageError) as failed:
        w3.repro("use", quiet)
    # the first line says which stage and why (what the flow's last log line and the report show)
    assert str(failed.value).splitlines()[0] == "stage use failed: the use stage refuses k=fail"
    assert (w3.path / "data/x.txt").read_text() == "2"  # the failure loses nothing upstream

    w1_again = workspace("v1", 1, "x")  # an existing workspace is reused at the commit
    assert w1_again.repro("use", quiet).status == "unchanged"


def test_the_reason_of_a_failed_repro_is_the_stages_own_last_line():
    from star.orchestration.stages import failure_reason

    out = ("Running stage 'split':\n> .venv/bin/python -m star.orchestration.stage_run split -- star split …\n"
           "Traceback (most recent call last):\n  File \"x.py\", line 3, in <module>\n"
           "ValueError: rl_size 100000 exceeds the 41 validated queries\n"
           "ERROR: failed to reproduce 'split': failed to run: .venv/bin/python …, exited with 1\n")
    assert failure_reason(out) == "ValueError: rl_size 100000 exceeds the 41 validated queries"
    assert failure_reason("ERROR: failed to reproduce 'x': no such file\n") == "ERROR: failed to reproduce 'x': no such file"


def test_workspace_imports_its_own_checkout(toy_project):
    ws = Workspace(toy_project / "runs" / "w", toy_project)
    env = ws._env()
    assert env["PYTHONPATH"].split(":")[0] == str(ws.path)
