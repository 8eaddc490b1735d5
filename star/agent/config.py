"""The agent protocol's settings: prompt style, budgets, evaluator mode (one place per default).

Teachers' and rejection sampling's are in star.teachers.config, policy evaluation's in star.policy_eval.config."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from star.sandbox.config import DEFAULTS as SANDBOX
from star.sandbox.config import Prompt

Style = Literal["compact", "official"]
EvalMode = Literal["strict", "official"]
FINISH_REASONS = ("answer", "call_budget", "context_overflow", "format_error")


class AgentConfig(BaseModel):
    """How one episode runs: observations, budgets, noise, scoring."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    style: Style = "compact"
    """Observation text style of the tools (`compact` for our agents, `official` for parity)."""
    prompt: Prompt = SANDBOX.prompt
    """System prompt of each episode (`sandbox.prompt`: full or short)."""
    tool_budget: int = Field(60, ge=1)
    """Maximum tool calls per episode; one more call ends the episode with finish reason `call_budget`."""
    max_context: int = Field(32000, ge=16)
    """Context limit in tokens (prompt + all turns); reaching it ends the episode as `context_overflow`."""
    failure_rate: float = Field(0.0, ge=0.0, le=1.0)
    """Probability that a tool execution returns `Error: Current tool X is not available.`."""
    eval_mode: EvalMode = "strict"
    """Evaluator mode that scores the final plan (`strict` closes the official evaluator's loopholes)."""


AGENT_DEFAULTS = AgentConfig()
