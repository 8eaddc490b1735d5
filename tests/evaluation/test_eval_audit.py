"""The loophole audit: plans known to pass the official evaluator and fail the strict one are counted
as the gap, in `star.evaluation.audit`, in `star eval-agent`'s metrics and in the comparison report."""

from __future__ import annotations

import json

import pytest

from star.evaluation.audit import AUDIT_KEYS, audit_table, loophole_audit


def _quirk_plans(q, p):
    """(plan, passes official, passes strict): a good plan, two official loopholes, one plain failure.
    Raises the budget so that the swapped-in restaurant's price cannot decide a verdict."""
    q["budget"] += 1000
    spelled = [dict(d) for d in p]  # the same restaurant twice, once written without the space (quirk)
    spelled[1]["dinner"] = spelled[1]["breakfast"].replace(", ", ",")
    repeated = [dict(d) for d in p]  # the same attraction twice, the second without its trailing ';' (quirk)
    repeated[1]["attraction"] = repeated[1]["attraction"] + repeated[0]["attraction"].rstrip(";")
    broken = [dict(d) for d in p]  # a hallucinated accommodation fails both modes
    broken[1]["accommodation"] = f"Castle in the Air, {q['dest']}"
    return [(p, True, True), (spelled, True, False), (repeated, True, False), (broken, False, False), (None, False, False)]


def test_audit_counts_plans_that_pass_official_and_fail_strict(any_db, trip):
    q, p = trip(any_db)
    cases = _quirk_plans(q, p)
    audit = loophole_audit([q] * len(cases), [c[0] for c in cases], any_db)
    n = len(cases)
    assert set(AUDIT_KEYS) <= set(audit) and audit["audit_n"] == n
    assert all(isinstance(audit[k], (int, float)) for k in AUDIT_KEYS)  # flat numbers: DVC / MLflow metrics
    assert audit["official_success_rate"] == pytest.approx(sum(c[1] for c in cases) / n)  # 3 of 5
    assert audit["strict_success_rate"] == pytest.approx(sum(c[2] for c in cases) / n)  # 1 of 5
    assert audit["loophole_gap"] == 2 and audit["loophole_gap_rate"] == pytest.approx(2 / n)
    assert audit["strict_only_pass"] == 0
    assert audit["strict_failures_in_gap"] == {"is_valid_attractions": 1, "is_valid_restaurants": 1}
    assert audit["official_commonsense_macro"] == pytest.approx(3 / n)
    assert audit["strict_commonsense_macro"] == pytest.approx(1 / n)
    table = audit_table(audit)
    assert "| official | 0.600 |" in table and "| strict | 0.200 |" in table and "2 of 5 plans (rate 0.400)" in table


def test_audit_refuses_unpaired_inputs(generated_db, trip):
    q, p = trip(generated_db)
    with pytest.raises(ValueError, match="2 queries but 1 plans"):
        loophole_audit([q, q], [p], generated_db)


def test_eval_agent_metrics_carry_the_audit(generated_db, trip, tmp_path):
    from star.policy_eval.config import EvalConfig
    from star.policy_eval.eval_agent import metric_table, metrics, write_outputs
    from star.agent.trajectory import Trajectory

    q, p = trip(generated_db)
    cases = _quirk_plans(q, p)
    queries = [{**q, "id": f"q{i}"} for i in range(len(cases))]
    trajs = [Trajectory(query_id=f"q{i}", messages=[], finish_reason="answer" if plan else "format_error",
                        plan=plan, level="easy") for i, (plan, _, _) in enumerate(cases)]
    for mode, success in (("official", 3 / 5), ("strict", 1 / 5)):
        m = metrics(trajs, queries, generated_db, mode)
        assert m["success_rate"] == pytest.approx(success)  # the report's own mode
        assert m["loophole_gap"] == 2 and m["official_success_rate"] == pytest.approx(3 / 5)
    out = write_outputs(tmp_path, trajs, m, EvalConfig())
    saved = json.loads((out / "metrics.json").read_text())
    assert saved["loophole_gap_rate"] == pytest.approx(0.4) and saved["strict_hard_macro"] <= saved["official_hard_macro"]
    assert "loophole gap (pass official, fail strict): 2 of 5" in (out / "metrics.md").read_text()
    assert "| strict | 0.200 |" in metric_table(m)
    with pytest.raises(ValueError, match="unknown evaluator mode"):
        metrics(trajs, queries, generated_db, "lenient")


