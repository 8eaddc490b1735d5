import math

import pytest
import torch

from star.training.losses import clipped_surrogate


def _t(x):
    return torch.tensor(x, dtype=torch.float32)


def test_clip_higher_surrogate_against_hand_computed_values():
    # Two sequences, three token slots; ratios chosen on each side of the asymmetric clip.
    ratios = _t([[1.5, 0.5, 1.1], [0.7, 1.25, 1.0]])
    old = torch.zeros(2, 3)
    logp = torch.log(ratios)
    adv = _t([[2.0], [-1.0]])
    mask = _t([[1, 1, 1], [1, 1, 0]])
    loss, stats = clipped_surrogate(logp, old, adv, mask, eps_low=0.2, eps_high=0.28)
    # seq 1 (A=+2): min(1.5*2, 1.28*2)=2.56 ; min(0.5*2, 0.8*2)=1.0 ; min(1.1*2, 1.1*2)=2.2
    # seq 2 (A=-1): min(-0.7, -0.8)=-0.8 ; min(-1.25, -1.25)=-1.25 ; masked
    expected = -(2.56 + 1.0 + 2.2 - 0.8 - 1.25) / 5
    assert float(loss) == pytest.approx(expected, rel=1e-5)
    # clipped tokens: 1.5 with A>0 (above 1+eps_high), 0.7 with A<0 (below 1-eps_low)
    assert stats["clip_fraction"] == pytest.approx(2 / 5)
    assert stats["clip_high_fraction"] == pytest.approx(1 / 5)
    assert stats["clip_low_fraction"] == pytest.approx(1 / 5)
    assert stats["ratio_max"] == pytest.approx(1.5) and stats["ratio_min"] == pytest.approx(0.5)


def test_clip_is_asymmetric():
    logp = torch.log(_t([[1.25]]))
    # 1.25 is inside [0.8, 1.28] -> unclipped; with symmetric 0.2 it would clip at 1.2
    assert float(clipped_surrogate(logp, torch.zeros(1, 1), _t([[1.0]]), _t([[1]]), 0.2, 0.28)[0]) \
        == pytest.approx(-1.25)
    assert float(clipped_surrogate(logp, torch.zeros(1, 1), _t([[1.0]]), _t([[1]]), 0.2, 0.2)[0]) \
        == pytest.approx(-1.2)


def test_token_mean_over_the_batch_not_per_sequence():
    # ratio 1 everywhere: loss = -sum(A_i * len_i) / total tokens
    logp = torch.zeros(2, 4)
    mask = _t([[1, 1, 1, 1], [1, 0, 0, 0]])
    adv = _t([[1.0], [-1.0]])
    loss, _ = clipped_surrogate(logp, torch.zeros(2, 4), adv, mask)
    assert float(loss) == pytest.approx(-(4 - 1) / 5)  # a per-sequence mean would give 0
    # an explicit batch-wide denominator (gradient accumulation over micro-batches)
    loss10, _ = clipped_surrogate(logp, torch.zeros(2, 4), adv, mask, n_tokens=10)
    assert float(loss10) == pytest.approx(-3 / 10)


def test_masked_tokens_get_no_gradient():
    logp = torch.zeros(1, 3, requires_grad=True)
    loss, _ = clipped_surrogate(logp, torch.zeros(1, 3), _t([[1.0]]), _t([[1, 0, 1]]))
    loss.backward()
    assert logp.grad[0, 1] == 0 and logp.grad[0, 0] != 0


def test_optional_kl_term_is_k3():
    logp = torch.log(_t([[0.5]]))
    ref = torch.log(_t([[0.25]]))
    loss0, _ = clipped_surrogate(logp, logp.clone(), _t([[0.0]]), _t([[1]]))
    loss, stats = clipped_surrogate(logp, logp.clone(), _t([[0.0]]), _t([[1]]), ref_logp=ref, kl_coef=0.1)
    k3 = math.exp(math.log(0.5)) - math.log(0.5) - 1  # delta = log(0.25/0.5)
    assert float(loss0) == 0.0
    assert stats["kl_ref"] == pytest.approx(k3, rel=1e-5)
    assert float(loss) == pytest.approx(0.1 * k3, rel=1e-5)


def test_kl_term_is_capped_per_token_so_one_collapsed_token_cannot_swamp_the_batch():
    from star.training.losses import KL_CAP

    ref = torch.log(_t([[0.9, 0.5]]))
    logp = torch.tensor([[-22.0, math.log(0.25)]], requires_grad=True)  # token 0: p 0.9 -> e^-22
    loss, stats = clipped_surrogate(logp, logp.detach().clone(), _t([[0.0]]), _t([[1, 1]]),
                                    ref_logp=ref, kl_coef=1.0)
    k3 = 2 - math.log(2) - 1  # token 1: delta = log(0.5 / 0.25)
    assert stats["kl_ref"] == pytest.approx((KL_CAP + k3) / 2, rel=1e-5)
    loss.backward()
    assert torch.isfinite(logp.grad).all() and logp.grad[0, 0] == 0 and logp.grad[0, 1] != 0


