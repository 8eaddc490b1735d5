"""Runs the real-engine checks (test_vllm_engine.py) in a pytest process of their own: an in-process vLLM engine
takes over torch.distributed's default group, which later trainers in a shared process cannot use."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from star.rollout.backends.select import vllm_available

CHECKS = Path(__file__).with_name("test_vllm_engine.py")


@pytest.mark.vllm
@pytest.mark.skipif(not vllm_available(), reason="vLLM is not installed (STAR_VLLM=1 bash scripts/setup.sh)")
def test_every_real_vllm_engine_check_passes_in_its_own_process():
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", str(CHECKS)],
                          env={**os.environ, "STAR_VLLM_PROCESS": "1"}, capture_output=True, text=True, timeout=1800,
                          cwd=CHECKS.parents[2])
    tail = proc.stdout[-6000:] + proc.stderr[-2000:]
    print(tail)
    assert proc.returncode == 0, tail
    counts = dict((k, int(n)) for n, k in re.findall(r"(\d+) (passed|failed|skipped|error)", proc.stdout))
    n_checks = len(re.findall(r"^def test_", CHECKS.read_text(), re.M))
    assert counts.get("passed") == n_checks and not counts.get("skipped"), tail
