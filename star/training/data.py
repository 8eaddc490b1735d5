"""SFT data: chat-message conversations → token ids with a loss mask on the policy's own tokens.

The mask covers each assistant message's content and its closing `<|im_end|>`; system, user and
tool-response tokens (and the `<|im_start|>assistant\\n` header the generation prompt supplies)
carry no loss. Micro-batches are length-bucketed so padding stays small.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from star.training.chat_template import assistant_spans, render
from star.jsonl import parse_lines

IGNORE = -100


class SFTDataError(ValueError):
    """An SFT data file is missing or malformed; the message names file and line."""


@dataclass
class Example:
    input_ids: list[int]
    loss_mask: list[int]

    def __len__(self) -> int:
        return len(self.input_ids)


def load_conversations(path: str | Path) -> list[list[dict]]:
    """Read `{"messages": [...]}` lines (extra fields ignored); errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise SFTDataError(f"SFT data file not found: {path}")
    conversations = []
    with open(path, encoding="utf-8") as fh:
        for lineno, record, bad in parse_lines(fh):
            if bad is not None:
                raise SFTDataError(f"{path}:{lineno}: not valid JSON ({bad.msg})")
            messages = record.get("messages") if isinstance(record, dict) else None
            if not isinstance(messages, list) or not messages:
                raise SFTDataError(f"{path}:{lineno}: expected an object with a non-empty 'messages' list")
            for i, m in enumerate(messages):
                if not isinstance(m, dict) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
                    raise SFTDataError(f"{path}:{lineno}: message {i} needs string 'role' and 'content'")
            if not any(m["role"] == "assistant" for m in messages):
                raise SFTDataError(f"{path}:{lineno}: conversation has no assistant message to learn from")
            conversations.append(messages)
    if not conversations:
        raise SFTDataError(f"{path}: no conversations")
    return conversations


def encode_conversation(tokenizer, messages: list[dict], max_length: int | None = None) -> Example:
    """Tokenise the rendered conversation once; mark tokens inside the assistant spans."""
    text = render(messages)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    spans = assistant_spans(messages)
    mask, j = [], 0
    for start, end in enc["offset_mapping"]:
        while j < len(spans) and spans[j][1] <= start:
            j += 1
        inside = j < len(spans) and spans[j][0] <= start and end <= spans[j][1] and end > start
        mask.append(int(inside))
    ids = list(enc["input_ids"])
    if max_length is not None and len(ids) > max_length:
        ids, mask = ids[:max_length], mask[:max_length]
    return Example(ids, mask)


def encode_all(tokenizer, conversations: list[list[dict]], max_length: int | None = None,
               progress: bool = True) -> list[Example]:
    from tqdm.auto import tqdm

    return [encode_conversation(tokenizer, c, max_length)
            for c in tqdm(conversations, desc="tokenise", disable=not progress, leave=False)]


def fit_to_length(examples: list[Example], max_length: int | None) -> tuple[list[Example], dict]:
    """Cut each example to `max_length`; drop those left with no policy token. Returns the kept
    examples and counts (truncated, dropped, longest). Refuses (SFTDataError) when nothing is left,
    naming max_length and the longest example, instead of training on an empty set."""
    longest = max((len(e) for e in examples), default=0)
    first_policy = [e.loss_mask.index(1) for e in examples if 1 in e.loss_mask]
    kept, truncated = [], 0
    for e in examples:
        if max_length is not None and len(e) > max_length:
            e, truncated = Example(e.input_ids[:max_length], e.loss_mask[:max_length]), truncated + 1
        if sum(e.loss_mask):
            kept.append(e)
    stats = {"truncated": truncated, "dropped": len(examples) - len(kept), "longest_tokens": longest,
             "max_length": max_length}
    if examples and not kept:
        raise SFTDataError(
            f"no SFT example fits sft.max_length={max_length}: the longest example has {longest} tokens and the "
            f"first policy token comes at position {min(first_policy, default=0)} at the earliest, so truncation "
            f"leaves no token to learn from; raise sft.max_length (to at least {longest} to keep every example whole)")
    return kept, stats


def micro_batches(lengths: list[int], micro_batch_size: int, seed: int, epoch: int,
                  bucketing: bool = True) -> list[list[int]]:
    """Indices per micro-batch for one epoch: shuffled; with bucketing, similar lengths share a batch.

    Bucketing sorts within mega-chunks of 50 micro-batches (so the order stays random across chunks)
    and then shuffles the micro-batches themselves.
    """
    rng = random.Random(f"{seed}:{epoch}")
    order = list(range(len(lengths)))
    rng.shuffle(order)
    if bucketing and micro_batch_size > 1:
        chunk = 50 * micro_batch_size
        order = [i for s in range(0, len(order), chunk)
                 for i in sorted(order[s:s + chunk], key=lambda k: lengths[k])]
    batches = [order[s:s + micro_batch_size] for s in range(0, len(order), micro_batch_size)]
    if bucketing:
        rng.shuffle(batches)
    return batches


def collate(examples: list[Example], pad_id: int):
    """Right-padded tensors: input_ids, attention_mask, labels (IGNORE outside the loss mask)."""
    import torch

    width = max(len(e) for e in examples)
    input_ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(examples), width), dtype=torch.long)
    labels = torch.full((len(examples), width), IGNORE, dtype=torch.long)
    for row, e in enumerate(examples):
        n = len(e)
        input_ids[row, :n] = torch.tensor(e.input_ids)
        attention[row, :n] = 1
        labels[row, :n] = torch.tensor([t if m else IGNORE for t, m in zip(e.input_ids, e.loss_mask)])
    return {"input_ids": input_ids, "attention_mask": attention, "labels": labels}
