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
from collections.abc import Callable, Sequence

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
            reqs = [_Sequence(None, p, sp, f) for p, sp, f in zip(prompts[sl], plist[sl], forced[sl])]
            with self._lock:
                self._decode(reqs)
            out.extend(r.generation() for r in reqs)
        return out

    def generate_continuous(self, requests: Sequence[tuple], refill: Callable[[int], Sequence[tuple]],
                            on_done: Callable[[object, Generation], None], admit_every: int = 8) -> None:
        """Continuous batching: decode `requests` ((tag, prompt ids, SamplingParams[, forced ids]) each)
        and, while they run, the ones `refill(free slots)` hands over, at most `max_batch` at a time;
        `on_done(tag, generation)` as each sequence ends. New sequences join the running batch every
        `admit_every` decode steps (each admission is one prefill pass) or as soon as it empties; returns
        when it is empty and `refill` has nothing. A sequence samples exactly as in `generate` (its own
        generator), so an episode's tokens do not depend on when it joined. Why: a batch that runs until
        its longest row ends holds every finished row's next turn back; on a GPU, where a decode step costs
        about the same at any batch size, that wait set the pace of multi-turn rollouts."""
        reqs = [_Sequence(*r) for r in requests]
        with self._lock:
            self._decode(reqs, refill=lambda n: [_Sequence(*r) for r in refill(n)],
                         on_done=lambda r: on_done(r.tag, r.generation()), admit_every=admit_every)

    # -- the decode loop ------------------------------------------------------------------------
    @torch.inference_mode()
    def _decode(self, pending: list[_Sequence], refill=None, on_done=None, admit_every: int = 8) -> None:
        """Decode until every sequence (and every one `refill` adds) has ended; results land on the
        sequences themselves."""
        dev = self.device
        rows: list[_Sequence] = []  # batch row -> sequence
        state = None  # (past, attn, last_pos, logits) of `rows`
        since_admit = 0
        while True:
            if pending:
                new = self._start(pending)
                state = new if not rows else _merge(state, new)
                rows, pending, since_admit = rows + pending, [], 0
            if not rows:
                return
            past, attn, last_pos, logits = state
            toks, lps = _sample_rows(logits, [r.params for r in rows], [r.gen for r in rows],
                                     [None if r.forced is None else int(r.forced[len(r.out_ids)]) for r in rows])
            for r, tok, lp in zip(rows, toks, lps):
                r.out_ids.append(tok)
                r.out_lp.append(lp)
                if tok in self._stops or (r.params.stop and self._hit_stop(r.out_ids, r.params.stop)):
                    r.active, r.reason = False, "stop"
                elif len(r.out_ids) >= r.params.max_new_tokens:
                    r.active = False
                elif r.forced is not None and len(r.out_ids) >= len(r.forced):
                    r.active, r.reason = False, "stop"
            keep = [i for i, r in enumerate(rows) if r.active]
            if len(keep) < len(rows):
                done = [(i, r) for i, r in enumerate(rows) if not r.active]
                if self.prefix_cache:
                    self._store(attn, past, done)
                if on_done is not None:
                    for _, r in done:
                        on_done(r)
                if keep:  # drop finished sequences so the remaining steps only compute live rows
                    idx = torch.tensor(keep, device=dev)
                    past.batch_select_indices(idx)
                    attn, last_pos = _trim_left(past, attn[idx]), last_pos[idx]
                rows = [rows[i] for i in keep]
            if refill is not None and len(rows) < self.max_batch and (not rows or since_admit >= admit_every):
                pending = refill(self.max_batch - len(rows))
            if not rows:
                state = None
                continue
            nxt = torch.tensor([r.out_ids[-1] for r in rows], dtype=torch.long, device=dev).view(-1, 1)
            attn = torch.cat([attn, torch.ones((len(rows), 1), dtype=attn.dtype, device=dev)], dim=1)
            last_pos = last_pos + 1
            res = self.model(input_ids=nxt, attention_mask=attn, position_ids=last_pos.view(-1, 1),
                             past_key_values=past, use_cache=True)
            state = (res.past_key_values, attn, last_pos, res.logits[:, -1, :])
            since_admit += 1

    def _start(self, seqs: list[_Sequence]):
        """Prefill new sequences (reusing cached and shared prefixes): (past, attn, last_pos, logits)."""
        prompts = [r.prompt for r in seqs]
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
        res = self.model(input_ids=ids, attention_mask=attn, position_ids=pos, past_key_values=past, use_cache=True,
                         logits_to_keep=1)
        return res.past_key_values, attn, pos[:, -1], res.logits[:, -1, :]

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

    def _store(self, attn, past, row_seq: list[tuple[int, _Sequence]]) -> None:
        """Keep keys/values of the given (batch row, sequence) pairs: prompt + generated ids but the
        last (never fed). Called when a sequence leaves the batch."""
        import numpy as np

        layers = [(layer.keys, layer.values) for layer in past.layers]
        for r, seq in row_seq:
            n = len(seq.prompt) + len(seq.out_ids) - 1
            cols = torch.nonzero(attn[r, : layers[0][0].shape[2]], as_tuple=False).flatten()[:n]
            if len(cols) < n:
                continue
            key = tuple(seq.prompt) + tuple(seq.out_ids[:-1])
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


