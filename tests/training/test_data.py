import json

import pytest

from star.training.data import IGNORE, SFTDataError, collate, encode_conversation, load_conversations, micro_batches
from star.training.synthetic import scripted_conversations


@pytest.fixture(scope="module")
def conversations(any_db):
    return scripted_conversations(any_db, 6, seed=1, system="You plan trips.", max_obs_lines=2)


def test_loss_mask_covers_exactly_the_assistant_tokens(smoke_tokenizer, conversations):
    for msgs in conversations:
        ex = encode_conversation(smoke_tokenizer, msgs)
        learned = smoke_tokenizer.decode([t for t, m in zip(ex.input_ids, ex.loss_mask) if m])
        expected = "".join(m["content"] + "<|im_end|>" for m in msgs if m["role"] == "assistant")
        assert learned == expected
        ignored = smoke_tokenizer.decode([t for t, m in zip(ex.input_ids, ex.loss_mask) if not m])
        assert "<tool_response>" in ignored and msgs[1]["content"] in ignored  # observations and prompt masked


def test_a_turn_marked_train_false_is_context_not_a_target(smoke_tokenizer, conversations):
    msgs = [dict(m) for m in conversations[0]]
    wrong = next(i for i, m in enumerate(msgs) if m["role"] == "assistant")
    msgs[wrong]["train"] = False
    ex = encode_conversation(smoke_tokenizer, msgs)
    learned = smoke_tokenizer.decode([t for t, m in zip(ex.input_ids, ex.loss_mask) if m])
    assert learned == "".join(m["content"] + "<|im_end|>" for i, m in enumerate(msgs)
                              if m["role"] == "assistant" and i != wrong)
    assert msgs[wrong]["content"] in smoke_tokenizer.decode(ex.input_ids)  # still seen as context


def test_collate_sets_ignore_labels_outside_the_mask(smoke_tokenizer, conversations):
    exs = [encode_conversation(smoke_tokenizer, m) for m in conversations[:2]]
    batch = collate(exs, pad_id=smoke_tokenizer.pad_token_id)
    assert batch["input_ids"].shape[1] == max(len(e) for e in exs)
    for row, e in enumerate(exs):
        labels = batch["labels"][row].tolist()
        assert [lab != IGNORE for lab in labels[: len(e)]] == [bool(m) for m in e.loss_mask]
        assert all(lab == IGNORE for lab in labels[len(e):])  # padding
        assert batch["attention_mask"][row].sum() == len(e)


def test_truncation_keeps_mask_aligned(smoke_tokenizer, conversations):
    ex = encode_conversation(smoke_tokenizer, conversations[0], max_length=50)
    assert len(ex.input_ids) == len(ex.loss_mask) == 50


def test_bucketing_groups_similar_lengths_and_covers_every_example():
    lengths = [10, 500, 12, 480, 11, 490, 13, 510]
    batches = micro_batches(lengths, 2, seed=0, epoch=0)
    assert sorted(i for b in batches for i in b) == list(range(8))
    assert all(abs(lengths[b[0]] - lengths[b[1]]) < 100 for b in batches)
    assert micro_batches(lengths, 2, seed=0, epoch=1) != batches  # reshuffled each epoch
    assert micro_batches(lengths, 2, seed=0, epoch=0) == batches  # deterministic


def test_malformed_sft_file_names_the_line(tmp_path):
    good = json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]})
    path = tmp_path / "sft.jsonl"
    path.write_text(good + "\n{not json\n")
    with pytest.raises(SFTDataError, match=r"sft.jsonl:2: not valid JSON"):
        load_conversations(path)
    path.write_text(good + "\n" + json.dumps({"messages": [{"role": "user", "content": "no answer"}]}) + "\n")
    with pytest.raises(SFTDataError, match=r":2: conversation has no assistant message"):
        load_conversations(path)
    with pytest.raises(SFTDataError, match="not found"):
        load_conversations(tmp_path / "missing.jsonl")
