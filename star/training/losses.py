"""Policy-gradient loss: token-level clipped surrogate with asymmetric ("clip-higher") bounds.

    ratio_t = exp(clamp(logp_t - old_logp_t, -20, 20))
    loss_t  = -min(ratio_t * A_t, clip(ratio_t, 1 - eps_low, 1 + eps_high) * A_t)  [+ kl_coef * KL_t]
    loss    = sum_t mask_t * loss_t / n_tokens

n_tokens is the number of loss tokens of the whole batch (or mini-batch), not of one sequence or
one micro-batch: every policy token weighs the same (DAPO's token-mean), so long trajectories are
not down-weighted. KL_t is the k3 estimator exp(ref - logp) - (ref - logp) - 1 (non-negative),
capped at KL_CAP per token.
"""

from __future__ import annotations

# k3 grows like exp(ref - logp): one token whose probability one update pushed from ~1 to e^-22
# (seen on the cpu profile) scores 5e9 and its gradient swamps the batch. Capping each token's
# term (as common GRPO implementations do) bounds the penalty; a token past the cap adds no KL gradient.
KL_CAP = 10.0
# Largest exponent either exp below takes: e^20 = 5e8 already means one update moved a token by 20 nats,
# and an exp that overflows (argument > 88) gives inf, whose product with 0 is NaN.
EXP_CLAMP = 20.0


def model_device(model):
    """Where a model (or a DeepSpeed engine) computes: inputs go there."""
    device = getattr(model, "device", None)
    if device is not None and not callable(device):
        return device
    return next(model.parameters()).device


def _accepts_logits_to_keep(model) -> bool:
    """Whether a model's forward takes `logits_to_keep` (every transformers causal LM does)."""
    import inspect

    module = getattr(model, "module", model)  # a DeepSpeed engine passes its kwargs to its module
    try:
        return "logits_to_keep" in inspect.signature(module.forward).parameters
    except (TypeError, ValueError):
        return False


def is_right_padded(attention_mask) -> bool:
    """Every row is its tokens then only padding (what `collate` builds)."""
    m = attention_mask.bool()
    return bool(m[:, 0].all() and (m[:, 1:] <= m[:, :-1]).all())


def token_logprobs(model, input_ids, attention_mask, temperature: float = 1.0, with_entropy: bool = False,
                   chunk: int = 1024, start: int = 0):
    """Log-prob of each next token (shape [B, T-1]) and optionally the policy's entropy there.

    Memory matters at long contexts (a 5K-token trajectory's logits over a 49K vocabulary are 1 GB in
    float32): the log-prob is gathered logit minus logsumexp, so autograd keeps one copy of the
    logits rather than a full log-softmax; the entropy is a statistic (no gradient), computed in
    chunks of `chunk` positions.

    `start`: the first position anyone reads (a batch's first loss token). The vocabulary projection
    and softmax run only from there (the prompt, most of a short episode, needs hidden states but no
    logits); earlier positions read 0."""
    import torch

    device = model_device(model)
    input_ids, attention_mask = input_ids.to(device), attention_mask.to(device)
    if is_right_padded(attention_mask):
        # Causal attention already hides the pads after a row's tokens from them, so the mask changes only
        # pad positions, which nothing reads; without it attention takes the plain causal path (SmolLM2,
        # 4 rows of up to 700 tokens, forward and backward: peak memory 5.8 GB instead of 6.4).
        attention_mask = None
    T = input_ids.shape[1]
    start = max(0, min(int(start), T - 1))
    if start and _accepts_logits_to_keep(model):
        # logits for the last T - start positions: start .. T-1, of which T-1 scores nothing
        logits = model(input_ids=input_ids, attention_mask=attention_mask, logits_to_keep=T - start).logits
    else:
        logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, start:]
    logits = logits[:, :-1].float()
    if temperature != 1.0:
        logits = logits / temperature
    target = input_ids[:, start + 1:].unsqueeze(-1)
    logp = logits.gather(-1, target).squeeze(-1) - torch.logsumexp(logits, dim=-1)
    pad = logp.new_zeros(logp.shape[0], start)
    logp = torch.cat([pad, logp], dim=1) if start else logp
    if not with_entropy:
        return logp, None
    with torch.no_grad():
        parts = [pad] if start else []
        for i in range(0, logits.shape[1], chunk):
            lp = torch.log_softmax(logits[:, i:i + chunk].detach(), dim=-1)
            parts.append(-(lp.exp() * lp).sum(-1))
        entropy = torch.cat(parts, dim=1) if parts else logits.new_zeros(logits.shape[:2])
    return logp, entropy


def first_loss_position(loss_mask) -> int:
    """The first position (of a [B, T-1] mask) that any row scores: where `token_logprobs` may start."""
    cols = loss_mask.bool().any(dim=0).nonzero()
    return int(cols[0]) if len(cols) else 0


def clipped_surrogate(logp, old_logp, advantages, mask, eps_low: float = 0.2, eps_high: float = 0.28,
                      n_tokens: float | None = None, ref_logp=None, kl_coef: float = 0.0):
    """Loss (scalar tensor) and detached stats. `advantages` broadcasts against logp ([B,1] or [B,T])."""
    import torch

    mask = mask.to(logp.dtype)
    denom = float(n_tokens) if n_tokens is not None else float(mask.sum().clamp(min=1))
    # Clamped as verl does: unclamped, inf * 0 at a masked or zero-advantage position is NaN,
    # which poisons the whole batch's gradient.
    log_ratio = (logp - old_logp).clamp(-EXP_CLAMP, EXP_CLAMP)
    ratio = torch.exp(log_ratio)
    adv = advantages.to(logp.dtype).expand_as(logp)
    unclipped = ratio * adv
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high) * adv
    per_token = -torch.minimum(unclipped, clipped)
    kl = None
    if ref_logp is not None and kl_coef:
        # k3 passes KL_CAP near delta = 2.6, so the clamp changes no value; without it an overflowing
        # exp makes the capped token's gradient 0 * inf = NaN
        delta = (ref_logp - logp).clamp(max=EXP_CLAMP)
        kl = (torch.exp(delta) - delta - 1.0).clamp(max=KL_CAP)
        per_token = per_token + kl_coef * kl
    loss = (per_token * mask).sum() / max(denom, 1.0)
    with torch.no_grad():
        n = mask.sum().clamp(min=1)
        low = (ratio < 1.0 - eps_low) & (adv < 0)
        high = (ratio > 1.0 + eps_high) & (adv > 0)
        on = mask > 0
        stats = {
            "clip_fraction": float(((low | high).to(logp.dtype) * mask).sum() / n),
            "clip_low_fraction": float((low.to(logp.dtype) * mask).sum() / n),
            "clip_high_fraction": float((high.to(logp.dtype) * mask).sum() / n),
            "ratio_mean": float((ratio * mask).sum() / n),
            "ratio_min": float(ratio[on].min()) if on.any() else 1.0,
            "ratio_max": float(ratio[on].max()) if on.any() else 1.0,
            "approx_kl_old": float((((ratio - 1) - log_ratio) * mask).sum() / n),
            "loss_tokens": float(mask.sum()),
        }
        if kl is not None:
            stats["kl_ref"] = float((kl * mask).sum() / n)
    return loss, stats
