"""Report statistics on fixed inputs: intervals, paired tests, multiple-comparison correction, factorial effects."""

from __future__ import annotations

import numpy as np
import pytest

from star import stats


def test_bootstrap_interval_brackets_the_mean_and_is_reproducible():
    values = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1] * 5  # 60 %
    ci = stats.bootstrap_ci(values, n_boot=2000, seed=3)
    assert ci.estimate == pytest.approx(0.6)
    assert 0.44 < ci.low < 0.6 < ci.high < 0.76
    assert stats.bootstrap_ci(values, n_boot=2000, seed=3) == ci
    assert stats.bootstrap_ci([1] * 20).low == 1.0  # no spread, no interval
    assert ci.fmt() == f"60.0 [{100 * ci.low:.1f}, {100 * ci.high:.1f}]"


def test_exact_mcnemar_matches_hand_computed_binomial_tails():
    assert stats.mcnemar_exact(0, 6) == pytest.approx(2 / 64)
    assert stats.mcnemar_exact(1, 9) == pytest.approx(2 * (1 + 10) / 1024)
    assert stats.mcnemar_exact(5, 5) == 1.0
    assert stats.mcnemar_exact(0, 0) == 1.0


def test_sign_flip_test_is_exact_for_few_pairs():
    # 5 equal positive differences: only all-plus / all-minus reach |sum| = 5 -> p = 2/32
    assert stats.sign_flip_test([0.5] * 5) == pytest.approx(2 / 32)
    assert stats.sign_flip_test([0.0, 0.0]) == 1.0
    assert stats.sign_flip_test([0.5, -0.5]) == 1.0


def test_paired_test_uses_the_pairing():
    a = np.array([0] * 10 + [1] * 30)
    b = np.array([1] * 10 + [1] * 30)            # b solves 10 more, never fewer
    t = stats.paired_test(a, b, ("a", "b"), seed=0)
    assert t.method == "exact McNemar" and (t.a_only, t.b_only) == (0, 10)
    assert t.difference.estimate == pytest.approx(0.25) and t.p_value == pytest.approx(2 / 1024)
    means = stats.paired_test(a * 0.5, b * 0.75, seed=0)  # several samples per query: not binary
    assert means.method == "paired sign-flip permutation"
    with pytest.raises(ValueError, match="same queries"):
        stats.paired_test([1, 0], [1, 0, 1])


def test_holm_adjustment():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])


def test_align_keeps_the_queries_every_variant_has():
    ids, arrays = stats.align({"x": {"q1": 1, "q2": 0, "q3": 1}, "y": {"q2": 1, "q3": 1}})
    assert ids == ["q2", "q3"]
    assert arrays["x"].tolist() == [0, 1] and arrays["y"].tolist() == [1, 1]


def _grid(effect_a: float, effect_b: float, interaction: float, n: int = 80, seed: int = 0):
    rng = np.random.default_rng(seed)
    base = rng.random(n) * 0.4 + 0.2
    cells = {}
    for i, a in enumerate(["a0", "a1"]):
        for j, b in enumerate(["b0", "b1"]):
            p = np.clip(base + effect_a * i + effect_b * j + interaction * (i * j - 0.25), 0, 1)
            cells[(a, b)] = (rng.random(n) < p).astype(float)
    return cells


def test_factorial_finds_a_real_main_effect_and_not_a_null_one():
    effects = {e.term: e for e in stats.factorial_effects(_grid(0.4, 0.0, 0.0), ["A", "B"], n_perm=400, seed=1)}
    assert effects["A"].p_value < 0.01
    assert effects["A"].levels["a1"] > 0 > effects["A"].levels["a0"]
    assert effects["B"].p_value > 0.05
    assert set(effects) == {"A", "B", "A x B"}


def test_factorial_decomposition_on_exact_cell_means():
    # Per-query outcomes constant within a cell: cell means 0.2, 0.4 / 0.6, 1.0 (interaction +0.2 at a1,b1).
    n = 10
    cells = {("a0", "b0"): np.full(n, 0.2), ("a0", "b1"): np.full(n, 0.4),
             ("a1", "b0"): np.full(n, 0.6), ("a1", "b1"): np.full(n, 1.0)}
    effects = {e.term: e for e in stats.factorial_effects(cells, ["A", "B"], n_perm=200)}
    assert effects["A"].levels["a1"] == pytest.approx(0.25)   # (0.6+1.0)/2 - 0.55
    assert effects["B"].levels["b1"] == pytest.approx(0.15)   # (0.4+1.0)/2 - 0.55
    assert effects["A x B"].levels["a1 x b1"] == pytest.approx(0.05)
    assert effects["A x B"].levels["a1 x b0"] == pytest.approx(-0.05)


def test_factorial_needs_a_full_grid():
    cells = {("a0", "b0"): np.ones(5), ("a1", "b1"): np.ones(5), ("a0", "b1"): np.ones(5)}
    with pytest.raises(ValueError, match="full grid"):
        stats.factorial_effects(cells, ["A", "B"], n_perm=10)
