from star.training.arpo import plan_branches, turn_entropies, turn_starts


def test_turn_starts_are_the_policy_turn_boundaries():
    #        prompt   turn0   obs   turn1  obs turn2
    mask = [0, 0, 0, 1, 1, 1, 0, 0, 1, 1, 0, 1]
    assert turn_starts(mask) == [3, 8, 11]


def test_turn_entropy_is_the_mean_over_the_first_k_tokens_of_each_turn():
    ent = [0, 0, 0, 1.0, 3.0, 9.0, 0, 0, 2.0, 4.0, 0, 5.0]
    assert turn_entropies(ent, [3, 8, 11], k=2) == [2.0, 3.0, 5.0]


def test_branches_where_entropy_rises_above_the_initial_by_the_threshold():
    entropies = [[1.0, 1.05, 2.0, 1.6], [2.0, 2.5, 1.0]]
    plans = plan_branches(entropies, budget=10, threshold=0.3, per_point=1)
    assert [(p.parent, p.turn) for p in plans] == [(0, 2), (0, 3), (1, 1)]  # highest rise first


def test_branching_respects_the_group_budget_and_per_point_cap():
    entropies = [[1.0, 3.0, 2.0], [1.0, 2.5]]
    plans = plan_branches(entropies, budget=4, threshold=0.1, per_point=2)
    assert len(plans) == 4
    assert [(p.parent, p.turn) for p in plans] == [(0, 1), (0, 1), (1, 1), (1, 1)]
    assert plan_branches(entropies, budget=0, threshold=0.1, per_point=2) == []
    assert plan_branches([[5.0, 1.0]], budget=3, threshold=0.1, per_point=2) == []  # entropy fell: no branch


def test_a_branch_replays_the_parents_prefix_exactly_then_samples_on(smoke_dir, generated_db):
    """Parent: a scripted two-turn episode (tool call, then answer) played through the real env."""
    import json

    from star.agent.config import AgentConfig
    from star.rollout.backends.transformers import TransformersBackend
    from star.rollout.base import Generation
    from star.rollout.config import RolloutConfig
    from star.rollout.engine import RolloutEngine
    from star.synthesis.pipeline import synthesize
    from star.rollout.lockstep import run_lockstep as run_episodes
    from star.training.arpo import branch_episode
    from star.training.batch import build_samples
    from star.training.models import load_model, load_tokenizer

    tok = load_tokenizer(smoke_dir)
    engine = RolloutEngine(TransformersBackend(load_model(smoke_dir), tok), generated_db,
                           AgentConfig(max_context=4000, tool_budget=3),
                           RolloutConfig(max_new_tokens=6, progress=False, seed=5))
    st = engine.stepper
    query = synthesize(generated_db, 1, seed=3)[0]
    call = {"name": "SearchAccommodation", "arguments": {"city": query["dest"]}}
    turns = [f"<think>stays</think>\n<tool_call>{json.dumps(call)}</tool_call>", "<think>done</think>\n<answer>-</answer>"]
    parent_ep = st.start(0, query, "q", 0)
    for text in turns:
        ids = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        st.execute(parent_ep, Generation(ids, [-0.5] * len(ids)), 64)
    parent = st.finish(parent_ep)
    assert parent.tool_calls == 1 and parent.finish_reason == "answer"

    ep = branch_episode(st, parent, query, turn=1, index=1, branch_id=1)
    start = turn_starts(parent.policy_mask)[1]
    assert ep is not None and ep.ids == parent.token_ids[:start]  # same observation tokens, byte for byte
    (branch,) = run_episodes(st, engine.backend, [ep])
    assert branch.token_ids[:start] == parent.token_ids[:start]
    assert branch.token_ids[start:] != parent.token_ids[start:]  # sampled afresh by the policy
    samples = build_samples([parent, branch], [1.0, -1.0], [None, 0], [0, start])
    assert not any(samples[1].loss_mask[:start])  # the shared prefix trains once, on the parent
    assert samples[0].advantages[start - 1] == 0.0 and samples[0].advantages[start] == 1.0
