"""Generation backends: per-sequence seeds, stops, weight updates, and the OpenAI-compatible HTTP path."""

from __future__ import annotations

import pytest
import torch

from star.rollout.base import SamplingParams
from star.rollout.chat import prompt_ids


@pytest.fixture(scope="module")
def prompts(tiny_backend):
    tok = tiny_backend.tokenizer
    return [prompt_ids(tok, [{"role": "user", "content": text}]) for text in ("Plan a trip.", "Hi", "Dallas to Ohio")]


def test_a_sequence_does_not_depend_on_its_batch(tiny_backend, prompts):
    p = SamplingParams(temperature=1.0, max_new_tokens=12)
    alone = tiny_backend.generate([prompts[0]], p.with_(seed=7))[0]
    batch = tiny_backend.generate(prompts, [p.with_(seed=7), p.with_(seed=8), p.with_(seed=9)])
    assert batch[0].token_ids == alone.token_ids
    assert batch[0].logprobs == pytest.approx(alone.logprobs, abs=1e-4)
    assert tiny_backend.generate([prompts[0]], p.with_(seed=8))[0].token_ids != alone.token_ids
    assert all(len(g.token_ids) == len(g.logprobs) <= 12 for g in batch)


def test_greedy_and_top_p_and_logprobs(tiny_backend, prompts):
    g = tiny_backend.generate([prompts[1]], SamplingParams(temperature=0.0, max_new_tokens=6))[0]
    g2 = tiny_backend.generate([prompts[1]], SamplingParams(temperature=0.0, max_new_tokens=6, seed=3))[0]
    assert g.token_ids == g2.token_ids and g.finish_reason in ("length", "stop")
    tiny = tiny_backend.generate([prompts[1]], SamplingParams(temperature=1.0, top_p=1e-6, max_new_tokens=6, seed=1))[0]
    assert tiny.token_ids == g.token_ids  # top_p -> 0 keeps only the most likely token
    assert all(lp <= 0.0 for lp in g.logprobs)


def test_generation_stops_at_the_end_of_turn_token(tiny_backend, prompts):
    eos = tiny_backend.tokenizer.eos_token_id
    g = tiny_backend.generate([prompts[0]], SamplingParams(max_new_tokens=50, seed=0),
                              forced=[[5, 6, eos, 7, 8]])[0]
    assert g.token_ids == [5, 6, eos] and g.finish_reason == "stop"


def test_update_weights_changes_the_policy_in_place(tiny_model_dir, prompts):
    from star.rollout.backends.transformers import TransformersBackend

    backend = TransformersBackend.from_pretrained(str(tiny_model_dir), device="cpu")
    p = SamplingParams(temperature=0.0, max_new_tokens=8)
    before = backend.generate([prompts[0]], p)[0]
    state = {k: v.clone() for k, v in backend.model.state_dict().items()}
    torch.manual_seed(1)
    new = {k: torch.randn_like(v) if v.dim() == 2 else v for k, v in state.items()}
    backend.update_weights(new)
    after = backend.generate([prompts[0]], p)[0]
    assert after.logprobs != before.logprobs
    backend.update_weights(state)
    assert backend.generate([prompts[0]], p)[0].token_ids == before.token_ids
    with pytest.raises(ValueError, match="unexpected parameter"):
        backend.update_weights({"not.a.weight": torch.zeros(1)})


