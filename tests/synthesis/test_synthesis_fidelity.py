"""The fidelity table's computation (star.synthesis.fidelity) on small fixed inputs."""

from __future__ import annotations

import pytest

from star.synthesis import fidelity


def _q(level: str, days: int, budget: float = 100.0) -> dict:
    return {"level": level, "days": days, "visiting_city_number": {3: 1, 5: 2, 7: 3}[days], "budget": budget}


REAL = [_q("easy", 3), _q("easy", 5), _q("medium", 3), _q("hard", 7)]
SYN = [_q("easy", 3), _q("easy", 3), _q("easy", 5), _q("medium", 3), _q("hard", 7), _q("hard", 7)]


def test_success_by_group_counts_level_shape_and_all():
    groups = fidelity.success_by_group(REAL, [1, 0, 1, 1])
    assert groups == {"easy": (2, 0.5), "medium": (1, 1.0), "hard": (1, 1.0), "3d/1c": (2, 1.0), "5d/2c": (1, 0.0),
                      "7d/3c": (1, 1.0), "all": (4, 0.75)}
    assert list(groups) == ["easy", "medium", "hard", "3d/1c", "5d/2c", "7d/3c", "all"]
    with pytest.raises(ValueError, match="4 queries but 3 outcomes"):
        fidelity.success_by_group(REAL, [1, 0, 1])


def test_success_rows_flag_the_groups_outside_the_tolerance():
    real = fidelity.success_by_group(REAL, [1, 0, 1, 1])
    syn = fidelity.success_by_group(SYN, [1, 1, 0, 1, 1, 0])
    rows = {r["group"]: r for r in fidelity.success_rows(real, syn, tolerance=0.05)}
    assert rows["easy"]["synthetic"] == pytest.approx(2 / 3) and rows["easy"]["diff"] == pytest.approx(1 / 6)
    assert not rows["easy"]["within"]
    assert rows["medium"]["within"] and rows["medium"]["diff"] == 0
    assert rows["hard"]["diff"] == pytest.approx(-0.5) and not rows["hard"]["within"]
    assert rows["all"]["real_n"] == 4 and rows["all"]["synthetic_n"] == 6
    # exactly at the tolerance counts as within
    edge = fidelity.success_rows({"g": (20, 0.80)}, {"g": (20, 0.85)}, tolerance=0.05)
    assert edge[0]["within"]
    table = fidelity.success_table(real, {"syn": syn})
    assert "| easy | 50.0% (2) | 66.7% (3) +16.7 OUT |" in table
    assert "| medium | 100.0% (1) | 100.0% (1) +0.0 ok |" in table


def test_budget_ratio_quantiles_and_their_relative_tolerance():
    real = fidelity.budget_ratios([_q("easy", 3, b) for b in (200, 300, 400, 500, 600)], [100] * 5)
    assert real == {"easy": [2.0, 3.0, 4.0, 5.0, 6.0]}
    assert fidelity.quantiles(real["easy"]) == [3.0, 4.0, 5.0]
    assert fidelity.quantiles([1.0, 2.0], (0.5,)) == [1.5]
    close = {"easy": [2.1, 3.2, 4.2, 5.3, 6.0]}   # q25/q50/q75 = 3.2 / 4.2 / 5.3: +7% / +5% / +6%
    far = {"easy": [2.0, 2.5, 3.0, 5.0, 6.0]}     # q50 = 3.0: -25%
    (ok,), (bad,) = fidelity.budget_rows(real, close), fidelity.budget_rows(real, far)
    assert ok["within"] and ok["relative"] == pytest.approx([0.2 / 3, 0.05, 0.06])
    assert not bad["within"] and bad["relative"][1] == pytest.approx(-0.25)
    # a query without a plan (cost None) is left out
    assert fidelity.budget_ratios([_q("hard", 3, 300), _q("hard", 3, 300)], [None, 150]) == {"hard": [2.0]}
    assert "OUT" in fidelity.budget_table(real, {"far": far}) and "ok" in fidelity.budget_table(real, {"c": close})
    with pytest.raises(ValueError, match="no values"):
        fidelity.quantiles([])


def test_the_generated_worlds_synthetic_queries_are_as_hard_for_the_teacher_as_the_real_ones(real_db, generated_db,
                                                                                            queries_dir):
    """The fidelity bench's claim, on a smaller draw (600 synthetic queries): built-in teacher success by
    level and by (days, cities) on the generated world within 8 points of the 180 real validation queries
    on the real database (the bench's ±5 at 1,500 queries, plus this draw's sampling noise). A denser
    world (every state's cities joined by flights and roads) is 5-11 points too easy and fails."""
    from star.teachers.cli_teacher import run_teacher
    from star.teachers.builtin import BuiltinTeacher
    from star.evaluation.queries import load_queries
    from star.synthesis.pipeline import synthesize

    def success(db, queries):
        return fidelity.success_by_group(queries, [float(t.success) for t in
                                                   run_teacher(BuiltinTeacher(db), queries, 1, 0, progress=False)])

    real_queries = load_queries(queries_dir / "validation.jsonl")
    rows = fidelity.success_rows(success(real_db, real_queries),
                                 success(generated_db, synthesize(generated_db, 600, seed=11)), tolerance=0.08)
    assert all(r["within"] for r in rows), [(r["group"], round(r["diff"], 3)) for r in rows if not r["within"]]
