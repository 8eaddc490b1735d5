"""Train the smoke profile's byte-level BPE tokenizer on our own text.

The corpus is synthetic agent trajectories over the generated world (thoughts, tool calls,
compact observations, day-by-day plans) plus general English from the Python standard library's
docstrings — travel text alone stops near 1.2k merges (too few distinct words). ChatML markers
are special tokens; the protocol tags are single added tokens so the policy emits each in one step.
"""

from __future__ import annotations

import importlib
import inspect
import json
import random
from collections.abc import Iterator

from star.agent.prompt import system_prompt
from star.sandbox.database import load_database
from star.sandbox.tools import TOOL_SPECS
from star.training.chat_template import CHAT_TEMPLATE, IM_END, IM_START

PAD = "<|endoftext|>"
SPECIAL_TOKENS = [PAD, IM_START, IM_END]
PROTOCOL_TAGS = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
                 "<answer>", "</answer>"]

# Pure-Python stdlib modules with long docstrings; importing them has no side effects.
_STDLIB_MODULES = ["argparse", "collections", "csv", "datetime", "decimal", "difflib", "email", "fractions",
                   "functools", "heapq", "http.client", "inspect", "ipaddress", "itertools", "json", "logging",
                   "mailbox", "pathlib", "pickle", "random", "re", "shutil", "statistics", "string", "subprocess",
                   "tarfile", "textwrap", "threading", "typing", "unittest", "urllib.parse", "zipfile", "calendar",
                   "configparser", "dataclasses", "enum", "gettext", "locale", "optparse", "pprint", "smtplib",
                   "socket", "ssl", "tempfile", "timeit", "tkinter", "turtle", "uuid", "wave", "xml.dom.minidom"]

TOOL_NAMES = ["SearchCity", "SearchFlight", "GoogleDistanceMatrix", "SearchRestaurant", "SearchAttraction",
              "SearchAccommodation"]


def stdlib_docstrings(limit: int) -> Iterator[str]:
    """Docstrings of stdlib modules and their public members (general English, always offline)."""
    seen = 0
    for name in _STDLIB_MODULES:
        try:
            module = importlib.import_module(name)
        except Exception:  # e.g. tkinter without Tk: just skip it
            continue
        objects = [module] + [getattr(module, a, None) for a in sorted(dir(module)) if not a.startswith("_")]
        for obj in objects:
            doc = inspect.getdoc(obj) if obj is not None else None
            if doc and len(doc) > 40:
                yield doc
                seen += 1
                if seen >= limit:
                    return


def _call(name: str, args: dict) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": args}) + "</tool_call>"


