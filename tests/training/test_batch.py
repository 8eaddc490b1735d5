from types import SimpleNamespace

import pytest

from star.training.advantages import group_advantages
from star.training.batch import build_samples, collate, shared_prefix_advantages


def traj(n, mask, reason="answer", sample=0):
    return SimpleNamespace(query_id="q", sample=sample, token_ids=list(range(1, n + 1)), policy_mask=mask,
                           logprobs=[0.0] * n, finish_reason=reason)


def test_overlength_rollouts_keep_their_group_stats_but_carry_no_loss():
    group = [traj(4, [0, 1, 1, 1]), traj(4, [0, 1, 1, 1], "context_overflow"), traj(4, [0, 1, 0, 1], "format_error")]
    rewards = [2.0, 1.0, 0.0]  # the overlength rollout's reward still enters mean/std
    (adv,) = group_advantages([rewards], eps=0.0)
    assert adv == pytest.approx([1.0, 0.0, -1.0], abs=1e-9)
    samples = build_samples(group, adv)
    assert samples[0].loss_mask == [0, 1, 1, 1]
    assert samples[1].loss_mask == [0, 0, 0, 0]
    assert samples[2].loss_mask == [0, 1, 0, 1]  # tool-response token stays masked
    assert samples[0].advantages == pytest.approx([1.0] * 4, abs=1e-5)


def test_without_overlong_filtering_an_overlength_rollout_is_trained_with_its_advantage():
    group = [traj(4, [0, 1, 1, 1]), traj(4, [0, 1, 0, 1], "context_overflow")]
    samples = build_samples(group, [1.0, -1.0], mask_overlength=False)
    assert samples[1].loss_mask == [0, 1, 0, 1]  # its tool responses stay masked
    assert samples[1].advantages == pytest.approx([-1.0] * 4)


def test_collate_shifts_masks_to_next_token_positions():
    b = collate(build_samples([traj(3, [0, 1, 1]), traj(2, [0, 1])], [0.5, -0.5]), pad_id=0)
    assert b["input_ids"].tolist() == [[1, 2, 3], [1, 2, 0]]
    assert b["loss_mask"].tolist() == [[1.0, 1.0], [1.0, 0.0]]
    assert b["advantages"].tolist() == [[0.5, 0.5], [-0.5, 0.0]]


def test_arpo_shared_prefix_is_trained_once_with_the_mean_advantage():
    # root 0 (A=+1), branch 1 from root at token 3 (A=-1), branch 2 from root at token 5 (A=+0.5)
    per_token = shared_prefix_advantages([1.0, -1.0, 0.5], [None, 0, 0], [0, 3, 5], [6, 6, 6])
    assert per_token[0] == pytest.approx([(1 - 1 + 0.5) / 3] * 3 + [(1 + 0.5) / 2] * 2 + [1.0])
    assert per_token[1] == [-1.0] * 6 and per_token[2] == [0.5] * 6
    mask = [0, 1, 1, 1, 1, 1]
    samples = build_samples([traj(6, mask), traj(6, mask), traj(6, mask)], [1.0, -1.0, 0.5], [None, 0, 0], [0, 3, 5])
    assert samples[1].loss_mask == [0, 0, 0, 1, 1, 1]  # its prefix is the parent's
    assert samples[2].loss_mask == [0, 0, 0, 0, 0, 1]
    assert samples[0].loss_mask == mask


def test_mask_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="policy_mask has 2 entries for 3 tokens"):
        build_samples([traj(3, [0, 1])], [0.0])