def test_openai_http_backend_against_a_real_local_server(tiny_backend, prompts):
    from star.rollout.backends.openai_http import EndpointError, OpenAIBackend
    from star.rollout.openai_server import OpenAICompatibleServer

    p = SamplingParams(temperature=1.0, max_new_tokens=10, seed=21)
    local = tiny_backend.generate(prompts[:2], p)
    with OpenAICompatibleServer(tiny_backend, model_name="tiny") as url:
        assert url.startswith("http://127.0.0.1:")
        client = OpenAIBackend(url, "tiny", api_key_env=None)
        remote = client.generate(prompts[:2], p)
        assert [g.token_ids for g in remote] == [g.token_ids for g in local]
        assert remote[0].logprobs == pytest.approx(local[0].logprobs, abs=1e-4)
        reply = client.chat([{"role": "user", "content": "Plan a trip."}], p)
        assert isinstance(reply.text, str) and reply.prompt_tokens == len(prompts[0])
        with pytest.raises(EndpointError, match="HTTP 400"):
            client.generate([[]], p)
        client.close()
    dead = OpenAIBackend(url, "tiny", api_key_env=None, max_retries=0, timeout=2)
    with pytest.raises(EndpointError, match="ConnectError"):
        dead.generate([prompts[0]], p)


def test_vllm_backend_says_what_is_missing():
    pytest.importorskip("torch")
    try:
        import vllm  # noqa: F401
    except ImportError:
        from star.rollout.backends.vllm import VLLMBackend

        with pytest.raises(ImportError, match="gpu"):
            VLLMBackend("some/model")
    else:  # pragma: no cover - only on GPU workers
        pytest.skip("vLLM present: exercised on GPU workers")


def test_prefix_cache_reuses_history_without_changing_the_samples(tiny_model_dir, prompts):
    from star.rollout.backends.transformers import TransformersBackend

    cached = TransformersBackend.from_pretrained(str(tiny_model_dir), device="cpu", prefix_cache=16)
    plain = TransformersBackend.from_pretrained(str(tiny_model_dir), device="cpu", prefix_cache=0)
    p = SamplingParams(max_new_tokens=10, seed=4)
    first = cached.generate(prompts, p)
    # Next turns: own history + an observation; plus a new prompt sharing only a prefix.
    nxt = [pr + g.token_ids + [9, 10, 11] for pr, g in zip(prompts, first)][::-1] + [prompts[0][:-2] + [12, 13]]
    assert all(cached._lookup(q) is not None for q in nxt)
    a, b = cached.generate(nxt, p), plain.generate(nxt, p)
    assert [g.token_ids for g in a] == [g.token_ids for g in b]
    for x, y in zip(a, b):
        assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)
    assert len(cached._prefix) <= 16 and not plain._prefix


def test_prefix_cache_keeps_one_entry_per_episode_and_a_token_budget(tiny_model_dir, prompts):
    from star.rollout.backends.transformers import TransformersBackend

    backend = TransformersBackend.from_pretrained(str(tiny_model_dir), device="cpu", prefix_cache=64,
                                                  prefix_cache_tokens=10_000)
    p = SamplingParams(max_new_tokens=6, seed=1)
    histories = list(prompts)
    for _ in range(3):  # three turns: each turn's cache supersedes the previous one of its episode
        gens = backend.generate(histories, p)
        histories = [h + g.token_ids + [9, 10] for h, g in zip(histories, gens)]
    assert len(backend._prefix) <= len(prompts)
    assert all(not any(len(b) < len(a) and tuple(a[:len(b)]) == tuple(b) for b, _ in backend._prefix.values())
               for a, _ in backend._prefix.values())
    small = TransformersBackend.from_pretrained(str(tiny_model_dir), device="cpu", prefix_cache=64,
                                                prefix_cache_tokens=max(map(len, prompts)) + 6)
    small.generate(prompts, p)
    assert sum(len(a) for a, _ in small._prefix.values()) <= small.prefix_cache_tokens


def _count_prefill_tokens(backend) -> list[int]:
    """Tokens each forward pass of more than one position feeds the model (prefill work)."""
    fed: list[int] = []

    def hook(_module, args, kwargs):
        ids = kwargs.get("input_ids")
        if ids is not None and ids.shape[1] > 1:
            fed.append(int(ids.numel()))

    backend.model.register_forward_pre_hook(hook, with_kwargs=True)
    return fed