def test_kl_gradient_stays_finite_when_exp_of_the_gap_would_overflow():
    logp = torch.tensor([[-200.0]], requires_grad=True)  # exp(ref - logp) is inf in float32
    loss, stats = clipped_surrogate(logp, logp.detach().clone(), _t([[0.0]]), _t([[1]]),
                                    ref_logp=torch.log(_t([[0.9]])), kl_coef=1.0)
    loss.backward()
    assert stats["kl_ref"] == 10.0 and float(logp.grad[0, 0]) == 0.0


def test_a_huge_log_ratio_leaves_the_loss_and_gradient_finite():
    # one negative-advantage token whose probability rose e^100-fold, beside a masked padding position
    logp = torch.tensor([[-1.0, -1.0]], requires_grad=True)
    old = _t([[-101.0, -101.0]])
    loss, stats = clipped_surrogate(logp, old, _t([[-1.0, 0.0]]), _t([[1, 0]]))
    loss.backward()
    assert math.isfinite(float(loss)) and torch.isfinite(logp.grad).all()
    assert stats["ratio_max"] == pytest.approx(math.exp(20.0), rel=1e-4)


def test_token_logprobs_match_the_full_log_softmax_with_a_light_memory_path():
    """Gathered logit minus logsumexp and chunked entropy give the textbook values and gradients."""
    import torch

    from star.training.losses import token_logprobs

    torch.manual_seed(0)

    class Toy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(11, 11)

        def forward(self, input_ids, attention_mask):
            return type("Out", (), {"logits": self.emb(input_ids)})()

    model, ids = Toy(), torch.randint(0, 11, (2, 7))
    logp, ent = token_logprobs(model, ids, torch.ones_like(ids), temperature=0.7, with_entropy=True, chunk=4)
    full = torch.log_softmax(model.emb(ids)[:, :-1] / 0.7, dim=-1)
    expected = full.gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(logp, expected, atol=1e-6)
    assert torch.allclose(ent, -(full.exp() * full).sum(-1), atol=1e-6) and not ent.requires_grad
    (g_ours,) = torch.autograd.grad(logp.sum(), model.emb.weight)
    (g_full,) = torch.autograd.grad(expected.sum(), model.emb.weight)
    assert torch.allclose(g_ours, g_full, atol=1e-6)


def test_token_logprobs_from_the_first_loss_token_match_the_full_pass(smoke_dir):
    """Scoring from `start` (the prompt gets hidden states but no logits) changes no value or gradient
    at the positions read, and reads 0 before them."""
    import torch

    from star.training.losses import first_loss_position, token_logprobs
    from star.training.models import load_model

    model = load_model(smoke_dir)
    ids = torch.randint(5, 200, (3, 12))
    attn = torch.ones_like(ids)
    attn[2, 9:] = 0  # a right-padded row
    mask = torch.zeros(3, 11)
    mask[0, 6:] = 1
    mask[1, 4:8] = 1
    start = first_loss_position(mask)
    assert start == 4 and first_loss_position(torch.zeros(2, 5)) == 0

    full, full_ent = token_logprobs(model, ids, attn, temperature=0.8, with_entropy=True)
    part, part_ent = token_logprobs(model, ids, attn, temperature=0.8, with_entropy=True, start=start)
    assert part.shape == full.shape and part_ent.shape == full_ent.shape
    assert torch.allclose(part[:, start:], full[:, start:], atol=1e-5)
    assert torch.allclose(part_ent[:, start:], full_ent[:, start:], atol=1e-5)
    assert not part[:, :start].any() and not part_ent[:, :start].any()
    params = [p for p in model.parameters() if p.requires_grad]
    g_full = torch.autograd.grad((full * mask).sum(), params, allow_unused=True)
    g_part = torch.autograd.grad((part * mask).sum(), params, allow_unused=True)
    for a, b in zip(g_full, g_part):
        assert (a is None) == (b is None)
        if a is not None:
            assert torch.allclose(a, b, atol=1e-5)


def test_a_right_padded_batch_scores_each_row_as_it_scores_alone(smoke_dir):
    """The pads after a row's tokens change nothing the row's tokens score (the padding mask is dropped
    for right-padded batches, so this pins that causal attention alone keeps them apart)."""
    import torch

    from star.training.losses import is_right_padded, token_logprobs
    from star.training.models import load_model

    model = load_model(smoke_dir)
    ids = torch.randint(5, 200, (3, 14))
    lengths = [14, 9, 5]
    attn = torch.zeros_like(ids)
    for row, n in enumerate(lengths):
        attn[row, :n] = 1
    assert is_right_padded(attn) and not is_right_padded(attn.flip(1))
    batch, _ = token_logprobs(model, ids, attn, temperature=0.7, start=2)
    for row, n in enumerate(lengths):
        alone, _ = token_logprobs(model, ids[row:row + 1, :n], attn[row:row + 1, :n], temperature=0.7)
        assert torch.allclose(batch[row, 2:n - 1], alone[0, 2:], atol=1e-5)
