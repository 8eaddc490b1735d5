"""A resumable GRPO checkpoint (`checkpoints/step-N`, DeepSpeed's files) as a model directory by path,
so any step, not only `last/` and `best/`, can be evaluated or trained further.

The weights come from DeepSpeed's own files: ZeRO 1-3 checkpoints hold the fp32 master weights in
their partitioned optimizer states (read with DeepSpeed's zero_to_fp32); a ZeRO-0 checkpoint holds
the full module state. The architecture, tokenizer and chat template come from the model the run
started from.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from star.training.checkpoint import STATE_FILE
from star.training.models import PROFILE_FILE, _save_atomically, load_model, load_tokenizer

MODEL_STATES = "mp_rank_00_model_states.pt"


class ExportError(RuntimeError):
    """The checkpoint cannot be exported; the message says why."""


def checkpoint_state_dict(checkpoint: str | os.PathLike) -> dict:
    """Full weights of one DeepSpeed checkpoint directory (`.../checkpoints/step-N`)."""
    import torch

    checkpoint = Path(checkpoint)
    if not (checkpoint / STATE_FILE).is_file():
        raise ExportError(f"{checkpoint} is not a complete checkpoint (no {STATE_FILE}; an interrupted save?)")
    if any(checkpoint.glob("zero_pp_rank_*_optim_states.pt")):
        from deepspeed.utils.zero_to_fp32 import get_fp32_state_dict_from_zero_checkpoint

        return get_fp32_state_dict_from_zero_checkpoint(str(checkpoint.parent), tag=checkpoint.name)
    path = checkpoint / MODEL_STATES
    if not path.is_file():
        raise ExportError(f"{checkpoint} has neither ZeRO optimizer partitions nor {MODEL_STATES}")
    # DeepSpeed pickles its own metadata beside the tensors, so it loads these files with
    # weights_only=False too; only checkpoints this project wrote are read here.
    return torch.load(path, map_location="cpu", weights_only=False)["module"]


def export_checkpoint(checkpoint: str | os.PathLike, base_model: str | os.PathLike, out: str | os.PathLike) -> Path:
    """Write checkpoint's weights into a copy of base_model (config, tokenizer, template) at out."""
    checkpoint, base_model = Path(checkpoint), Path(base_model)
    state = checkpoint_state_dict(checkpoint)
    model = load_model(base_model)
    missing, unexpected = model.load_state_dict(state, strict=False)
    tied = set(getattr(model, "_tied_weights_keys", None) or [])
    missing = [k for k in missing if k not in tied]
    if missing or unexpected:
        raise ExportError(f"{checkpoint} does not fit {base_model}: missing {missing[:5]}, unexpected {unexpected[:5]}"
                          " (was the run started from that model?)")
    model.tie_weights()
    tokenizer = load_tokenizer(base_model)
    step = json.loads((checkpoint / STATE_FILE).read_text()).get("step")

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if (base_model / PROFILE_FILE).is_file():
            shutil.copy(base_model / PROFILE_FILE, tmp / PROFILE_FILE)
        (tmp / "exported.json").write_text(json.dumps({"checkpoint": str(checkpoint), "step": step}, indent=2) + "\n")

    return _save_atomically(Path(out), write)
