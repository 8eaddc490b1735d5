"""First-turn SFT examples: a kept trajectory's opening, re-told for other city pairs, for a copy stage.

A small model trained on a few hundred full trajectories learns a world's listings but not to read the
trip's two ends out of the query (travel-small run 4: the first thought named the right route in ~14% of
held-out episodes, near the 5% of a guess among 20 ordered pairs). The copy is one short stretch of each
trajectory, so it is trained on few examples. This module gives it more: each kept trajectory's query and
first assistant turn (without the system prompt), with the origin and the destination renamed to another route some
query of the set takes, in both the query and the turn (the rest of the query is unchanged; the example stops
before any tool answers, so nothing in it depends on the database). A pair that would re-tell a held-out
trip (same origin, destination and dates) is skipped, so no held-out query's opening is trained on.
`star sft --first-turns` trains on them before the trajectories (SFTConfig.first_turn_epochs). Mixed into
the trajectories with the system prompt (travel-small run 5) they neither taught the 5.2M model the copy nor
left its plans intact; alone and short, they teach it in a few epochs (docs/experiments/travel-small.md).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable


def rename_cities(text: str, names: dict[str, str]) -> str:
    """`text` with every whole-word occurrence of each key replaced by its value, all at once (a swap works)."""
    if not names:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(names, key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda m: names[m.group(1)], text)


def trip_key(query: dict) -> tuple:
    """What makes two queries the same trip here: origin, destination and dates."""
    return query["org"], query["dest"], tuple(query.get("date") or ())


def first_turn_examples(records: Iterable[dict], queries: dict[str, dict], per_record: int, seed: int = 0,
                        held_out: Iterable[dict] = ()) -> list[dict]:
    """Up to `per_record` renamed openings of each SFT record (chat form, `to_sft_record`), in record order.

    `queries` maps query id -> query; the pairs are the (origin, destination) of its one-city trips. Only
    one-city trips are re-told (a multi-city trip's destination is a state), and only openings that name the
    destination as the query spells it (not a misspelt first search). Each record draws its pairs from its
    own seeded stream, so the examples do not depend on which other records were kept.
    """
    one_city = [q for q in queries.values() if int(q.get("visiting_city_number") or 1) == 1]
    # Only routes some query takes: a pair of the world's cities with no feasible trip would teach a route no
    # query asks for (travel-small run 5: 59% of its openings named one of the 7 such pairs of 20).
    routes = sorted({(q["org"], q["dest"]) for q in one_city})
    banned = {trip_key(q) for q in held_out}
    out: list[dict] = []
    for rec in records:
        q = queries.get(rec["query_id"])
        if q is None:
            raise KeyError(f"SFT record {rec['query_id']!r} has no query in the query file given")
        msgs = rec["messages"]
        if (int(q.get("visiting_city_number") or 1) != 1 or len(msgs) < 3 or msgs[2]["role"] != "assistant"
                or not re.search(rf"\b{re.escape(q['dest'])}\b", msgs[2]["content"])):
            continue  # a multi-city trip, or an opening that does not name the destination as the query does
        pairs = [(a, b) for a, b in routes
                 if (a, b) != (q["org"], q["dest"]) and (a, b, tuple(q.get("date") or ())) not in banned]
        rng = random.Random(f"{seed}:{rec['query_id']}:{rec.get('sample', 0)}")
        for org, dest in rng.sample(pairs, min(per_record, len(pairs))):
            names = {q["org"]: org, q["dest"]: dest}
            # No system prompt: ~60 tokens instead of ~330, short enough that a model trained from scratch
            # learns the copy in a few epochs (with the prompt it did not: docs/experiments/travel-small.md).
            turn = [{"role": m["role"], "content": rename_cities(m["content"], names)} for m in msgs[1:3]]
            out.append({"messages": turn, "query_id": f"{rec['query_id']}/{org}-{dest}", "level": rec.get("level"),
                        "sample": rec.get("sample", 0), "tool_calls": 0, "first_turn": True})
    return out