def test_a_group_prefills_its_shared_prompt_once_without_changing_the_samples(tiny_model_dir):
    from star.rollout.backends.transformers import TransformersBackend

    shared = TransformersBackend.from_pretrained(str(tiny_model_dir), device="cpu", prefix_cache=0, max_batch=16)
    plain = TransformersBackend.from_pretrained(str(tiny_model_dir), device="cpu", prefix_cache=0, max_batch=16,
                                                share_prefix=False)
    tok = shared.tokenizer
    system = {"role": "system", "content": "You plan trips with tools. " * 8}
    group = prompt_ids(tok, [system, {"role": "user", "content": "Plan a trip from Dallas to Austin."}])
    other = prompt_ids(tok, [system, {"role": "user", "content": "Hi"}])  # shares only the system prompt
    lone = prompt_ids(tok, [{"role": "user", "content": "Something else entirely."}])
    prompts = [group] * 4 + [other, lone] + [group] * 2
    fed_shared, fed_plain = _count_prefill_tokens(shared), _count_prefill_tokens(plain)
    for params in ([SamplingParams(max_new_tokens=12, seed=s) for s in range(len(prompts))],
                   SamplingParams(max_new_tokens=12, temperature=0.0)):
        fed_shared.clear(), fed_plain.clear()
        a, b = shared.generate(prompts, params), plain.generate(prompts, params)
        assert [g.token_ids for g in a] == [g.token_ids for g in b]
        for x, y in zip(a, b):
            assert x.logprobs == pytest.approx(y.logprobs, abs=1e-4)
            assert x.finish_reason == y.finish_reason
        # Plain: every row prefills the whole (padded) prompt. Shared: the group's prompt once, then one
        # token per group row, `other` beyond the system prompt it shares, `lone` all of its own.
        assert fed_plain == [len(prompts) * len(group)]
        assert fed_shared[0] == len(group) - 1
        assert sum(fed_shared) < fed_plain[0] / 2


def test_batched_sampling_draws_each_row_from_its_own_tempered_nucleus():
    import torch

    from star.rollout.backends.transformers import _sample_rows
    from star.rollout.base import SamplingParams

    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]] * 2))
    params = [SamplingParams(temperature=1.0), SamplingParams(temperature=1.0, top_p=0.7)]
    gens = [torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)]
    counts = torch.zeros(2, 4)
    for _ in range(4000):
        toks, lps = _sample_rows(logits, params, gens, [None, None])
        counts[0, toks[0]] += 1
        counts[1, toks[1]] += 1
    freq = counts / 4000
    assert torch.allclose(freq[0], torch.tensor([0.5, 0.3, 0.15, 0.05]), atol=0.03)
    # top-p 0.7 keeps 0.5 and 0.3 (the token that crosses 0.7 stays in), renormalised to 0.625 / 0.375
    assert torch.allclose(freq[1], torch.tensor([0.625, 0.375, 0.0, 0.0]), atol=0.03)
    toks, lps = _sample_rows(logits, [SamplingParams(temperature=0.0), SamplingParams(temperature=2.0)], gens, [None, 2])
    assert toks == [0, 2]  # greedy, and a forced token scored under temperature 2
    assert lps[1] == pytest.approx(float(torch.log_softmax(logits[1] / 2.0, -1)[2]), abs=1e-6)
    # the same generator state gives the same token whatever else is in the batch
    a = _sample_rows(logits[:1], params[:1], [torch.Generator().manual_seed(7)], [None])[0]
    b = _sample_rows(logits, params, [torch.Generator().manual_seed(7), torch.Generator().manual_seed(8)], [None, None])[0]
    assert a[0] == b[0]


