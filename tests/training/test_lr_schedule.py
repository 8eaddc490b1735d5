"""The GRPO/SFT learning-rate schedule: linear warm-up, then constant (the recipe's RL) or linear decay to 0."""
import torch

from star.training.deepspeed_setup import linear_schedule


def lrs(total: int, warmup_ratio: float, decay: bool) -> list[float]:
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    sched = linear_schedule(opt, total, warmup_ratio, decay=decay)
    out = []
    for _ in range(total):
        out.append(round(sched.get_last_lr()[0], 6))
        opt.step()
        sched.step()
    return out


def test_warm_up_then_constant():
    assert lrs(8, 0.25, decay=False) == [0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]


def test_warm_up_then_linear_decay_towards_zero():
    assert lrs(6, 1 / 3, decay=True) == [0.5, 1.0, 1.0, 0.75, 0.5, 0.25]


def test_grpo_config_keeps_the_recipes_constant_lr_unless_asked():
    from star.training.rl_config import GRPOConfig

    assert GRPOConfig().lr_decay is False
    assert GRPOConfig(lr_decay=True).lr_decay is True
