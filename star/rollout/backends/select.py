"""Which generation backend a run uses: `auto` picks vLLM where it is installed, else transformers."""

from __future__ import annotations

import logging

from star.rollout.backends.vllm import VLLMBackend
from star.rollout.config import BackendName, VLLMConfig

log = logging.getLogger(__name__)


def vllm_available() -> bool:
    """vLLM importable here (its CPU build or the GPU wheel)? Found without importing it (seconds)."""
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def resolve_backend(name: BackendName) -> str:
    """`transformers` or `vllm`; asking for vllm where it is not installed says how to install it."""
    if name == "auto":
        chosen = "vllm" if vllm_available() else "transformers"
        log.info("rollout backend auto: %s", chosen)
        return chosen
    if name == "vllm" and not vllm_available():
        raise ImportError("rollout backend 'vllm' asked for, but vLLM is not installed: on a CPU machine run "
                          "`STAR_VLLM=1 bash scripts/setup.sh`, on a GPU node `bash scripts/setup_gpu.sh` "
                          "(or set the backend to auto/transformers)")
    return name


def load_backend(name: BackendName, model_dir, *, max_batch: int, max_model_len: int, seed: int = 0, vllm=None,
                 device: str | None = None):
    """A backend on a saved model directory, for evaluation (training builds its own beside the trainer)."""
    if resolve_backend(name) == "vllm":
        return VLLMBackend.from_config(str(model_dir), vllm or VLLMConfig(), max_model_len=max_model_len, seed=seed,
                                       max_batch=max_batch)
    from star.rollout.backends.transformers import TransformersBackend  # lazy: pulls torch

    return TransformersBackend.from_pretrained(str(model_dir), device=device, max_batch=max_batch)
