"""A stand-in `vllm` module with exactly vllm 0.33.0's signatures (tests/fixtures/vllm_api.json, drawn
from the wheel), driven by a real transformers model: every call our backend makes is bound against
the pinned signature (an unknown or renamed argument raises TypeError), engine keyword arguments
must be EngineArgs fields, Literal options must be ones 0.33 accepts, and outputs carry only the
fields 0.33's CompletionOutput has. Generation itself is the transformers backend (same sampler,
seeds and log-probs), so results can be compared with it token for token.
"""

from __future__ import annotations

import ast
import inspect
import json
import sys
import types
from pathlib import Path

API = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "vllm_api.json").read_text())


def signature(name: str) -> inspect.Signature:
    params = []
    for p in API["methods"][name]:
        default = inspect.Parameter.empty if p["default"] is None else p["default"]
        params.append(inspect.Parameter(p["name"], getattr(inspect.Parameter, p["kind"]), default=default))
    return inspect.Signature(params)


def _fields_only(cls_name: str, values: dict) -> None:
    unknown = set(values) - set(API["fields"][cls_name])
    if unknown:
        raise TypeError(f"{cls_name} has no field(s) {sorted(unknown)} in vllm {API['vllm_version']}")


class SamplingParams:
    def __init__(self, **kwargs):  # a msgspec Struct: keyword fields only
        _fields_only("SamplingParams", kwargs)
        self.__dict__.update(kwargs)

    def __getattr__(self, name):
        if name in API["fields"]["SamplingParams"]:
            default = API["fields"]["SamplingParams"][name]
            try:  # the fixture keeps defaults as source text; literals only, never evaluated code
                return None if default is None else ast.literal_eval(default)
            except ValueError:
                return default
        raise AttributeError(name)


def TokensPrompt(**kwargs) -> dict:  # a TypedDict
    _fields_only("TokensPrompt", kwargs)
    if "prompt_token_ids" not in kwargs:
        raise TypeError("TokensPrompt needs prompt_token_ids")
    return dict(kwargs)


class Logprob:
    def __init__(self, logprob: float, rank: int | None = None, decoded_token: str | None = None):
        self.logprob, self.rank, self.decoded_token = logprob, rank, decoded_token


class CompletionOutput:
    __slots__ = tuple(API["fields"]["CompletionOutput"])

    def __init__(self, **kwargs):
        _fields_only("CompletionOutput", kwargs)
        for name in self.__slots__:
            setattr(self, name, kwargs.get(name))


class RequestOutput:
    def __init__(self, *args, **kwargs):
        bound = signature("RequestOutput.__init__").bind(self, *args, **kwargs)
        self.outputs = bound.arguments["outputs"]
        self.prompt_token_ids = bound.arguments["prompt_token_ids"]


class _Model:
    """What apply_model hands over: the worker's nn.Module with vLLM's `load_weights(weights)`."""

    def __init__(self, hf_model, engine):
        self.hf_model, self.engine = hf_model, engine

    def load_weights(self, weights):
        if "weights" in self.engine.asleep:
            raise RuntimeError("load_weights while the weights are asleep (wake_up(tags=['weights']) first)")
        import torch

        params = dict(self.hf_model.named_parameters(remove_duplicate=False))  # tied lm_head too
        loaded = set()
        with torch.no_grad():
            for name, tensor in weights:
                if name not in params:
                    raise KeyError(f"no parameter {name}")
                params[name].copy_(tensor)
                loaded.add(name)
        return loaded


