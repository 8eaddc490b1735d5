"""STAR_CUDA_MEMORY_FRACTION: each `star` process's share of a GPU that several processes use at once."""

from __future__ import annotations

import pytest
import torch

from star.cli import cap_cuda_memory, main


@pytest.mark.parametrize("value", ["half", "0", "1.5", "-0.2"])
def test_a_bad_memory_fraction_is_named_before_the_command_runs(monkeypatch, tmp_path, value):
    monkeypatch.setenv("STAR_CUDA_MEMORY_FRACTION", value)
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text('{"step": 1, "reward_mean": 0.5}\n')
    with pytest.raises(SystemExit, match=f"STAR_CUDA_MEMORY_FRACTION={value!r}: expected a fraction"):
        main(["curves", str(metrics), "--out", str(tmp_path / "c.png")])
    assert not (tmp_path / "c.png").exists()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_the_fraction_caps_what_the_process_may_allocate(monkeypatch):
    monkeypatch.setenv("STAR_CUDA_MEMORY_FRACTION", "0.05")
    cap_cuda_memory()
    try:
        total = torch.cuda.get_device_properties(0).total_memory
        with pytest.raises(torch.OutOfMemoryError):
            torch.empty(int(total * 0.06), dtype=torch.uint8, device="cuda")
        torch.empty(int(total * 0.04), dtype=torch.uint8, device="cuda")  # under the cap: fine
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
        torch.cuda.empty_cache()
