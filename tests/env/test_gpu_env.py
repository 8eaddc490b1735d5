"""The GPU environment resolves (linux x86_64, Python 3.12) to a current vLLM with the torch it pins.

Resolution only (no install): `uv pip compile` against the registry, ~30 s. The resolved releases are then
resolved again together *without* the overrides, so vLLM's own pins (not a copy of them) must accept them. Skips only when the registry cannot be reached.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
OVERRIDES = ROOT / "requirements" / "gpu-overrides.txt"
PLATFORM = ["--python-version", "3.12", "--python-platform", "x86_64-manylinux_2_28"]
_OFFLINE = re.compile(r"(dns error|failed to connect|connection refused|network is unreachable|timed out|"
                      r"could not connect|failed to fetch)", re.I)


def _uv() -> list[str]:
    if shutil.which("uv"):
        return ["uv"]
    probe = subprocess.run([sys.executable, "-m", "uv", "--version"], capture_output=True)
    if probe.returncode == 0:
        return [sys.executable, "-m", "uv"]
    pytest.fail("uv is needed to resolve the GPU environment (scripts/setup.sh installs it)")


def _compile(*extra: str) -> subprocess.CompletedProcess:
    cmd = [*_uv(), "pip", "compile", str(ROOT / "pyproject.toml"), "--extra", "gpu", *PLATFORM,
           "--no-header", "--quiet", *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    if proc.returncode != 0 and _OFFLINE.search(proc.stderr):
        pytest.skip(f"package registry unreachable: {proc.stderr.strip().splitlines()[-1]}")
    return proc


def _pins(text: str) -> dict[str, str]:
    return {m.group(1).lower(): m.group(2) for m in re.finditer(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)", text, re.M)}


def _joint(pins: dict[str, str], names: tuple[str, ...]) -> subprocess.CompletedProcess:
    """Resolve exactly these releases together, no overrides: succeeds only if each one's own
    requirements accept the others (an override would also silence vLLM's own torch pin)."""
    wanted = "".join(f"{n}=={pins[n]}\n" for n in names)
    proc = subprocess.run([*_uv(), "pip", "compile", "-", *PLATFORM, "--no-header", "--quiet"], input=wanted,
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    if proc.returncode != 0 and _OFFLINE.search(proc.stderr):
        pytest.skip(f"package registry unreachable: {proc.stderr.strip().splitlines()[-1]}")
    return proc


@pytest.fixture(scope="module")
def gpu_pins() -> dict[str, str]:
    proc = _compile("--override", str(OVERRIDES))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return _pins(proc.stdout)


def test_gpu_environment_resolves_to_current_vllm_with_its_torch(gpu_pins):
    vllm = Version(gpu_pins["vllm"])
    assert vllm >= Version("0.33"), f"resolver picked vllm {vllm}"
    assert Version(gpu_pins["torch"]) >= Version("2.14")
    # vLLM's own requirements (not our overrides) accept the torch, transformers and fastapi we resolved,
    # and DeepSpeed's accept that torch.
    proc = _joint(gpu_pins, ("vllm", "torch", "transformers", "fastapi", "deepspeed"))
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_gpu_environment_keeps_the_training_and_orchestration_stack(gpu_pins):
    # DeepSpeed is the same release as on CPU (it builds its ops against whichever torch is installed),
    # Prefect drops to 3.7 for vLLM's fastapi, MLflow and DVC keep the CPU pins.
    assert gpu_pins["deepspeed"] == "0.19.8"
    assert Version("3.4") <= Version(gpu_pins["prefect"]) < Version("3.8")
    assert gpu_pins["mlflow"].startswith("3.17.") and gpu_pins["dvc"].startswith("3.67.")
    assert Version(gpu_pins["transformers"]) < Version("5.21")


def test_without_the_overrides_the_gpu_extra_fails_loudly_instead_of_backtracking():
    # The CPU pins and vLLM >= 0.33 cannot meet: an error naming torch, never a 2023 vllm 0.1.2.
    proc = _compile()
    assert proc.returncode != 0, f"resolved without overrides: {_pins(proc.stdout).get('vllm')}"
    assert "torch" in proc.stderr and "vllm" in proc.stderr


def test_the_committed_lock_holds_the_overrides_and_a_current_vllm():
    # requirements/gpu.lock is the exact install for GPU nodes (regenerate with the command in its header).
    lock = _pins((ROOT / "requirements" / "gpu.lock").read_text())
    assert Version(lock["vllm"]) >= Version("0.33")
    for line in OVERRIDES.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, spec = re.match(r"([A-Za-z0-9_.\-]+)(.*)", line).groups()
            assert Version(lock[name.lower()]) in SpecifierSet(spec), f"lock has {name}=={lock[name.lower()]}, wants {spec}"