def synthetic_trajectories(db, n: int, seed: int) -> Iterator[str]:
    """Protocol-shaped text over the database's real rows (our own generator, no model involved)."""
    rng = random.Random(seed)
    cities = sorted(db.city_set)
    states = sorted(db.state_set) or ["California"]
    routes = sorted(db.flights_by_route) or [(cities[0], cities[-1])]
    for _ in range(n):
        org, dest = rng.choice(routes)
        day = rng.randint(1, 28)
        date = f"2022-03-{day:02d}"
        people = rng.randint(1, 8)
        budget = rng.randrange(800, 12000, 100)
        # Role headers as the chat template renders them, so they become single tokens.
        parts = ["system\nYou are a travel planning agent.",
                 f"user\nPlease help me plan a trip from {org} to {dest} for {people} people starting on {date}, "
                 f"with a budget of ${budget:,}."]
        parts.append("assistant\n" f"<think>I should look for flights from {org} to {dest} on {date} first.</think>\n"
                     + _call("SearchFlight", {"departure": org, "destination": dest, "date": date}))
        flights = db.flights_by_route_date.get((org, dest, date), [])[:5]
        lines = [f"{i}. [{f.number}] ${f.price}. Departure: {f.dep_time}, Arrival: {f.arr_time}, "
                 f"Actual Elapsed Time: {f.elapsed}, Distance: {f.distance} miles" for i, f in enumerate(flights, 1)]
        parts.append("tool\n<tool_response>" + ("\n".join(lines) or f"There is no flight from {org} to {dest} on {date}.")
                     + "</tool_response>")
        state = rng.choice(states)
        parts.append(f"<think>Which cities in {state} could we visit?</think>\n" + _call("SearchCity", {"state": state}))
        parts.append("<tool_response>" + ", ".join(sorted(db.state_cities.get(state, []))[:8]) + "</tool_response>")
        mode = rng.choice(["self-driving", "taxi"])
        parts.append(_call("GoogleDistanceMatrix", {"departure": org, "destination": dest, "mode": mode}))
        for tool, index in (("SearchRestaurant", db.restaurants_by_city), ("SearchAttraction", db.attractions_by_city),
                            ("SearchAccommodation", db.accommodations_by_city)):
            parts.append(f"<think>Now the {tool[6:].lower()}s in {dest}.</think>\n" + _call(tool, {"city": dest}))
            rows = index.get(dest, [])[:6]
            parts.append("<tool_response>" + "\n".join(f"{i}. " + ", ".join(str(v) for v in _row_values(r))
                                                       for i, r in enumerate(rows, 1)) + "</tool_response>")
        restaurants = [r.name for r in db.restaurants_by_city.get(dest, [])[:3]] or ["-"]
        hotel = next((a.name for a in db.accommodations_by_city.get(dest, [])), "-")
        attraction = next((a.name for a in db.attractions_by_city.get(dest, [])), "-")
        flight = flights[0].number if flights else "-"
        plan = (f"Day 1:\nCurrent City: from {org} to {dest}\nTransportation: Flight Number: {flight}, from {org} to "
                f"{dest}\nBreakfast: -\nAttraction: {attraction}, {dest};\nLunch: {restaurants[0]}, {dest}\n"
                f"Dinner: {restaurants[-1]}, {dest}\nAccommodation: {hotel}, {dest}")
        parts.append(f"<think>I have everything; the plan fits the budget of ${budget}.</think>\n<answer>{plan}</answer>")
        yield "\n".join(parts)


def _row_values(row) -> list:
    return [getattr(row, f) for f in row.__slots__] if hasattr(row, "__slots__") else [row]


def _extra_text() -> Iterator[str]:
    """The agent's own system prompt and tool specs, when the agent package is installed."""
    try:
        # Repeated so the prompt's words win merges: every episode starts with it.
        for style in ("compact", "official"):
            yield from [system_prompt(style)] * 20
    except Exception:  # the agent package is optional for building a tokenizer
        pass
    try:
        yield json.dumps(TOOL_SPECS, indent=2)
    except Exception:
        pass


def training_corpus(db, n_trajectories: int = 400, n_docs: int = 4000, seed: int = 0) -> list[str]:
    texts = list(synthetic_trajectories(db, n_trajectories, seed))
    texts += list(_extra_text())
    texts += list(stdlib_docstrings(n_docs))
    return texts


def train_tokenizer(texts: list[str], vocab_size: int = 2048):
    """Train a byte-level BPE and wrap it as a transformers fast tokenizer with our chat template."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    # Reserve the protocol tags' ids from the BPE budget so the final vocabulary is vocab_size.
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - len(PROTOCOL_TAGS), special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in PROTOCOL_TAGS])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=IM_END, pad_token=PAD, unk_token=None,
                                   bos_token=None, additional_special_tokens=[IM_START])
    fast.chat_template = CHAT_TEMPLATE
    fast.padding_side = "left"  # generation pads on the left; training builds its own batches
    return fast


def build_tokenizer(db=None, vocab_size: int = 2048, n_docs: int = 4000, seed: int = 0):
    if db is None:
        db = load_database("generated")
    return train_tokenizer(training_corpus(db, n_docs=n_docs, seed=seed), vocab_size=vocab_size)
