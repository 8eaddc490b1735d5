"""The chat template every profile uses: ChatML with tool turns, prefix-preserving across turns.

Each message renders on its own (`<|im_start|>ROLE\\nCONTENT<|im_end|>\\n`), independent of what
follows, so the rendering of the first k messages is a prefix of the rendering of k+1 — the
property multi-turn RL needs (the policy's earlier tokens never change when a turn is appended).
Tool results are wrapped in `<tool_response>…</tool_response>` unless the caller already did.
The same Jinja source is saved with the tokenizer (`chat_template.jinja`) and rendered here in
Python, so the two never disagree.
"""

from __future__ import annotations

from functools import lru_cache

IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
ROLES = ("system", "user", "assistant", "tool")

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] not in ['system', 'user', 'assistant', 'tool'] -%}"
    "{{- raise_exception('unknown chat role: ' + message['role']) -}}"
    "{%- endif -%}"
    "{%- set content = message['content'] if message['content'] is string else '' -%}"
    "{%- if message['role'] == 'tool' and not content.startswith('<tool_response>') -%}"
    "{%- set content = '<tool_response>' + content + '</tool_response>' -%}"
    "{%- endif -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)
# What the policy generates after a generation prompt ends its turn with.
GENERATION_PROMPT = IM_START + "assistant\n"


class ChatTemplateError(ValueError):
    """A message list cannot be rendered (unknown role, missing content)."""


@lru_cache(maxsize=1)
def _compiled():
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise ChatTemplateError(message)

    env = ImmutableSandboxedEnvironment()
    env.globals["raise_exception"] = raise_exception
    return env.from_string(CHAT_TEMPLATE)


def render(messages: list[dict], add_generation_prompt: bool = False) -> str:
    """Render chat messages exactly as `tokenizer.apply_chat_template(..., tokenize=False)` does."""
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message or "content" not in message:
            raise ChatTemplateError(f"message {i}: needs 'role' and 'content', got {message!r:.120}")
        if message["role"] not in ROLES:
            raise ChatTemplateError(f"message {i}: unknown chat role {message['role']!r} (expected one of {ROLES})")
    return _compiled().render(messages=messages, add_generation_prompt=add_generation_prompt)


def assistant_spans(messages: list[dict]) -> list[tuple[int, int]]:
    """Character spans of the rendered text that the policy itself produced.

    For each assistant message: its content plus the closing `<|im_end|>` (the policy must learn
    to stop), but not the `<|im_start|>assistant\\n` header, which the generation prompt supplies.
    A message marked `"train": false` (a turn shown as context, not to imitate) has no span.
    """
    # Each message renders independently (the prefix property), so offsets accumulate.
    spans, offset = [], 0
    header = len(GENERATION_PROMPT)
    for message in messages:
        length = len(render([message]))
        if message["role"] == "assistant" and message.get("train") is not False:
            spans.append((offset + header, offset + length - 1))  # drop the newline after <|im_end|>
        offset += length
    return spans