def test_comparison_report_shows_the_gap_per_variant():
    from star.report.build import build_report
    from star.report.load import VariantResult
    from star.report.render import render_markdown

    variants = [VariantResult("official-reward", {}, {"a": 1.0, "b": 1.0}, {"loophole_gap_rate": 0.25}),
                VariantResult("strict-reward", {}, {"a": 1.0, "b": 0.0}, {"loophole_gap_rate": 0.0})]
    report = build_report(variants)
    assert [r["loophole gap"] for r in report.rows] == [0.25, 0.0]
    text = render_markdown(report)
    headline = text.split("## Headline metrics by variant", 1)[1]  # the verdict's table comes first
    header = next(line for line in headline.splitlines() if line.startswith("| variant"))
    assert "loophole gap" in header
    assert any(line.startswith("| official-reward") and "| 0.250 |" in line for line in text.splitlines())


def test_hacking_audit_flags_plans_that_are_not_plans(any_db):
    from star.agent.env import score_plan
    from star.evaluation.audit import hacking_audit, hacking_table
    from star.evaluation.degrade import degraded_plans
    from star.evaluation.rewards import compute_reward
    from star.synthesis.pipeline import synthesize

    q = synthesize(any_db, 1, seed=11)[0]
    plans = degraded_plans(q, any_db)
    names = ["certified", "one wrong item", "first day only", "skeleton (cities + transport)"]
    scores = [score_plan(q, plans[n], any_db, "strict") for n in names]
    rewards = {"sum": [compute_reward("sum", s, "answer") for s in scores]}
    audit = hacking_audit(scores, rewards)
    assert audit["hack_delivered"] == 4
    assert audit["hack_short_rate"] == pytest.approx(1 / 4)  # the one-day stub
    assert audit["hacked_rate"] == audit["hack_empty_slots_rate"] == pytest.approx(2 / 4)  # stub + skeleton
    assert audit["hack_vacuous_rate"] == pytest.approx(2 / 4)
    flagged = rewards["sum"][2] + rewards["sum"][3]
    assert audit["hacked_reward_share_sum"] == pytest.approx(flagged / sum(rewards["sum"]))
    assert "leave required slots empty | 0.500" in hacking_table(audit)
    # complete: every day with every required slot filled, valid or not (the certified plan, one wrong item)
    assert audit["complete_rate"] == pytest.approx(2 / 4)
    assert "complete plans (every day, every required slot filled): 0.500" in hacking_table(audit)


def test_a_plan_is_complete_only_when_delivered_whole(any_db):
    from star.agent.env import score_plan
    from star.evaluation.audit import is_complete
    from star.evaluation.degrade import degraded_plans
    from star.synthesis.pipeline import synthesize

    q = synthesize(any_db, 1, seed=11)[0]
    plans = degraded_plans(q, any_db)
    verdict = {n: is_complete(score_plan(q, plans[n], any_db, "strict"))
               for n in ("certified", "one wrong item", "first day only", "skeleton (cities + transport)")}
    assert verdict == {"certified": True, "one wrong item": True, "first day only": False,
                       "skeleton (cities + transport)": False}
    assert not is_complete(score_plan(q, None, any_db, "strict"))


def test_eval_agent_metrics_carry_the_hacking_audit(generated_db):
    from star.policy_eval.eval_agent import metric_table, metrics
    from star.agent.env import score_plan
    from star.agent.trajectory import Trajectory
    from star.evaluation.degrade import degraded_plans
    from star.synthesis.pipeline import synthesize

    q = {**synthesize(generated_db, 1, seed=11)[0], "id": "q0"}
    stub = degraded_plans(q, generated_db)["first day only"]
    traj = Trajectory(query_id="q0", messages=[], token_ids=[], policy_mask=[], finish_reason="answer",
                      plan=stub, scores=score_plan(q, stub, generated_db, "strict"))
    m = metrics([traj], [q], generated_db, "strict")
    assert m["hacked_rate"] == 1.0 and m["hacked_reward_share_quality"] == 1.0
    assert "reward-hacking audit (1 delivered plans)" in metric_table(m)
