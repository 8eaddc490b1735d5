"""Where an evaluation's format errors happen: what the tool had just answered when a turn broke, and how
often a turn breaks after each kind of answer, so a format error can be traced to what the policy could not read.

    .venv/bin/python scripts/format_errors.py --episodes runs/X/sft runs/X/rl --names SFT RL
    .venv/bin/python scripts/format_errors.py ... --out docs/experiments/data/X/format_errors.md

Reads eval-agent trajectories (it needs the messages, which the slim result files do not keep). A format
error ends its episode, so the broken turn is the episode's last assistant turn. The answer before a turn is
one of: "none" (the turn is the first), "nothing found: a route from a city to itself" (GoogleDistanceMatrix
asked from and to one city), "nothing found: other" (an empty search: "No route data", "No valid route.",
"There is no ..."), "tool error" (an `Error: ...` answer: a wrong or missing argument, an unknown tool) and
"data" (any other answer).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from star.policy_eval.paired import read_episodes  # noqa: E402

KINDS = ("none", "nothing found: a route from a city to itself", "nothing found: other", "tool error", "data")
_SELF_ROUTE = re.compile(r"^No route data from (.+) to (.+)\.$")
_TAGS = re.compile(r"</?tool_response>")


def answer_kind(text: str | None) -> str:
    """What kind of tool answer `text` is (None: no answer came before the turn)."""
    if text is None:
        return "none"
    body = _TAGS.sub("", text).strip()
    m = _SELF_ROUTE.match(body)
    if m and m.group(1).casefold() == m.group(2).casefold():
        return "nothing found: a route from a city to itself"
    if body.startswith(("No route data", "No valid route", "There is no")):
        return "nothing found: other"
    if body.startswith("Error"):
        return "tool error"
    return "data"


def turns(trajectory: dict) -> list[tuple[str, bool]]:
    """Each assistant turn as (the kind of answer before it, whether it is the turn that broke the format)."""
    messages = trajectory.get("messages") or []
    if not messages:
        raise ValueError(f"episode {trajectory.get('query_id', '?')} has no messages: pass eval-agent "
                         "trajectories, not slim result files")
    assistant = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    broke = trajectory.get("finish_reason") == "format_error"
    out, before = [], None
    for i, m in enumerate(messages):
        if m.get("role") == "assistant":
            out.append((answer_kind(before), broke and i == assistant[-1]))
        elif m.get("role") in ("tool", "user") and assistant and assistant[0] < i:
            before = m.get("content") or ""  # the query itself is the first user message, not a tool answer
    return out


def tally(trajectories: list[dict]) -> dict:
    """Turns and broken turns per kind of preceding answer, with the episode counts."""
    seen, broken = Counter(), Counter()
    for t in trajectories:
        for kind, broke in turns(t):
            seen[kind] += 1
            broken[kind] += broke
    errors = sum(t.get("finish_reason") == "format_error" for t in trajectories)
    return {"episodes": len(trajectories), "format_errors": errors, "turns": seen, "broken": broken}


def table(names: list[str], tallies: list[dict]) -> str:
    """Markdown: per kind of answer, each evaluation's broken turns (share of its format errors) and the
    rate at which a turn after such an answer breaks."""
    head = "| answer before the turn | " + " | ".join(
        f"{n}: broken turns (share) | {n}: turns, broken" for n in names) + " |"
    lines = [head, "|---" * (1 + 2 * len(names)) + "|"]
    for kind in KINDS:
        cells = []
        for t in tallies:
            b, s, e = t["broken"][kind], t["turns"][kind], max(t["format_errors"], 1)
            cells += [f"{b} ({b / e:.0%})", f"{s}, {b / s:.1%}" if s else "0, —"]
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    foot = "; ".join(f"{n}: {t['format_errors']} format errors in {t['episodes']} episodes"
                     for n, t in zip(names, tallies))
    return "\n".join(lines) + f"\n\n{foot}.\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", nargs="+", required=True, help="eval-agent output directories or trajectories.jsonl")
    ap.add_argument("--names", nargs="+", default=None, help="one name per --episodes (default: the paths)")
    ap.add_argument("--out", default=None, help="also write the table to this markdown file")
    args = ap.parse_args(argv)
    names = args.names or args.episodes
    if len(names) != len(args.episodes):
        ap.error(f"--names gives {len(names)} names for {len(args.episodes)} --episodes")
    text = table(names, [tally(read_episodes(p)) for p in args.episodes])
    print(text, end="")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
