"""Budgets: the original per-level formula, never below the certified plan's cost."""

from __future__ import annotations

import math
import random

import pytest

from star.synthesis.budget import estimate_budget, formula_budget, r100, trip_costs
from star.synthesis.elements import sample_elements
from star.synthesis.solver import solve

from synth_world import query, tiny_world


def test_r100_is_pythons_bankers_rounding_to_hundreds():
    assert [r100(x) for x in (1249, 1250, 1350, 1351, 49)] == [1200, 1200, 1400, 1400, 0]


def test_trip_costs_use_the_destination_prices():
    db = tiny_world()
    q = query()
    c = trip_costs(db, q)
    # flights Origin->Alpha: only F0000001 (100); hotels 80 and 120; restaurants 10..90 (mean 50)
    assert c["lowest"] == 100 * 2 + 80 * 3 + 10 * 9
    assert c["highest"] == 100 * 2 + 120 * 3 + 90 * 9
    assert c["average"] == 100 * 2 + 100 * 3 + 50 * 9


@pytest.mark.parametrize("level, people, factor", [("easy", 1, 1.0), ("medium", 4, 4 * 0.75), ("hard", 4, 4 * 0.5)])
def test_three_day_formula_per_level(level, people, factor):
    db = tiny_world()
    q = query(level=level, people_number=people)
    c = trip_costs(db, q)
    base = (c["average"] + c["lowest"]) / 2
    assert formula_budget(db, q) == r100(base * factor)


def test_budget_is_raised_to_the_plan_cost_when_the_formula_is_too_low():
    db = tiny_world()
    q = query()
    assert estimate_budget(db, q, plan_cost=None) == formula_budget(db, q)
    assert estimate_budget(db, q, plan_cost=99_999.5) == 100_000
    assert estimate_budget(db, q, plan_cost=50) == formula_budget(db, q)


def test_optional_cap_tightens_budgets_but_never_below_the_plan():
    from star.synthesis.config import BudgetConfig

    db, q = tiny_world(), query()
    assert estimate_budget(db, q, 250, BudgetConfig(max_over_min=1.5)) == 400
    assert estimate_budget(db, q, 250, BudgetConfig(max_over_min=0.5)) == 300
    assert estimate_budget(db, q, 250, BudgetConfig(max_over_min=100.0)) == formula_budget(db, q)


def test_every_certified_budget_covers_its_plan(any_db):
    rng = random.Random(3)
    checked = 0
    for i in range(150):
        q = sample_elements(any_db, ["easy", "medium", "hard"][i % 3], rng)
        res = solve(any_db, q)
        if not res.ok:
            continue
        b = estimate_budget(any_db, q, res.cost)
        assert b >= res.cost and b % 100 == 0
        assert solve(any_db, q, budget=b).status == "optimal"
        checked += 1
    assert checked >= 10


def test_bigger_groups_get_bigger_budgets(generated_db):
    q = sample_elements(generated_db, "medium", random.Random(1), days=5)
    small, big = dict(q, people_number=2), dict(q, people_number=8)
    assert formula_budget(generated_db, big) >= formula_budget(generated_db, small)
    hard4 = dict(q, level="hard", people_number=4)
    # hotels are those sleeping the whole group, as in the original
    assert math.isclose(formula_budget(generated_db, hard4), r100(trip_costs(generated_db, hard4)["average"] * 4 * 0.5))


# -- the ratio method: budgets drawn from the official budget / cheapest-plan quantiles ----------------

def _quantile(values: list[float], p: float) -> float:
    values = sorted(values)
    x = p * (len(values) - 1)
    i = min(int(x), len(values) - 2)
    return values[i] + (x - i) * (values[i + 1] - values[i])


@pytest.mark.parametrize("key", ["easy-3", "medium-5", "hard-7"])
def test_ratio_budgets_follow_the_official_quantiles_on_a_fixed_seed(key):
    from star.synthesis.budget import ratio_budget
    from star.synthesis.config import BudgetConfig

    cfg = BudgetConfig()
    level, days = key.split("-")
    rng = random.Random(7)
    costs = [rng.uniform(1_500, 6_000) for _ in range(3000)]
    ratios = [ratio_budget(c, level, int(days), rng, cfg) / c for c in costs]
    knots = cfg.ratio_quantiles[key]
    for i in range(1, len(knots) - 1):  # every decile within 10% of the official one (rounding to 100 included)
        assert _quantile(ratios, i / (len(knots) - 1)) == pytest.approx(knots[i], rel=0.10), (key, i)
    assert min(ratios) >= 1.0 and min(ratios) >= knots[0] * 0.9


def test_ratio_budgets_never_fall_below_the_certified_cost_and_are_reproducible():
    from star.synthesis.budget import ratio_budget
    from star.synthesis.config import BudgetConfig

    cfg = BudgetConfig(ratio_quantiles={**BudgetConfig().ratio_quantiles, "hard-3": (0.5, 0.6, 0.9)})
    for cost in (1, 99.5, 101, 250.2, 4_321.0):
        draws = [ratio_budget(cost, "hard", 3, random.Random(s), cfg) for s in range(50)]
        assert all(b >= cost and b % 100 == 0 for b in draws)  # a ratio under 1 is floored at the cost
        assert draws == [ratio_budget(cost, "hard", 3, random.Random(s), cfg) for s in range(50)]
    with pytest.raises(ValueError, match="certified plan's cost"):
        ratio_budget(0, "easy", 3, random.Random(0), cfg)
    with pytest.raises(ValueError, match="no budget ratio quantiles for easy-4"):
        ratio_budget(100, "easy", 4, random.Random(0), cfg)


def test_ratio_quantiles_config_is_checked():
    from pydantic import ValidationError

    from star.synthesis.config import BudgetConfig

    with pytest.raises(ValidationError, match="lacks the key"):
        BudgetConfig(ratio_quantiles={"easy-3": (1.0, 2.0)})
    bad = {**BudgetConfig().ratio_quantiles, "easy-5": (3.0, 2.0)}
    with pytest.raises(ValidationError, match="non-decreasing"):
        BudgetConfig(ratio_quantiles=bad)


def test_formula_method_keeps_the_original_estimator(any_db):
    """The old behaviour (the data-difficulty ablation's `mixed_formula_budget`) is one parameter away."""
    from star.synthesis.budget import draw_budget
    from star.synthesis.config import BudgetConfig

    rng = random.Random(5)
    q = next(q for q in (sample_elements(any_db, "medium", rng) for _ in range(50)) if solve(any_db, q).ok)
    cost = solve(any_db, q).cost
    formula = draw_budget(any_db, q, cost, random.Random(0), BudgetConfig(method="formula"))
    assert formula == estimate_budget(any_db, q, cost)
    ratio = draw_budget(any_db, q, cost, random.Random(0), BudgetConfig())
    assert ratio >= cost and ratio % 100 == 0
