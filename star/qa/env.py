"""One knowledge-QA episode on the agent protocol: one tool, `Search(query)`, answer in <answer></answer>.

Same turn grammar as TravelPlanner (star.agent.turns: `<think>…</think>` then one `<tool_call>` or
one `<answer>`), same observation wrapper, same env surface (`reset`/`step`/`stop`, messages,
finish reason), so the rollout engine drives it unchanged. What differs: the tool is a retriever
returning the top-k passages, and the reward is normalised exact match of the answer.

A call to any tool but Search, or with a bad `query` argument, is answered with an error
observation (the agent may correct itself); a turn that breaks the grammar ends the episode as a
format error, as in TravelPlanner.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from star.agent.env import ProtocolEnv
from star.agent.turns import Turn, parse_turn
from star.qa.config import EpisodeConfig, RetrievalConfig
from star.qa.metrics import exact_match
from star.qa.retrieval import Retriever

TOOL_NAME = "Search"
TOOL_SPEC = {
    "name": TOOL_NAME,
    "description": "Search a local encyclopedia and return the most relevant passages.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string", "description": "what to look up"}},
                   "required": ["query"]},
}

SYSTEM_PROMPT = """You answer factual questions. You have one tool, Search, which looks a query up in a local \
encyclopedia and returns the {k} most relevant passages. Search as often as you need, then answer.

Every reply you write has exactly this shape and nothing outside it:
<think>your reasoning about what you know and what to look up next</think>
followed by EITHER one search
<tool_call>{{"name": "Search", "arguments": {{"query": "<what to look up>"}}}}</tool_call>
OR, when you know the answer, the answer alone — a few words, no explanation
<answer>the answer</answer>
The passages come back in the next message as <tool_response>…</tool_response>. A reply that breaks this \
format ends the conversation as a failure."""

_CALL_BODY = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def system_prompt(top_k: int = RetrievalConfig().top_k) -> str:
    return SYSTEM_PROMPT.format(k=top_k)


def question_text(question: str) -> str:
    """Search-R1's question normalisation: stripped, ending with a question mark."""
    q = question.strip()
    return q if q.endswith("?") else q + "?"


def format_passages(hits, passage_chars: int) -> str:
    """'Doc 1 (Title: X) text' per passage, as Search-R1's retriever prints them."""
    lines = []
    for i, hit in enumerate(hits, start=1):
        text = hit.passage.text
        if len(text) > passage_chars:
            text = text[:passage_chars].rsplit(" ", 1)[0] + " …"
        lines.append(f"Doc {i} (Title: {hit.passage.title}) {text}")
    return "\n".join(lines)


@dataclass
class SearchOutcome:
    """A Search execution: the observation text, its passages' ids, and an error kind (None when ok)."""

    text: str
    passage_ids: list[str]
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def qa_scores(prediction: str | None, golden_answers: list[str]) -> dict:
    em = exact_match(prediction, golden_answers)
    return {"delivered": prediction is not None, "em": float(em), "success": bool(em)}


def em_reward(scores: dict, finish_reason: str) -> float:
    """Exact match of an answered episode; 0 for format errors, budgets and overflows."""
    return float(finish_reason == "answer" and bool(scores.get("success")))


class QAEnv(ProtocolEnv):
    """reset(example) -> initial messages; step(text) -> (observation message | None, reward, done, info)."""

    def __init__(self, retriever: Retriever, config: EpisodeConfig | None = None, top_k: int | None = None,
                 tool_budget: int | None = None, reward_fn=em_reward):
        super().__init__(reward_fn)
        self.retriever = retriever
        self.config = config or EpisodeConfig()
        self.top_k = top_k or retriever.config.top_k
        # A turn is one tool call at most, so the turn budget bounds the calls.
        self.tool_budget = tool_budget if tool_budget is not None else self.config.max_turns - 1

    def opening(self, example: dict) -> list[dict]:
        if not example.get("question") or not example.get("golden_answers"):
            raise ValueError(f"QA example {example.get('id', '?')!r} needs 'question' and 'golden_answers'")
        self.searches: list[dict] = []
        return [{"role": "system", "content": system_prompt(self.top_k)},
                {"role": "user", "content": question_text(example["question"])}]

    def search(self, arguments: dict) -> SearchOutcome:
        query = arguments.get("query") if isinstance(arguments, dict) else None
        extra = sorted(set(arguments) - {"query"}) if isinstance(arguments, dict) else []
        if not isinstance(query, str) or not query.strip():
            return SearchOutcome("Error: Search needs a non-empty string argument 'query'.", [], "bad_arguments")
        if extra:
            return SearchOutcome(f"Error: Search takes only 'query'; unexpected {', '.join(extra)}.", [],
                                 "bad_arguments")
        hits = self.retriever.search(query.strip(), self.top_k)
        return SearchOutcome(format_passages(hits, self.config.passage_chars), [h.passage.id for h in hits])

    def parse(self, assistant_text: str) -> Turn:
        turn = parse_turn(assistant_text)
        if turn.kind == "format_error" and turn.error == "unknown_tool":
            # The shared parser knows only the travel tools; the grammar and JSON were sound.
            call = json.loads(_CALL_BODY.search(assistant_text).group(1))
            turn = Turn("tool_call", think=turn.think, tool_name=call["name"],
                        tool=TOOL_NAME if call["name"] == TOOL_NAME else None, arguments=call["arguments"])
        return turn

    def run_tool(self, turn: Turn):
        if turn.tool_name != TOOL_NAME:
            outcome = SearchOutcome(f"Error: unknown tool {turn.tool_name!r}; the only tool is Search.", [],
                                    "unknown_tool")
        else:
            outcome = self.search(turn.arguments)
        self.searches.append({"arguments": turn.arguments, "passage_ids": outcome.passage_ids,
                              "error": outcome.error})
        return outcome.text, outcome.ok, outcome

    def score(self, reason: str) -> dict:
        return qa_scores(self.answer if reason == "answer" else None, self.query["golden_answers"])
