"""Strict parser of one assistant turn: `<think>…</think>` then one `<tool_call>` or one `<answer>`.

Anything else is a format error with a class naming what went wrong; the episode ends there
(recipe §4: a format error is a failure and earns no reward). A well-formed call whose
arguments the tool rejects (unknown city, wrong date) is *not* a format error: the tool answers
with an error observation and the agent carries on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from star.sandbox.tools import resolve_tool_name

# Every way a turn can be malformed, most basic first (the first that applies is reported).
ERROR_CLASSES = (
    "empty",                 # nothing but whitespace
    "unclosed_tag",          # an opening tag without its closing tag (often: generation cut off)
    "unopened_tag",          # a closing tag without its opening tag
    "nested_tags",           # a tag opened inside another one
    "no_think",              # no <think> block
    "multiple_think",        # more than one <think> block
    "no_action",             # a <think> block but neither a tool call nor an answer
    "multiple_tool_calls",   # two or more <tool_call> blocks
    "multiple_answers",      # two or more <answer> blocks
    "answer_and_call",       # both an answer and a tool call
    "observation_written",   # the model wrote a <tool_response> itself
    "text_outside_tags",     # anything but whitespace outside the blocks, or blocks out of order
    "bad_json",              # the tool call is not valid JSON
    "bad_call_schema",       # valid JSON, but not {"name": str, "arguments": {...}}
    "unknown_tool",          # a name that is none of the six tools (either spelling)
    "empty_answer",          # <answer></answer> with nothing inside
)

TAGS = ("think", "tool_call", "answer", "tool_response")
_TAG_RE = re.compile(r"<(/?)(think|tool_call|answer|tool_response)>")
_TURN_RE = re.compile(r"\s*<think>(?P<think>.*?)</think>\s*<(?P<tag>tool_call|answer)>(?P<body>.*?)</(?P=tag)>\s*",
                      re.DOTALL)


@dataclass(frozen=True)
class Turn:
    kind: str
    """tool_call | answer | format_error"""
    think: str | None = None
    tool_name: str | None = None
    """The name exactly as written."""
    tool: str | None = None
    """The canonical tool name."""
    arguments: dict = field(default_factory=dict)
    answer: str | None = None
    error: str | None = None
    """One of ERROR_CLASSES for a format error, else None."""
    detail: str | None = None
    """A sentence saying what exactly is wrong (for logs and reports)."""

    @property
    def ok(self) -> bool:
        return self.kind != "format_error"


def _fail(error: str, detail: str) -> Turn:
    assert error in ERROR_CLASSES, error
    return Turn("format_error", error=error, detail=detail)


def _check_tags(text: str) -> Turn | None:
    """Balanced, non-nested tags; returns a format-error Turn or None when the structure is sound."""
    open_tag: str | None = None
    counts = dict.fromkeys(TAGS, 0)
    for m in _TAG_RE.finditer(text):
        closing, tag = m.group(1) == "/", m.group(2)
        if not closing:
            if open_tag is not None:
                return _fail("nested_tags", f"<{tag}> opened inside <{open_tag}> at offset {m.start()}")
            open_tag = tag
            counts[tag] += 1
        elif open_tag == tag:
            open_tag = None
        elif open_tag is None:
            return _fail("unopened_tag", f"</{tag}> at offset {m.start()} closes nothing")
        else:
            return _fail("nested_tags", f"</{tag}> at offset {m.start()} while <{open_tag}> is open")
    if open_tag is not None:
        return _fail("unclosed_tag", f"<{open_tag}> is never closed")
    if counts["tool_response"]:
        return _fail("observation_written", "the turn contains a <tool_response> block; only the tools write those")
    if counts["think"] == 0:
        return _fail("no_think", "the turn has no <think>…</think> block")
    if counts["think"] > 1:
        return _fail("multiple_think", f"{counts['think']} <think> blocks; exactly one is allowed")
    calls, answers = counts["tool_call"], counts["answer"]
    if calls and answers:
        return _fail("answer_and_call", "the turn has both a <tool_call> and an <answer>")
    if calls > 1:
        return _fail("multiple_tool_calls", f"{calls} <tool_call> blocks; one call per turn")
    if answers > 1:
        return _fail("multiple_answers", f"{answers} <answer> blocks; exactly one is allowed")
    if not calls and not answers:
        return _fail("no_action", "the turn ends without a <tool_call> or an <answer>")
    return None


def parse_turn(text: str) -> Turn:
    """Classify one assistant turn (special tokens such as <|im_end|> already removed)."""
    if not text or not text.strip():
        return _fail("empty", "the turn is empty")
    problem = _check_tags(text)
    if problem is not None:
        return problem
    m = _TURN_RE.fullmatch(text)
    if m is None:
        return _fail("text_outside_tags", "text outside the blocks, or the action before <think>")
    think, tag, body = m.group("think").strip(), m.group("tag"), m.group("body")
    if tag == "answer":
        if not body.strip():
            return _fail("empty_answer", "the <answer> block is empty")
        return Turn("answer", think=think, answer=body.strip())
    try:
        call = json.loads(body)
    except json.JSONDecodeError as exc:
        return _fail("bad_json", f"tool call is not valid JSON: {exc.msg} at position {exc.pos}")
    if not isinstance(call, dict) or set(call) != {"name", "arguments"} or not isinstance(call["name"], str):
        return _fail("bad_call_schema", 'a tool call must be exactly {"name": "<tool>", "arguments": {...}}')
    arguments = call["arguments"]
    if not isinstance(arguments, dict):
        return _fail("bad_call_schema", f"'arguments' must be a JSON object, got {type(arguments).__name__}")
    tool = resolve_tool_name(call["name"])
    if tool is None:
        return _fail("unknown_tool", f"unknown tool {call['name']!r}")
    return Turn("tool_call", think=think, tool_name=call["name"], tool=tool, arguments=arguments)


def render_tool_call(name: str, arguments: dict, think: str, inline: bool = False) -> str:
    """The canonical text of a tool-call turn (what teachers write); `inline`: no newlines between the tags."""
    return _render(think, "tool_call", json.dumps({"name": name, "arguments": arguments}), inline)


def render_answer(plan_text: str, think: str, inline: bool = False) -> str:
    """The canonical text of an answer turn; `inline`: no newlines between the tags."""
    return _render(think, "answer", plan_text, inline)


def _render(think: str, tag: str, body: str, inline: bool) -> str:
    if inline:
        return f"<think>{think.strip()}</think><{tag}>{body.strip()}</{tag}>"
    return f"<think>\n{think}\n</think>\n<{tag}>\n{body}\n</{tag}>"