class _Sequence:
    """One sequence being decoded: its prompt, sampling, own random stream and what it has produced."""

    def __init__(self, tag, prompt: Sequence[int], params: SamplingParams, forced: Sequence[int] | None = None):
        if len(prompt) == 0:
            raise ValueError("cannot generate from an empty prompt")
        if params.max_new_tokens < 1 or (forced is not None and not forced):
            raise ValueError("every sequence needs max_new_tokens >= 1 and a non-empty forced continuation")
        self.tag, self.prompt, self.params, self.forced = tag, prompt, params, forced
        self.gen = torch.Generator(device="cpu")
        self.gen.manual_seed(params.seed if params.seed is not None else int(torch.randint(0, 2**62, (1,)).item()))
        self.out_ids: list[int] = []
        self.out_lp: list[float] = []
        self.active, self.reason = True, "length"

    def generation(self) -> Generation:
        return Generation(self.out_ids, self.out_lp, self.reason)


def _merge(a, b):
    """Two running batches (past, attn, last_pos, logits) as one: the shorter cache is left-padded with
    masked columns, so every row keeps its positions and sees only its own tokens."""
    (pa, ma, la, ga), (pb, mb, lb, gb) = a, b
    L = max(ma.shape[1], mb.shape[1])
    for x, y in zip(pa.layers, pb.layers):  # a's cache object grows in place (its layer types are kept)
        x.keys = torch.cat([_pad_left(x.keys, L), _pad_left(y.keys, L)])
        x.values = torch.cat([_pad_left(x.values, L), _pad_left(y.values, L)])
    pad = torch.nn.functional.pad
    mask = torch.cat([pad(ma, (L - ma.shape[1], 0)), pad(mb, (L - mb.shape[1], 0))])
    return pa, mask, torch.cat([la, lb]), torch.cat([ga, gb])


def _pad_left(kv: torch.Tensor, length: int) -> torch.Tensor:
    """(B, heads, T, dim) -> (B, heads, length, dim), zeros in front."""
    return torch.nn.functional.pad(kv, (0, 0, length - kv.shape[2], 0)) if kv.shape[2] < length else kv


TRIM_MIN = 64
"""Leading columns that every row masks (padding for rows that have left) are cut from the cache at this many."""


def _trim_left(past, attn: torch.Tensor) -> torch.Tensor:
    """Drop the leading columns no row attends to (from the cache too); returns the mask."""
    lead = int((attn.cumsum(1) == 0).sum(1).min().item())
    if lead < TRIM_MIN:
        return attn
    for layer in past.layers:
        layer.keys, layer.values = layer.keys[:, :, lead:], layer.values[:, :, lead:]
    return attn[:, lead:]


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
