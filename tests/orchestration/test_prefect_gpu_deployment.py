"""prefect.yaml's `variant-gpu` deployment: its pull steps are real Prefect steps called with arguments
they accept, and a dry render resolves every placeholder (env vars and earlier steps' outputs)."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _deployment(name: str) -> dict:
    doc = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    return next(d for d in doc["deployments"] if d["name"] == name)


def test_the_gpu_deployment_pulls_a_clone_sets_up_the_gpu_env_and_runs_there(monkeypatch):
    from prefect.utilities.templating import PlaceholderType, apply_values, find_placeholders

    dep = _deployment("variant-gpu")
    assert dep["work_pool"]["name"] == "gpu-pool" and dep["entrypoint"] == "flows/star_flow.py:star"
    monkeypatch.setenv("STAR_REPO_URL", "https://example.invalid/star.git")
    outputs: dict = {}
    names = []
    for step in dep["pull"]:
        (fqn, kwargs), = step.items()
        module, _, func = fqn.rpartition(".")
        fn = getattr(importlib.import_module(module), func)
        kwargs = dict(kwargs)
        step_id = kwargs.pop("id", None)
        for ph in find_placeholders(yaml.safe_dump(kwargs)):
            if ph.type is PlaceholderType.ENV_VAR:
                kwargs = {k: v.replace(ph.full_match, "https://example.invalid/star.git") if isinstance(v, str) else v
                          for k, v in kwargs.items()}
            else:
                assert ph.name.split(".")[0] in outputs, f"{fqn}: {ph.name} is no earlier step's output"
        kwargs = apply_values(kwargs, outputs)
        inspect.signature(fn).bind(**kwargs)  # the step accepts exactly these arguments
        names.append(func)
        if step_id:
            outputs[step_id] = {"directory": "/nodes/star-clone"}  # git_clone returns {"directory": ...}
    assert names == ["git_clone", "run_shell_script", "set_working_directory"]
    setup = dep["pull"][1]["prefect.deployments.steps.run_shell_script"]["script"]
    assert setup == "bash scripts/setup_gpu.sh" and (ROOT / "scripts" / "setup_gpu.sh").is_file()


def test_the_gpu_deployment_takes_the_flows_parameters():
    from flows.star_flow import star

    params = _deployment("variant-gpu")["parameters"]
    inspect.signature(star.fn).bind(**params)
    assert params["profile"].startswith("paper-")