def test_a_wide_nucleus_is_sampled_from_the_full_sort_and_rows_do_not_depend_on_their_neighbours():
    import torch

    from star.rollout.backends.transformers import NUCLEUS_CANDIDATES, _sample_rows
    from star.rollout.base import SamplingParams

    # 1,000 equally likely tokens: top-p 0.5 keeps 500 of them, more than the top-k candidates hold
    flat = torch.zeros(1, 1000)
    wide = SamplingParams(temperature=1.0, top_p=0.5)
    gen = torch.Generator().manual_seed(3)
    seen = {_sample_rows(flat, [wide], [gen], [None])[0][0] for _ in range(3000)}
    assert len(seen) > NUCLEUS_CANDIDATES and len(seen) <= 501
    # a row samples the same token alone and beside rows with other top-p settings
    logits = torch.randn(3, 1000) * 2
    params = [SamplingParams(temperature=0.9), SamplingParams(temperature=0.9, top_p=0.9), wide]
    for r in range(3):
        alone = _sample_rows(logits[r:r + 1], params[r:r + 1], [torch.Generator().manual_seed(r)], [None])[0][0]
        batch = _sample_rows(logits, params, [torch.Generator().manual_seed(i) for i in range(3)], [None] * 3)[0][r]
        assert alone == batch


@pytest.mark.parametrize("trim_min", [64, 1])  # 1: every column no row attends to is cut at once
def test_continuous_batching_admits_sequences_mid_run_and_samples_as_generate_does(tiny_model_dir, monkeypatch,
                                                                                  trim_min):
    from star.rollout.backends import transformers as tb
    from star.rollout.backends.transformers import TransformersBackend

    monkeypatch.setattr(tb, "TRIM_MIN", trim_min)
    backend = TransformersBackend.from_pretrained(str(tiny_model_dir), device="cpu", max_batch=3, prefix_cache=0)
    tok = backend.tokenizer
    prompts = [prompt_ids(tok, [{"role": "user", "content": f"Trip {i}: " + "Dallas to Ohio " * i}])
               for i in range(7)]
    params = [SamplingParams(temperature=1.0, max_new_tokens=3 + 6 * (i % 3), seed=100 + i) for i in range(7)]
    alone = [backend.generate([p], sp)[0] for p, sp in zip(prompts, params)]
    waiting, done, joined_beside = list(range(2, 7)), {}, []

    def refill(n):
        take, waiting[:] = waiting[:min(n, 2)], waiting[min(n, 2):]
        if take:  # how many admitted sequences were still decoding when these joined
            joined_beside.append(len([i for i in range(7) if i not in waiting and i not in done]) - len(take))
        return [(i, prompts[i], params[i]) for i in take]

    backend.generate_continuous([(i, prompts[i], params[i]) for i in (0, 1)], refill,
                                lambda tag, gen: done.__setitem__(tag, gen), admit_every=2)
    assert sorted(done) == list(range(7))
    assert max(joined_beside) > 0  # sequences joined a batch that was still running
    for i in range(7):  # each sequence is what it would be alone: its own generator, its own positions
        assert done[i].token_ids == alone[i].token_ids, i
        assert done[i].logprobs == pytest.approx(alone[i].logprobs, abs=1e-4)
        assert done[i].finish_reason == alone[i].finish_reason


def test_an_empty_prompt_or_a_zero_budget_is_refused_however_it_arrives(tiny_backend, prompts):
    ok, empty = SamplingParams(max_new_tokens=4, seed=1), SamplingParams(max_new_tokens=0, seed=1)
    with pytest.raises(ValueError, match="empty prompt"):
        tiny_backend.generate([prompts[0], []], ok)
    with pytest.raises(ValueError, match="max_new_tokens >= 1"):
        tiny_backend.generate([prompts[0]], empty)
    handed = [[(1, [], ok)]]  # a sequence refill hands over mid-run is checked like the first ones
    with pytest.raises(ValueError, match="empty prompt"):
        tiny_backend.generate_continuous([(0, prompts[0], ok)], lambda n: handed.pop() if handed else [],
                                         lambda tag, gen: None, admit_every=1)
