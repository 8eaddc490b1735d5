"""The agent's system prompt, the user message of a query, and the tool-response wrapper (our own wording)."""

from __future__ import annotations

import json

from star.sandbox.tools import TOOL_SPECS

OBSERVATION_OPEN, OBSERVATION_CLOSE = "<tool_response>", "</tool_response>"

# One plan in the canonical day-by-day text that star.evaluation.plan.parse_plan_text reads.
EXAMPLE_PLAN = """Day 1:
Current City: from Ithaca to Charlotte
Transportation: Flight Number: F3633413, from Ithaca to Charlotte, Departure Time: 05:38, Arrival Time: 07:46
Breakfast: -
Attraction: -
Lunch: Cafe Maple Street, Charlotte
Dinner: Bombay Vada Pav, Charlotte
Accommodation: Affordable Spacious Refurbished Room in Bushwick!, Charlotte

Day 2:
Current City: Charlotte
Transportation: -
Breakfast: Olive Tree Cafe, Charlotte
Attraction: The Charlotte Museum of History, Charlotte;Discovery Place Science, Charlotte;
Lunch: Birbal Ji Dhaba, Charlotte
Dinner: Pind Balluchi, Charlotte
Accommodation: Affordable Spacious Refurbished Room in Bushwick!, Charlotte

Day 3:
Current City: from Charlotte to Ithaca
Transportation: Self-driving, from Charlotte to Ithaca, duration: 10 hours 21 mins, distance: 1,052 km, cost: 52
Breakfast: Subway, Charlotte
Attraction: -
Lunch: -
Dinner: -
Accommodation: -"""

_ROLE = """You are a travel-planning agent. You plan trips for the user with six tools that search a \
closed travel database (flights, driving distances, restaurants, attractions, accommodations, and the \
cities of a state). Only facts returned by the tools may appear in your plan."""

_FORMAT = """Every reply you write has exactly this shape and nothing outside it:
<think>your reasoning about what you know and what to do next</think>
followed by EITHER one tool call
<tool_call>{"name": "<tool name>", "arguments": {<arguments as JSON>}}</tool_call>
OR, when you are done, the final plan
<answer>the day-by-day plan</answer>
Make exactly one tool call per reply. The result comes back in the next message as
<tool_response>…</tool_response>. A reply that breaks this format ends the conversation as a failure."""

_RULES = """The plan must respect the query and common sense:
- the trip starts and ends at the origin city, visits the requested number of cities and uses consecutive dates;
- every flight, drive, taxi, restaurant, attraction and accommodation comes from the tool results;
- do not combine self-driving with flights or taxis in one trip;
- no restaurant twice, no attraction twice; respect each accommodation's minimum nights, house rules,
  room type and maximum occupancy, and any cuisine or transportation requirement;
- the total cost for all travellers stays within the budget."""

_PLAN_FORMAT = """Write the answer as one block per day, in this exact line format (use - when nothing is needed;
travel days are written "from A to B"; several attractions are separated by ";" and end with ";";
every place is written "Name, City"):"""


def tool_list_text() -> str:
    lines = []
    for spec in TOOL_SPECS:
        params = spec["parameters"]
        args = {name: (p.get("description", ""), p.get("enum")) for name, p in params["properties"].items()}
        arg_text = ", ".join(f"{n} ({d}{'; one of ' + '/'.join(e) if e else ''})" for n, (d, e) in args.items())
        lines.append(f"- {spec['name']}: {spec['description']} Arguments: {arg_text}.")
    return "\n".join(lines)


def tool_schemas_json() -> str:
    return json.dumps(TOOL_SPECS, ensure_ascii=False)


def short_system_prompt() -> str:
    """The role, the reply format and each tool's name and arguments: what a model trained from scratch reads."""
    tools = "; ".join(f"{s['name']}({', '.join(s['parameters']['properties'])})" for s in TOOL_SPECS)
    return "\n\n".join([_ROLE, _FORMAT, f"Tools: {tools}."])


def system_prompt(style: str = "compact", prompt: str = "full") -> str:
    """The system prompt: `full`, or `short` (short_system_prompt). `style` only changes how the tool results
    are described."""
    if prompt == "short":
        return short_system_prompt()
    if prompt != "full":
        raise ValueError(f"unknown system prompt {prompt!r} (expected full or short)")
    results = ("Tool results are compact: flights come as numbered lines; restaurant, attraction and accommodation "
               "searches come as a header line naming the columns, then one row per line with tab-separated values."
               if style == "compact" else "Tool results are tables as the official tools print them.")
    return "\n\n".join([
        _ROLE,
        _FORMAT,
        "Tools:\n" + tool_list_text() + "\n" + results,
        _RULES,
        _PLAN_FORMAT + "\n\n" + EXAMPLE_PLAN,
    ])


def user_prompt(query: dict) -> str:
    """The user message: the query text (the official natural-language request)."""
    text = query.get("query")
    if not text:
        raise ValueError(f"query {query.get('id', '?')!r} has no 'query' text")
    return text


def initial_messages(query: dict, style: str = "compact", prompt: str = "full") -> list[dict]:
    return [{"role": "system", "content": system_prompt(style, prompt)}, {"role": "user", "content": user_prompt(query)}]


def observation_message(text: str) -> dict:
    """The message that carries a tool result back to the agent."""
    return {"role": "user", "content": f"{OBSERVATION_OPEN}\n{text}\n{OBSERVATION_CLOSE}"}


def format_error_message(detail: str) -> str:
    """Not sent to the agent (a format error ends the episode); kept for logs."""
    return f"Format error: {detail}"
