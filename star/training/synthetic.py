"""Scripted protocol conversations over the sandbox, for training tests and benchmarks.

Real system prompt, real tool observations from the Toolbox, well-formed turns — but a fixed
script, not a planner: it exercises the SFT/GRPO machinery (masks, lengths, format) without
waiting on the teacher stage. Pipeline SFT data comes from `star teacher` + `star sft-data`.
"""

from __future__ import annotations

import json
import random

from star.agent.prompt import initial_messages, observation_message
from star.agent.trajectory import write_jsonl
from star.sandbox.tools import Toolbox


def scripted_conversation(db, rng: random.Random, style: str = "compact", max_obs_lines: int = 4,
                          system: str | None = None) -> list[dict]:
    """One conversation; `system` replaces the real system prompt (tests use a short one for speed)."""
    toolbox = Toolbox(db, style=style)
    org, dest = rng.choice(sorted(db.flights_by_route))
    date = f"2022-03-{rng.randint(1, 28):02d}"
    query = {"id": "scripted", "query": f"Please plan a 3-day trip from {org} to {dest} starting {date} for one person "
                                        f"with a budget of ${rng.randrange(900, 5000, 100):,}."}
    messages = initial_messages(query, style)
    if system is not None:
        messages[0] = {"role": "system", "content": system}
    calls = [("SearchFlight", {"departure": org, "destination": dest, "date": date}),
             ("SearchRestaurant", {"city": dest}), ("SearchAccommodation", {"city": dest})]
    rng.shuffle(calls)
    for name, args in calls[: rng.randint(1, len(calls))]:
        thought = f"I need {name[6:].lower()} information for {args.get('city', dest)}."
        messages.append({"role": "assistant", "content": f"<think>{thought}</think>\n<tool_call>"
                         + json.dumps({"name": name, "arguments": args}) + "</tool_call>"})
        text = "\n".join(toolbox.call(name, args).splitlines()[:max_obs_lines])
        messages.append(observation_message(text))
    messages.append({"role": "assistant", "content": f"<think>I can write the plan now.</think>\n<answer>Day 1:\n"
                     f"Current City: from {org} to {dest}\nTransportation: -\nBreakfast: -\nAttraction: -\n"
                     f"Lunch: -\nDinner: -\nAccommodation: -</answer>"})
    return messages


def scripted_conversations(db, n: int, seed: int = 0, style: str = "compact", max_obs_lines: int = 4,
                           system: str | None = None) -> list[list[dict]]:
    rng = random.Random(seed)
    return [scripted_conversation(db, rng, style, max_obs_lines, system) for _ in range(n)]


def write_sft_jsonl(path, conversations: list[list[dict]]) -> None:
    write_jsonl(path, ({"messages": c} for c in conversations))
