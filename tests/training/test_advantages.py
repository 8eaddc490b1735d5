import math

import pytest

from star.training.advantages import group_advantages
from star.training.dapo import fill, filter_groups, is_informative


def test_grpo_normalises_within_each_group():
    # group 1: mean 2, sample std sqrt(((1)^2+0+(1)^2)/2)=1 -> (-1, 0, 1)
    (a, b) = group_advantages([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]])
    assert a == pytest.approx([-1.0 / 1.0001, 0.0, 1.0 / 1.0001], abs=1e-9)  # std + eps 1e-4
    assert b == [0.0, 0.0, 0.0]  # all-equal group: no signal


def test_grpo_hand_computed_binary_group():
    # rewards (1,0,0,0): mean .25, sample std sqrt((.5625+3*.0625)/3)=0.5
    (adv,) = group_advantages([[1, 0, 0, 0]])
    assert adv == pytest.approx([x / 0.5001 * 0.5 for x in (1.5, -0.5, -0.5, -0.5)], abs=1e-9)
    assert math.isclose(sum(adv), 0.0, abs_tol=1e-9)


def test_other_estimators_in_the_registry():
    assert group_advantages([[1, 0, 0, 0]], "dr_grpo")[0] == pytest.approx([0.75, -0.25, -0.25, -0.25])
    assert group_advantages([[1, 0, 0, 0]], "rloo")[0] == pytest.approx([1.0, -1 / 3, -1 / 3, -1 / 3])
    with pytest.raises(ValueError, match="unknown advantage"):
        group_advantages([[1, 0]], "ppo")


def test_dapo_drops_groups_whose_rewards_are_all_equal():
    groups = [[0, 0, 0, 0], [1, 0, 1, 0], [5, 5, 5, 5], [0.2, 0.2, 0.2, 0.3]]
    assert filter_groups(groups) == [1, 3]
    assert not is_informative([1.0])


def test_dapo_oversampling_fills_to_the_target_only():
    kept, surplus = fill(["a"], ["b", "c", "d"], target=3)
    assert kept == ["a", "b", "c"] and surplus == 1
    assert fill(["a", "b"], [], 4) == (["a", "b"], 0)


def test_advantage_epsilon_is_a_config_field_with_trls_default():
    from star.training.rl_config import GRPOConfig

    assert GRPOConfig().advantage_epsilon == 1e-4
    # A near-uniform group: with TRL's 1e-4 our advantages match TRL's (r - mean) / (std + 1e-4) exactly;
    # the old 1e-6 made them 1.21x larger.
    rewards = [1.0, 1.0005, 1.0, 1.001]
    mean = sum(rewards) / 4
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / 3)
    trl = [(r - mean) / (std + 1e-4) for r in rewards]
    assert group_advantages([rewards])[0] == pytest.approx(trl, rel=1e-9)
    old = group_advantages([rewards], eps=1e-6)[0]
    assert old[3] / trl[3] == pytest.approx(1.21, abs=0.01)
    with pytest.raises(ValueError, match="epsilon"):
        group_advantages([rewards], eps=-1.0)
    with pytest.raises(ValueError):
        GRPOConfig(advantage_epsilon=-1e-4)


def test_a_second_estimator_of_one_name_is_refused_not_overwritten():
    import pytest

    from star.training.advantages import ADVANTAGES, register

    before = ADVANTAGES["grpo"]
    with pytest.raises(ValueError, match="'grpo' is already registered"):
        register("grpo")(lambda group, eps: [0.0] * len(group))
    assert ADVANTAGES["grpo"] is before
