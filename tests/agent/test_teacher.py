"""The built-in teacher plays the protocol through the env and produces natural, scored trajectories."""

from __future__ import annotations

from collections import Counter

from star.agent.config import AgentConfig
from star.teachers.sft_data import roles_problem
from star.teachers.builtin import BuiltinTeacher
from star.agent.turns import parse_turn
from star.evaluation.evaluator import evaluate_plan


def test_teacher_trajectories_follow_the_protocol_and_successes_pass_the_evaluator(generated_db, synthetic_queries):
    teacher = BuiltinTeacher(generated_db)
    trajs = [teacher.run(q, str(i), 0, seed=i) for i, q in enumerate(synthetic_queries)]
    for t in trajs:
        assert roles_problem(t.messages) is None
        assert all(parse_turn(m["content"]).ok for m in t.messages if m["role"] == "assistant")
        assert t.finish_reason == "answer" and 0 < t.tool_calls <= 60
    successes = [t for t in trajs if t.success]
    assert len(successes) >= len(trajs) // 2
    for t, q in zip(trajs, synthetic_queries):
        if t.success:  # an independent re-evaluation on the full database agrees
            assert evaluate_plan(q, t.plan, generated_db, mode="strict").success
            assert evaluate_plan(q, t.plan, generated_db, mode="official").success


def test_teacher_behaves_like_an_agent_errors_repeats_and_varied_order(generated_db, synthetic_queries):
    teacher = BuiltinTeacher(generated_db)
    trajs = [teacher.run(q, str(i), s, seed=100 * i + s) for i, q in enumerate(synthetic_queries) for s in range(2)]
    assert sum(t.tool_errors for t in trajs) > 0  # misspelt cities / badly formatted dates, then corrected
    first_searches = Counter()
    repeated = 0
    for t in trajs:
        calls = [m["content"].split('"name": "')[1].split('"')[0] for m in t.messages
                 if m["role"] == "assistant" and "<tool_call>" in m["content"]]
        first_searches[next(c for c in calls if c != "SearchCity")] += 1
        contents = [m["content"].split("<tool_call>")[1] for m in t.messages
                    if m["role"] == "assistant" and "<tool_call>" in m["content"]]
        repeated += len(contents) != len(set(contents))
    assert len(first_searches) >= 2 and repeated > 0


def test_same_seed_same_trajectory_other_seed_other_path(generated_db, synthetic_queries):
    teacher = BuiltinTeacher(generated_db)
    q = synthetic_queries[1]
    a, b = teacher.run(q, "x", 0, seed=5), teacher.run(q, "x", 0, seed=5)
    assert a.messages == b.messages
    others = [teacher.run(q, "x", 0, seed=s).messages for s in range(6, 12)]
    assert any(m != a.messages for m in others)


def test_teacher_fails_naturally_when_tools_are_down(generated_db, synthetic_queries):
    teacher = BuiltinTeacher(generated_db, AgentConfig(failure_rate=1.0))
    t = teacher.run(synthetic_queries[0], "0", 0, seed=0)
    assert t.finish_reason == "answer" and not t.success
    assert t.tool_errors == t.tool_calls > 0


def test_teacher_on_the_real_validation_queries(real_db, queries_dir):
    from star.evaluation.queries import load_queries

    queries = load_queries(queries_dir / "validation.jsonl")[::30]
    teacher = BuiltinTeacher(real_db)
    trajs = [teacher.run(q, str(i), 0, seed=i) for i, q in enumerate(queries)]
    assert all(t.finish_reason == "answer" for t in trajs)
    for t, q in zip(trajs, queries):
        if t.success:
            assert evaluate_plan(q, t.plan, real_db, mode="official").success
    assert any(t.success for t in trajs)


def test_teacher_probes_reachability_before_choosing_cities(any_db):
    """Multi-city queries whose origin reaches few of the state's cities (the hard kind for a teacher that
    picks cities by price alone): probing which cities the origin reaches first finds a certified route."""
    from star.teachers.config import BuiltinTeacherConfig
    from star.synthesis.config import SamplingConfig, SynthesisConfig
    from star.synthesis.pipeline import synthesize

    cfg = SynthesisConfig(sampling=SamplingConfig(day_choices=(5, 7), reach_share_weights=(1, 1, 1, 0, 0)))
    queries = synthesize(any_db, 16, seed=3, cfg=cfg)
    wins = {}
    for probes in (12, 0):
        teacher = BuiltinTeacher(any_db, config=BuiltinTeacherConfig(reach_probes=probes))
        trajs = [teacher.run(q, str(i), 0, seed=i) for i, q in enumerate(queries)]
        wins[probes] = sum(t.success for t in trajs)
        if probes:
            t, q = trajs[0], queries[0]
            calls = [m["content"] for m in t.messages if m["role"] == "assistant" and "<tool_call>" in m["content"]]
            # right after the city list: a drive from the origin to a city of the state
            assert '"name": "GoogleDistanceMatrix"' in calls[1] and f'"departure": "{q["org"]}"' in calls[1]
            for t, q in zip(trajs, queries):
                if t.success:
                    assert evaluate_plan(q, t.plan, any_db, mode="strict").success
    assert wins[12] >= 10 and wins[12] >= wins[0] + 5, wins