class LLM:
    def __init__(self, *args, **kwargs):
        from star.rollout.backends.transformers import TransformersBackend

        bound = signature("LLM.__init__").bind(self, *args, **kwargs)
        named = {k: v for k, v in bound.arguments.items() if k not in ("self", "kwargs")}
        engine_kwargs = bound.arguments.get("kwargs", {})
        _fields_only("EngineArgs", engine_kwargs)
        for key, alias in (("logprobs_mode", "LogprobsMode"), ("distributed_executor_backend",
                                                               "DistributedExecutorBackend")):
            if key in engine_kwargs and engine_kwargs[key] not in API["literals"][alias]:
                raise ValueError(f"{key}={engine_kwargs[key]!r} not in {API['literals'][alias]}")
        self.engine_args = {**named, **engine_kwargs}
        self.calls: list[tuple[str, dict]] = []
        self._hf = TransformersBackend.from_pretrained(named["model"], device="cpu", prefix_cache=0)
        self.asleep: set[str] = set()

    def _record(self, name, args, kwargs):
        bound = signature(f"LLM.{name}").bind(self, *args, **kwargs)
        bound.apply_defaults()
        args = {k: v for k, v in bound.arguments.items() if k != "self"}
        self.calls.append((name, args))
        return args

    def get_tokenizer(self, *args, **kwargs):
        self._record("get_tokenizer", args, kwargs)
        return self._hf.tokenizer

    def generate(self, *args, **kwargs):
        from star.rollout.base import SamplingParams as Ours

        a = self._record("generate", args, kwargs)
        if self.asleep:
            raise RuntimeError("generate on a sleeping engine")
        prompts, sps = a["prompts"], a["sampling_params"]
        sps = sps if isinstance(sps, list) else [sps] * len(prompts)
        ours = [Ours(temperature=sp.temperature, top_p=sp.top_p, max_new_tokens=sp.max_tokens, seed=sp.seed,
                     stop=tuple(sp.stop or ())) for sp in sps]
        gens = self._hf.generate([p["prompt_token_ids"] for p in prompts], ours)
        out = []
        for i, (p, sp, g) in enumerate(zip(prompts, sps, gens)):
            lps = None if sp.logprobs is None else [{t: Logprob(lp, rank=1)} for t, lp in zip(g.token_ids, g.logprobs)]
            c = CompletionOutput(index=0, text=g.text or "", token_ids=list(g.token_ids), cumulative_logprob=None,
                                 logprobs=lps, finish_reason="length" if g.finish_reason == "length" else "stop")
            out.append(RequestOutput(str(i), None, p["prompt_token_ids"], None, [c], True))
        return out

    def apply_model(self, *args, **kwargs):
        a = self._record("apply_model", args, kwargs)
        result = [a["func"](_Model(self._hf.model, self))]
        self._hf._prefix.clear()
        return result

    def collective_rpc(self, *args, **kwargs):
        """The worker methods the backend calls: `reload_weights` (vLLM's in-place reload, GPU worker API)."""
        a = self._record("collective_rpc", args, kwargs)
        if a["method"] != "reload_weights":
            raise AttributeError(f"the stand-in worker has no method {a['method']!r}")
        args = a["args"] if isinstance(a["args"], (tuple, list)) else ()  # unset: the fixture's default text "()"
        kwargs = a["kwargs"] if isinstance(a["kwargs"], dict) else {}
        call = signature("GPUModelRunner.reload_weights").bind(None, *args, **kwargs)
        call.apply_defaults()
        if not call.arguments["is_checkpoint_format"]:
            raise ValueError("the backend hands HF checkpoint tensors: is_checkpoint_format must be True")
        _Model(self._hf.model, self).load_weights(call.arguments["weights_iterator"])
        self._hf._prefix.clear()
        return [None]

    def reset_prefix_cache(self, *args, **kwargs):
        self._record("reset_prefix_cache", args, kwargs)
        return True

    def sleep(self, *args, **kwargs):
        a = self._record("sleep", args, kwargs)
        if not self.engine_args.get("enable_sleep_mode"):
            raise RuntimeError("sleep mode is not enabled")
        assert a["level"] in (0, 1, 2)
        self.asleep = {"weights", "kv_cache", "scheduling"}

    def wake_up(self, *args, **kwargs):
        a = self._record("wake_up", args, kwargs)
        tags = a["tags"] if a["tags"] is not None else ["weights", "kv_cache", "scheduling"]
        bad = set(tags) - {"weights", "kv_cache", "scheduling"}
        if bad:
            raise ValueError(f"unknown wake_up tags {sorted(bad)}")
        self.asleep -= set(tags)
        return not self.asleep


class CudaPlatform:
    """`vllm.platforms.current_platform` of a GPU node: sleep mode available."""

    device_name = "cuda"

    def is_cpu(self) -> bool:
        return False

    def is_sleep_mode_available(self) -> bool:
        return True


def install(monkeypatch) -> types.ModuleType:
    """Put the stand-in at `vllm` / `vllm.inputs` in sys.modules for one test."""
    vllm = types.ModuleType("vllm")
    vllm.__version__ = API["vllm_version"]
    vllm.LLM, vllm.SamplingParams, vllm.TokensPrompt = LLM, SamplingParams, TokensPrompt
    inputs = types.ModuleType("vllm.inputs")
    inputs.TokensPrompt = TokensPrompt
    vllm.inputs = inputs
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = CudaPlatform()
    vllm.platforms = platforms
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.inputs", inputs)
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    return vllm
