"""Teachers' and rejection sampling's settings (`star teacher`, `star sft-data`), one place per default."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class BuiltinTeacherConfig(BaseModel):
    """Behaviour knobs of the rule teacher: how 'human' its exploration is."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    p_redundant: float = Field(0.12, ge=0.0, le=1.0)
    """Chance, per call, of repeating an earlier search (as agents do when they lose track)."""
    p_typo: float = Field(0.06, ge=0.0, le=1.0)
    """Chance, per city search, of first misspelling the city and correcting it after the error."""
    p_skip_distance: float = Field(0.15, ge=0.0, le=1.0)
    """Chance of not checking driving/taxi options for a leg a flight covers (it may then miss a cheaper mode)."""
    p_self_route: float = Field(0.0, ge=0.0, le=1.0)
    """Chance, per road search, of first naming one end of the leg at both ends, reading the tool's 'no route'
    answer, and then searching the right leg; the wrong call carries no SFT loss (`train: false`), its recovery
    does. 0 keeps a trajectory's random stream, hence its calls, as without the knob."""
    max_cities: int = Field(5, ge=1)
    """Most candidate cities of a state the teacher investigates (the rest stay unseen)."""
    retries: int = Field(2, ge=0)
    """Times an unavailable tool is retried before the teacher moves on without it."""
    reach_probes: int = Field(12, ge=0)
    """Most calls spent, before choosing a state's cities, probing which ones the origin reaches (0: no probing)."""
    think: Literal["reasoned", "brief", "route"] = "reasoned"
    """reasoned: each <think> restates what it knows and why; brief: a fixed phrase per action (nothing to copy);
    route: brief, and the first also names the trip's origin and destination (one copy out of the query)."""
    layout: Literal["lines", "inline"] = "lines"
    """lines: each tag on its own line; inline: no newline between tags, so no tag follows the bare newline that
    also ends `assistant` (a ~1M model seeing one token back could not tell `assistant\n` from `<think>\n`)."""


class TeacherConfig(BaseModel):
    """The rejection-sampling teacher (`star teacher`)."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    kind: Literal["builtin", "openai"] = "builtin"
    """`builtin` plays the protocol with rules and the solver; `openai` asks an OpenAI-compatible LLM."""
    samples: int = Field(1, ge=1)
    """Trajectories sampled per query."""
    queries: int | None = None
    """Use at most this many queries of the pool (None = all)."""
    seed: int = 0
    """Base seed; each (query, sample) gets its own derived stream."""
    endpoint: str | None = None
    """Base URL of the OpenAI-compatible server for the `openai` teacher, e.g. http://127.0.0.1:8000/v1."""
    model: str | None = None
    """Model name sent to the endpoint."""
    temperature: float = Field(0.6, ge=0.0)
    """Sampling temperature of the LLM teacher."""
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    """Nucleus mass of the LLM teacher."""
    max_new_tokens: int = Field(4096, ge=1)
    """Longest assistant turn the LLM teacher may write."""
    workers: int = Field(4, ge=1)
    """Episodes run concurrently (threads; the LLM teacher waits on HTTP)."""
    builtin: BuiltinTeacherConfig = BuiltinTeacherConfig()
    """Exploration habits of the `builtin` teacher (redundant calls, typos, skipped checks)."""


class SFTDataConfig(BaseModel):
    """Rejection sampling of teacher trajectories into SFT data."""

    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")

    require_success: bool = True
    """Keep only trajectories whose plan passes every commonsense and hard check."""
    require_clean_format: bool = True
    """Keep only trajectories whose every assistant turn parses cleanly and that end with an answer."""
    tool_budget: int = Field(60, ge=1)
    """Reject trajectories with more tool calls than this."""
    first_turns: int = Field(0, ge=0)
    """Renamed openings written per kept trajectory: its query and first turn re-told for another route of the
    query set (star/teachers/first_turns.py), the data of SFT's copy stage (sft.first_turn_epochs); 0 = none."""
    seed: int = 0
    """Seed of the city pairs the first-turn examples draw."""