def _same_episodes(db, queries, think_a: str, think_b: str):
    """(query, episode a, episode b, a's turns, b's turns) for two teachers that differ only in `think`, same seeds;
    their actions and answers must agree."""
    from star.teachers.config import BuiltinTeacherConfig

    teacher_a, teacher_b = (BuiltinTeacher(db, config=BuiltinTeacherConfig(think=t)) for t in (think_a, think_b))
    for i, q in enumerate(queries[:6]):
        a, b = teacher_a.run(q, str(i), 0, seed=i), teacher_b.run(q, str(i), 0, seed=i)
        turns_a, turns_b = ([parse_turn(m["content"]) for m in e.messages if m["role"] == "assistant"] for e in (a, b))
        assert [(t.tool, t.arguments, t.answer) for t in turns_a] == [(t.tool, t.arguments, t.answer) for t in turns_b]
        yield q, a, b, turns_a, turns_b


def test_brief_thinking_changes_only_the_thoughts(generated_db, synthetic_queries):
    for _, a, b, _, turns_b in _same_episodes(generated_db, synthetic_queries, "reasoned", "brief"):
        assert all(t.ok for t in turns_b) and b.success == a.success
        assert {t.think for t in turns_b} <= {f"Next: {t.tool or 'the plan'}." for t in turns_b}


def test_route_thinking_names_the_trip_once_first_and_changes_nothing_else(generated_db, synthetic_queries):
    """think=route: the first thought says where the trip goes (the one copy out of the query a small model
    must make); every action, answer and later thought is brief's."""
    for q, a, b, turns_a, turns_b in _same_episodes(generated_db, synthetic_queries, "brief", "route"):
        assert turns_b[0].think == f"{q['org']} to {q['dest']}. {turns_a[0].think}"
        assert [t.think for t in turns_b[1:]] == [t.think for t in turns_a[1:]]
        assert b.success == a.success and b.plan == a.plan


def test_inline_layout_changes_only_the_newlines_between_tags(generated_db, synthetic_queries):
    from star.teachers.config import BuiltinTeacherConfig

    lines = BuiltinTeacher(generated_db, config=BuiltinTeacherConfig(think="brief"))
    inline = BuiltinTeacher(generated_db, config=BuiltinTeacherConfig(think="brief", layout="inline"))
    for i, q in enumerate(synthetic_queries[:6]):
        a, b = lines.run(q, str(i), 0, seed=i), inline.run(q, str(i), 0, seed=i)
        replies_a = [m["content"] for m in a.messages if m["role"] == "assistant"]
        replies_b = [m["content"] for m in b.messages if m["role"] == "assistant"]
        assert [parse_turn(r) for r in replies_a] == [parse_turn(r) for r in replies_b]
        assert all(parse_turn(r).ok for r in replies_b) and b.success == a.success
        for reply in replies_b:  # every tag touches its neighbour: none follows a bare newline
            assert reply.startswith("<think>Next: ") and "\n<" not in reply and ">\n" not in reply


def test_a_self_route_mistake_is_followed_by_the_right_leg_and_carries_no_sft_loss(generated_db, synthetic_queries):
    from star.teachers.config import BuiltinTeacherConfig
    from star.teachers.sft_data import select

    plain = BuiltinTeacher(generated_db, config=BuiltinTeacherConfig(think="brief"))
    zero = BuiltinTeacher(generated_db, config=BuiltinTeacherConfig(think="brief", p_self_route=0.0))
    always = BuiltinTeacher(generated_db, config=BuiltinTeacherConfig(think="brief", p_self_route=1.0))
    mistakes = 0
    for i, q in enumerate(synthetic_queries[:8]):
        assert zero.run(q, str(i), 0, seed=i).messages == plain.run(q, str(i), 0, seed=i).messages  # same stream
        t = always.run(q, str(i), 0, seed=i)
        msgs = t.messages
        for j, m in enumerate(msgs):
            turn = parse_turn(m["content"]) if m["role"] == "assistant" else None
            if turn is None or turn.kind != "tool_call" or turn.tool != "GoogleDistanceMatrix":
                continue
            a, b = turn.arguments["departure"], turn.arguments["destination"]
            if a == b:  # the mistake: no route answer, no loss, then the same mode's search for a real leg
                mistakes += 1
                assert m.get("train") is False
                assert f"No route data from {a} to {a}." in msgs[j + 1]["content"]
                fixed = parse_turn(msgs[j + 2]["content"])
                assert fixed.tool == "GoogleDistanceMatrix" and fixed.arguments["mode"] == turn.arguments["mode"]
                assert a in (fixed.arguments["departure"], fixed.arguments["destination"])
                assert fixed.arguments["departure"] != fixed.arguments["destination"]
                assert "train" not in msgs[j + 2]
            else:
                assert "train" not in m
    assert mistakes > 0
    kept, _ = select(always.run(q, str(i), 0, seed=i) for i, q in enumerate(synthetic_queries[:8]))
    assert kept and any(m.get("train") is False for r in kept for m in r["messages"])  # the mark reaches SFT data
