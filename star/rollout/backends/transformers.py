"""Batched sampling with a transformers causal LM (CPU or GPU), one random stream per sequence.

Our own decode loop over the KV cache instead of `model.generate`, for three reasons: every
sequence samples from its own seeded generator (so a sequence's tokens do not depend on what
else is in the batch — the async engine and the lock-step baseline then produce the same
trajectories); the log-probability of each sampled token comes out of the same pass; and the
KV cache of a finished generation is kept (prefix caching, as vLLM does), so the next turn of
a multi-turn episode only runs the new tokens (tool response + header) through the model
instead of re-reading the whole history. Within one batch, prompts that share a long prefix (the
G rollouts of a GRPO group all start from the same prompt) prefill that prefix once and copy its
keys/values into every row; and the prefill computes logits for the last position only (the
vocabulary projection of every prompt position would cost as much as a layer or two).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

import torch

from star.rollout.base import Generation, GenerationBackend, SamplingParams, per_prompt


class TransformersBackend(GenerationBackend):
    def __init__(self, model, tokenizer, max_batch: int = 8, device: str | torch.device | None = None,
                 prefix_cache: int = 64, prefix_cache_tokens: int = 65536, share_prefix: bool = True,
                 min_shared_prefix: int = 16):
        self.model = model.eval()
        self.share_prefix = share_prefix
        """Prefill a prefix shared by several prompts of one batch once (a group's rollouts), not once per row."""
        self.min_shared_prefix = min_shared_prefix
        """Shortest shared prefix (tokens, beyond what the prefix cache already holds) worth a separate pass."""
        self.prefix_cache = prefix_cache
        """Most finished sequences whose KV cache is kept for reuse (0 = off); LRU."""
        self.prefix_cache_tokens = prefix_cache_tokens
        """Most tokens of keys/values kept over all entries (LRU): at long contexts the entry count alone
        does not bound memory (SmolLM2-135M keeps ~46 KB a token in float32, so 5K-token turns x 64
        entries would be ~15 GB)."""
        self._prefix: OrderedDict[tuple[int, ...], tuple] = OrderedDict()  # ids -> (ids array, [(K, V)] per layer)
        self.tokenizer = tokenizer
        self.max_batch = max_batch
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        if self.device != next(model.parameters()).device:
            self.model.to(self.device)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.pad_id = int(pad if pad is not None else 0)
        self._stops = self.stop_token_ids
        self._lock = threading.Lock()  # one forward pass at a time; callers may come from threads

    @classmethod
    def from_pretrained(cls, path: str, device: str | None = None, dtype: str | None = None, max_batch: int = 8,
                        prefix_cache: int = 64, prefix_cache_tokens: int = 65536, share_prefix: bool = True):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        torch_dtype = getattr(torch, dtype) if dtype else (torch.bfloat16 if device.startswith("cuda") else torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype).to(device)
        return cls(model, tokenizer, max_batch=max_batch, device=device, prefix_cache=prefix_cache,
                   prefix_cache_tokens=prefix_cache_tokens, share_prefix=share_prefix)

    def update_weights(self, state_dict) -> None:
        """Load new policy weights in place (RL: after each optimiser step)."""
        with self._lock:
            _, unexpected = self.model.load_state_dict(state_dict, strict=False)
            if unexpected:
                raise ValueError(f"update_weights: unexpected parameter names {unexpected[:5]}")
            self._prefix.clear()  # cached keys/values were computed by the old weights

    def generate(self, prompts: Sequence[Sequence[int]],
                 params: SamplingParams | Sequence[SamplingParams],
                 forced: Sequence[Sequence[int] | None] | None = None) -> list[Generation]:
        """Sample continuations. `forced[i]`, when given, replaces sampling for prompt i: the model
        decodes exactly those ids (teacher forcing, same cost as generating them) and scores them."""
        plist = per_prompt(params, len(prompts))
        forced = list(forced) if forced is not None else [None] * len(prompts)
        if len(forced) != len(prompts):
            raise ValueError(f"got {len(forced)} forced continuations for {len(prompts)} prompts")
        out: list[Generation] = []
        for i in range(0, len(prompts), self.max_batch):
            sl = slice(i, i + self.max_batch)
            with self._lock:
                out.extend(self._generate_batch(prompts[sl], plist[sl], forced[sl]))
        return out

    # -- the decode loop ------------------------------------------------------------------------
    @torch.inference_mode()
    def _generate_batch(self, prompts: Sequence[Sequence[int]], plist: list[SamplingParams],
                        forced: list[Sequence[int] | None]) -> list[Generation]:
        if any(len(p) == 0 for p in prompts):
            raise ValueError("cannot generate from an empty prompt")
        B, dev = len(prompts), self.device
        # Reuse the longest cached prefix of each prompt; only the rest goes through the model.
        hits = [self._lookup(p) for p in prompts]
        if self.share_prefix and B > 1:
            hits = self._share_prefixes(prompts, hits)
        c = [h[0] if h else 0 for h in hits]
        sfx = [len(p) - cb for p, cb in zip(prompts, c)]
        C, S = max(c), max(sfx)
        ids = torch.full((B, S), self.pad_id, dtype=torch.long)
        attn = torch.zeros((B, C + S), dtype=torch.long)
        pos = torch.zeros((B, S), dtype=torch.long)
        for b, p in enumerate(prompts):  # cache right-aligned in [0, C), new tokens right-aligned in [C, C+S)
            ids[b, S - sfx[b]:] = torch.tensor(list(p[c[b]:]), dtype=torch.long)
            attn[b, C - c[b]:C] = 1
            attn[b, C + S - sfx[b]:] = 1
            pos[b, S - sfx[b]:] = torch.arange(c[b], c[b] + sfx[b])
        past = self._batch_cache(hits, c, C) if C else None
        ids, attn, pos = ids.to(dev), attn.to(dev), pos.to(dev)
        gens = []
        for p in plist:
            g = torch.Generator(device="cpu")
            g.manual_seed(p.seed if p.seed is not None else int(torch.randint(0, 2**62, (1,)).item()))
            gens.append(g)
        out_ids: list[list[int]] = [[] for _ in range(B)]
        out_lp: list[list[float]] = [[] for _ in range(B)]
        reasons = ["length"] * B
        if any(p.max_new_tokens < 1 for p in plist) or any(f is not None and not f for f in forced):
            raise ValueError("every sequence needs max_new_tokens >= 1 and a non-empty forced continuation")
        active = [True] * B
        res = self.model(input_ids=ids, attention_mask=attn, position_ids=pos, past_key_values=past, use_cache=True,
                         logits_to_keep=1)
        past, logits = res.past_key_values, res.logits[:, -1, :]
        last_pos = pos[:, -1]
        rows = list(range(B))  # batch row -> sequence; finished sequences leave the batch
        max_steps = max(p.max_new_tokens for p in plist)
        for _ in range(max_steps):
            toks, lps = _sample_rows(logits, [plist[b] for b in rows], [gens[b] for b in rows],
                                     [None if forced[b] is None else int(forced[b][len(out_ids[b])]) for b in rows])
            for r, b in enumerate(rows):
                tok, lp = toks[r], lps[r]
                out_ids[b].append(tok)
                out_lp[b].append(lp)
                if tok in self._stops or (plist[b].stop and self._hit_stop(out_ids[b], plist[b].stop)):
                    active[b], reasons[b] = False, "stop"
                elif len(out_ids[b]) >= plist[b].max_new_tokens:
                    active[b] = False
                elif forced[b] is not None and len(out_ids[b]) >= len(forced[b]):
                    active[b], reasons[b] = False, "stop"
            keep = [r for r, b in enumerate(rows) if active[b]]
            if len(keep) < len(rows):
                # Drop finished sequences so the remaining steps only compute live rows.
                if self.prefix_cache:
                    self._store(prompts, out_ids, attn, past, [(r, b) for r, b in enumerate(rows) if not active[b]])
                if not keep:
                    rows = []
                    break
                idx = torch.tensor(keep, device=dev)
                past.batch_select_indices(idx)
                attn, last_pos = attn[idx], last_pos[idx]
                rows = [rows[r] for r in keep]
            nxt = torch.tensor([out_ids[b][-1] for b in rows], dtype=torch.long, device=dev).view(-1, 1)
            attn = torch.cat([attn, torch.ones((len(rows), 1), dtype=attn.dtype, device=dev)], dim=1)
            last_pos = last_pos + 1
            res = self.model(input_ids=nxt, attention_mask=attn, position_ids=last_pos.view(-1, 1),
                             past_key_values=past, use_cache=True)
            past, logits = res.past_key_values, res.logits[:, -1, :]
        if self.prefix_cache and rows:
            self._store(prompts, out_ids, attn, past, list(enumerate(rows)))
        return [Generation(out_ids[b], out_lp[b], reasons[b]) for b in range(B)]

    # -- prefix cache ---------------------------------------------------------------------------
    def _lookup(self, prompt: Sequence[int]):
        """(longest common prefix length, cached keys/values) over the cache, or None.

        Any shared prefix counts, not only a whole cached sequence: a new episode reuses the
        system prompt another episode already ran, a next turn reuses its own history."""
        import numpy as np

        if not self._prefix:
            return None
        p = np.asarray(prompt, dtype=np.int64)
        best_key, best_n = None, 0
        for key, (arr, _) in self._prefix.items():
            n = min(len(arr), len(p) - 1)  # at least one new token must go through the model
            if n <= best_n:
                continue
            neq = np.flatnonzero(arr[:n] != p[:n])
            lcp = int(neq[0]) if len(neq) else n
            if lcp > best_n:
                best_key, best_n = key, lcp
        if best_key is None or best_n < 8:
            return None
        self._prefix.move_to_end(best_key)
        kv = self._prefix[best_key][1]
        return best_n, [(k[:, :best_n], v[:, :best_n]) for k, v in kv]

    def _share_prefixes(self, prompts: Sequence[Sequence[int]], hits: list):
        """Rows whose prompts share a prefix longer than their cache hits get that prefix's keys/values,
        computed once. Greedy: each row in turn anchors the longest prefix it shares with a later row
        (beyond both rows' hits); rows sharing a shorter part of it get a slice of the same keys/values."""
        import numpy as np

        arrs = [np.asarray(p, dtype=np.int64) for p in prompts]
        out = list(hits)
        have = [h[0] if h else 0 for h in hits]
        done = [False] * len(prompts)
        for i in range(len(prompts)):
            if done[i]:
                continue
            useful = {}
            for j in range(i + 1, len(prompts)):
                if done[j]:
                    continue
                m = min(len(arrs[i]), len(arrs[j])) - 1  # at least one token of every row stays to run
                neq = np.flatnonzero(arrs[i][:m] != arrs[j][:m])
                lcp = int(neq[0]) if len(neq) else m
                if lcp - have[j] >= self.min_shared_prefix:
                    useful[j] = lcp
            shared = max(useful.values(), default=0)
            if shared - have[i] < self.min_shared_prefix:
                continue
            kv = self._prefill(prompts[i][:shared], out[i])
            out[i], have[i], done[i] = (shared, kv), shared, True
            for j, lcp in useful.items():
                out[j] = (lcp, kv if lcp == shared else [(k[:, :lcp], v[:, :lcp]) for k, v in kv])
                have[j], done[j] = lcp, lcp == shared
        return out

    def _prefill(self, ids: Sequence[int], hit):
        """Keys/values of `ids` (one sequence) per layer, continuing from a cache hit on its start."""
        from transformers import DynamicCache

        start, past = 0, None
        if hit:
            start, past = hit[0], DynamicCache()
            for layer, (k, v) in enumerate(hit[1]):
                past.update(k.unsqueeze(0), v.unsqueeze(0), layer)
        dev = self.device
        x = torch.tensor([list(ids[start:])], dtype=torch.long, device=dev)
        pos = torch.arange(start, len(ids), device=dev).view(1, -1)
        attn = torch.ones((1, len(ids)), dtype=torch.long, device=dev)
        res = self.model(input_ids=x, attention_mask=attn, position_ids=pos, past_key_values=past, use_cache=True,
                         logits_to_keep=1)
        return [(layer.keys[0], layer.values[0]) for layer in res.past_key_values.layers]

    def _batch_cache(self, hits, c: list[int], C: int):
        from transformers import DynamicCache

        ref = next(h[1] for h in hits if h)
        cache = DynamicCache()
        for layer, (k0, v0) in enumerate(ref):
            K = torch.zeros((len(hits), k0.shape[0], C, k0.shape[2]), dtype=k0.dtype, device=k0.device)
            V = torch.zeros((len(hits), v0.shape[0], C, v0.shape[2]), dtype=v0.dtype, device=v0.device)
            for b, h in enumerate(hits):
                if h:
                    K[b, :, C - c[b]:] = h[1][layer][0]
                    V[b, :, C - c[b]:] = h[1][layer][1]
            cache.update(K, V, layer)
        return cache

    def _store(self, prompts, out_ids, attn, past, row_seq: list[tuple[int, int]]) -> None:
        """Keep keys/values of the given (batch row, sequence) pairs: prompt + generated ids but the
        last (never fed). Called when a sequence leaves the batch."""
        import numpy as np

        layers = [(layer.keys, layer.values) for layer in past.layers]
        for r, b in row_seq:
            p = prompts[b]
            n = len(p) + len(out_ids[b]) - 1
            cols = torch.nonzero(attn[r, : layers[0][0].shape[2]], as_tuple=False).flatten()[:n]
            if len(cols) < n:
                continue
            key = tuple(p) + tuple(out_ids[b][:-1])
            arr = np.asarray(key, dtype=np.int64)
            # An entry that is a prefix of this one is superseded (the next turn of the same episode):
            # any prompt it would serve, this one serves at least as far.
            for old in [k for k, (a, _) in self._prefix.items() if len(a) <= len(arr) and k == key[:len(a)]]:
                del self._prefix[old]
            self._prefix[key] = (arr, [(k[r, :, cols].clone(), v[r, :, cols].clone()) for k, v in layers])
            self._prefix.move_to_end(key)
        total = sum(len(a) for a, _ in self._prefix.values())
        while self._prefix and (len(self._prefix) > self.prefix_cache or total > self.prefix_cache_tokens):
            _, (a, _) = self._prefix.popitem(last=False)
            total -= len(a)


NUCLEUS_CANDIDATES = 256
"""Top-p looks for its nucleus among a row's 256 most likely tokens first; a full sort only where they hold too little mass."""


def _sample_rows(logits: torch.Tensor, params: list[SamplingParams], gens: list[torch.Generator],
                 forced: list[int | None]) -> tuple[list[int], list[float]]:
    """One token per row of `logits` (on the model's device, all rows at once) and its log-prob under the
    row's temperature-scaled distribution. A row's randomness is one uniform draw from its own generator
    (inverse-CDF sampling), and which path samples it depends on the row alone, so a sequence's tokens do
    not depend on the rest of the batch; `forced[r]` scores that token instead; temperature 0 is greedy.
    Per-row sampling on the host (a 49K-vocabulary sort for top-p) cost ~1.5 ms a row a token: at batch 96
    that, not the GPU, set the decode speed."""
    R, dev = logits.shape[0], logits.device
    logits = logits.float()
    temp = torch.tensor([p.temperature if p.temperature > 0 else 1.0 for p in params], device=dev).view(-1, 1)
    logp = torch.log_softmax(logits / temp, dim=-1)
    toks = torch.argmax(logits, dim=-1)
    sampled = [r for r in range(R) if forced[r] is None and params[r].temperature > 0]
    if sampled:
        u = torch.cat([torch.rand(1, generator=gens[r], dtype=torch.float64) for r in sampled]).to(dev)
        rows = torch.tensor(sampled, device=dev)
        probs = logp[rows].exp()
        top_p = torch.tensor([params[r].top_p for r in sampled], device=dev)
        picks = torch.empty(len(sampled), dtype=torch.long, device=dev)
        plain = top_p >= 1.0
        if bool(plain.any()):  # the whole distribution, in vocabulary order
            picks[plain] = _inverse_cdf(probs[plain], u[plain])
        nucleus = ~plain
        if bool(nucleus.any()):
            picks[nucleus] = _nucleus_rows(probs[nucleus], top_p[nucleus], u[nucleus])
        toks[rows] = picks
    fixed = [r for r in range(R) if forced[r] is not None]
    if fixed:
        toks[torch.tensor(fixed, device=dev)] = torch.tensor([forced[r] for r in fixed], device=dev)
    lps = logp.gather(-1, toks.view(-1, 1)).view(-1)
    return toks.tolist(), lps.tolist()


def _inverse_cdf(probs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Per row, the first index whose cumulative mass exceeds u x the row's total (zero-mass entries never)."""
    cdf = probs.cumsum(-1)
    pick = torch.searchsorted(cdf, (u.to(cdf.dtype) * cdf[:, -1]).view(-1, 1).contiguous(), right=True)
    return pick.clamp_(max=cdf.shape[-1] - 1).view(-1)


def _nucleus_rows(probs: torch.Tensor, top_p: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Top-p sampling per row: from the row's likeliest NUCLEUS_CANDIDATES tokens where they hold top_p of
    the mass (a peaked distribution, nearly always), else from its fully sorted vocabulary."""
    cand, cand_ids = torch.topk(probs, min(NUCLEUS_CANDIDATES, probs.shape[-1]), dim=-1)  # most likely first
    enough = cand.sum(-1) >= top_p
    picks = torch.empty(len(probs), dtype=torch.long, device=probs.device)
    if bool(enough.any()):
        picks[enough] = _nucleus_pick(cand[enough], cand_ids[enough], top_p[enough], u[enough])
    if not bool(enough.all()):
        full, full_ids = torch.sort(probs[~enough], dim=-1, descending=True)
        picks[~enough] = _nucleus_pick(full, full_ids, top_p[~enough], u[~enough])
    return picks


def _nucleus_pick(sorted_probs: torch.Tensor, ids: torch.Tensor, top_p: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse-CDF over each row's nucleus: most likely first, up to and including the token that crosses top_p."""
    keep = (sorted_probs.cumsum(-1) - sorted_probs) < top_p.view(-1, 1)
    pick = _inverse_cdf(torch.where(keep, sorted_probs, torch.zeros_like(sorted_probs)), u)
    return ids.gather(-1, pick.view(-1, 1)).view(-1)
