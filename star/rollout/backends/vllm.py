"""vLLM offline engine backend (GPU workers; the `gpu` extra, vLLM 0.33). Token-id prompts in, ids + log-probs out.

Written against vllm 0.33.0's API (the signatures the tests pin are in tests/fixtures/vllm_api.json,
drawn from that wheel by scripts/vllm_api_fixture.py):
- `LLM(model, tokenizer=, dtype=, seed=, gpu_memory_utilization=, tensor_parallel_size=, **EngineArgs)`
  with `logprobs_mode="processed_logprobs"`: the log-prob of a sampled token after temperature/top-p,
  the same quantity the transformers backend returns (vLLM's default is the raw model's).
- `generate([TokensPrompt(prompt_token_ids=...)], [SamplingParams(seed=..., logprobs=0, ...)])`:
  one seed per request; `logprobs=0` returns only the sampled token's log-prob.
- weights in place: `apply_model(fn)` runs `fn(model)` in the worker, and the model's
  `load_weights(weights=[(name, tensor), ...])` copies them; then `reset_prefix_cache()`.
- `sleep(level=1)` / `wake_up(tags=...)` (needs `enable_sleep_mode=True`): a colocated engine hands
  its memory back to the trainer between rollouts.

One engine per training rank, tensor parallel 1, in the trainer's process
(VLLM_ENABLE_V1_MULTIPROCESSING=0: `apply_model`'s function then runs here, with no pickling and the
trainer's tensors passed by reference). Under a multi-rank launcher vLLM joins the launcher's
process group (`distributed_executor_backend="external_launcher"`). vLLM is imported when the
backend is built, never at module import, so the rest of the project runs without it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from star.rollout.base import Generation, GenerationBackend, SamplingParams, per_prompt

WAKE_TAGS = ("weights", "kv_cache", "scheduling")


class VLLMBackend(GenerationBackend):
    def __init__(self, model: str, tokenizer=None, gpu_memory_utilization: float = 0.5, max_model_len: int = 32768,
                 dtype: str = "bfloat16", tensor_parallel_size: int = 1, seed: int = 0, enable_sleep_mode: bool = False,
                 enable_prefix_caching: bool = True, **engine_kwargs):
        # In-process engine core: apply_model's closure runs here (no cloudpickle, no tensor copies).
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        try:
            import vllm
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ImportError("VLLMBackend needs vLLM >= 0.33: on a GPU worker run "
                              "`uv pip install -e '.[gpu]' --override requirements/gpu-overrides.txt`") from exc
        self._vllm = vllm
        kwargs = dict(engine_kwargs)
        if _launched_world() > 1 and tensor_parallel_size == 1:
            # Each training rank owns one engine; vLLM must reuse the launcher's process group
            # instead of starting its own (it would collide on MASTER_PORT).
            kwargs.setdefault("distributed_executor_backend", "external_launcher")
        self.llm = vllm.LLM(model=model, tokenizer=model, dtype=dtype, seed=seed,
                            gpu_memory_utilization=gpu_memory_utilization, tensor_parallel_size=tensor_parallel_size,
                            max_model_len=max_model_len, enable_sleep_mode=enable_sleep_mode,
                            enable_prefix_caching=enable_prefix_caching, logprobs_mode="processed_logprobs", **kwargs)
        self.tokenizer = tokenizer if tokenizer is not None else self.llm.get_tokenizer()
        self._stop_ids = sorted(self.stop_token_ids)
        self.sleep_mode = enable_sleep_mode
        self.asleep: set[str] = set()  # the tags still asleep (empty = fully awake)

    def _sampling(self, p: SamplingParams):
        return self._vllm.SamplingParams(
            temperature=p.temperature, top_p=p.top_p, max_tokens=p.max_new_tokens, seed=p.seed,
            stop=list(p.stop) or None, stop_token_ids=self._stop_ids or None, include_stop_str_in_output=True,
            logprobs=0, skip_special_tokens=False, detokenize=True)

    def generate(self, prompts: Sequence[Sequence[int]],
                 params: SamplingParams | Sequence[SamplingParams]) -> list[Generation]:
        from vllm.inputs import TokensPrompt

        if self.asleep:
            self.wake_up()
        plist = per_prompt(params, len(prompts))
        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=list(p)) for p in prompts],
                                    sampling_params=[self._sampling(p) for p in plist], use_tqdm=False)
        return [_generation(o.outputs[0]) for o in outputs]

    def update_weights(self, state_dict: Mapping | Iterable) -> None:
        """Copy new weights into the running engine (RL step): a state dict, or (name, tensor) pairs
        streamed one group at a time (ZeRO-3 gathers). Wakes the weights first when asleep."""
        if "weights" in self.asleep:
            self.wake_up(["weights"])
        items = state_dict.items() if isinstance(state_dict, Mapping) else state_dict
        # vLLM's load_weights fuses q/k/v and gate/up itself; it takes HF parameter names.
        self.llm.apply_model(lambda model: model.load_weights(weights=iter(items)))
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


def _launched_world() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))
