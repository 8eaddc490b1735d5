"""One TravelPlanner episode as a gym-like environment: reset(query), then step(assistant_text).

The env owns the protocol state — messages, tool-call count, finish reason — and the tools
(with their failure injection). It works in text; the rollout engine keeps the token view and
tells the env when the context is full (`stop("context_overflow")`).
"""

from __future__ import annotations

from collections.abc import Callable

from star.agent.config import AGENT_DEFAULTS, FINISH_REASONS, AgentConfig
from star.agent.prompt import initial_messages, observation_message
from star.agent.turns import Turn, parse_turn
from star.evaluation.evaluator import evaluate_plan
from star.evaluation.plan import PlanParseError, parse_plan_text
from star.sandbox.rows import Database
from star.sandbox.tools import Toolbox

SCORE_KEYS = ("cs_micro", "cs_macro", "hard_micro", "hard_macro", "success")


def empty_scores(mode: str) -> dict:
    """Scores of an episode that delivered no plan: every metric 0."""
    return {"delivered": False, **dict.fromkeys(SCORE_KEYS, 0.0), "success": False, "coverage": 0.0,
            "slot_credit": 0.0, "slots_empty": None, "vacuous": [], "mode": mode, "checks": {}}


def score_plan(query: dict, plan: list[dict] | None, db: Database, mode: str) -> dict:
    """The evaluator's verdict on a plan as a plain dict (stored in the trajectory)."""
    if plan is None:
        return empty_scores(mode)
    s = evaluate_plan(query, plan, db, mode=mode)
    checks = {"commonsense": {k: list(v) for k, v in (s.commonsense or {}).items()},
              "hard": {k: list(v) for k, v in (s.hard or {}).items()}}
    return {"delivered": bool(s.delivered), "cs_micro": float(s.cs_micro), "cs_macro": float(s.cs_macro),
            "hard_micro": float(s.hard_micro), "hard_macro": float(s.hard_macro), "success": bool(s.success),
            "coverage": float(s.coverage), "slot_credit": float(s.slot_credit), "slots_empty": int(s.slots_empty),
            "vacuous": s.vacuous, "mode": mode, "checks": checks}


def parse_answer(answer: str) -> list[dict] | None:
    """The structured plan of an answer, or None when the text does not follow the plan format."""
    try:
        return parse_plan_text(answer)
    except PlanParseError:
        return None


def episode_success(scores: dict, finish_reason: str) -> float:
    """Default reward: 1 for a successful plan, else 0 (the trainer passes its own reward function)."""
    return float(finish_reason == "answer" and bool(scores.get("success")))


class ProtocolEnv:
    """The agent protocol's episode, shared by every environment on it (TravelPlanner, knowledge QA).

    reset(query) -> initial messages; step(assistant_text) -> (observation message | None, reward, done,
    info); stop(reason) ends it from outside (the engine saw the context fill up). Subclasses give the
    opening messages, run one tool call and score the finished episode; the grammar, the budget and
    the finish reasons are the same everywhere.
    """

    tool_budget: int
    """Tool calls allowed; one more call ends the episode with finish reason `call_budget`."""

    def __init__(self, reward_fn: Callable[[dict, str], float]):
        self.reward_fn = reward_fn
        self.query: dict | None = None

    # -- what an environment defines ----------------------------------------------------------------
    def opening(self, query: dict) -> list[dict]:
        raise NotImplementedError

    def parse(self, assistant_text: str) -> Turn:
        return parse_turn(assistant_text)

    def run_tool(self, turn: Turn) -> tuple[str, bool, object]:
        """Execute one call: (observation text, ok, the result object reported in `info`)."""
        raise NotImplementedError

    def score(self, reason: str) -> dict:
        raise NotImplementedError

    def on_answer(self, answer: str) -> None:
        """Read the final answer (TravelPlanner parses its plan here)."""

    # -- the episode ---------------------------------------------------------------------------------
    def reset(self, query: dict, seed: int | None = None) -> list[dict]:
        messages = self.opening(query)
        self.query = query
        self.messages = list(messages)
        self.tool_calls = 0
        self.tool_errors = 0
        self.turns: list[Turn] = []
        self.finish_reason: str | None = None
        self.format_error: Turn | None = None
        self.answer: str | None = None
        self.plan: list[dict] | None = None
        self.scores: dict = {}
        return list(self.messages)

    @property
    def done(self) -> bool:
        return self.finish_reason is not None

    def step(self, assistant_text: str) -> tuple[dict | None, float, bool, dict]:
        if self.query is None:
            raise RuntimeError("step() before reset()")
        if self.done:
            raise RuntimeError(f"step() after the episode ended ({self.finish_reason})")
        self.messages.append({"role": "assistant", "content": assistant_text})
        turn = self.parse(assistant_text)
        self.turns.append(turn)
        if turn.kind == "format_error":
            self.format_error = turn
            return self._finish("format_error", {"turn": turn})
        if turn.kind == "answer":
            self.answer = turn.answer
            self.on_answer(turn.answer)
            return self._finish("answer", {"turn": turn})
        if self.tool_calls >= self.tool_budget:
            return self._finish("call_budget", {"turn": turn})
        text, ok, result = self.run_tool(turn)
        self.tool_calls += 1
        self.tool_errors += not ok
        obs = observation_message(text)
        self.messages.append(obs)
        return obs, 0.0, False, {"turn": turn, "result": result}

    def stop(self, reason: str) -> tuple[None, float, bool, dict]:
        """End the episode from outside (the engine saw the context fill up)."""
        if reason not in FINISH_REASONS or reason == "answer":
            raise ValueError(f"cannot stop an episode with reason {reason!r}")
        return self._finish(reason, {})

    def _finish(self, reason: str, info: dict) -> tuple[None, float, bool, dict]:
        self.finish_reason = reason
        self.scores = self.score(reason)
        reward = self.reward_fn(self.scores, reason)
        return None, reward, True, {**info, "finish_reason": reason, "scores": self.scores}


class TravelPlannerEnv(ProtocolEnv):
    """A TravelPlanner episode: the six tools (with failure injection) and the evaluator's scores."""

    def __init__(self, db: Database, config: AgentConfig = AGENT_DEFAULTS, seed: int = 0,
                 reward_fn: Callable[[dict, str], float] = episode_success):
        super().__init__(reward_fn)
        self.db, self.config, self.seed = db, config, seed
        self.tool_budget = config.tool_budget

    def reset(self, query: dict, seed: int | None = None) -> list[dict]:
        self.seed = self.seed if seed is None else seed
        # One toolbox per episode: its failure stream depends only on this episode's seed, so
        # concurrent episodes never shift each other's injected failures.
        self.toolbox = Toolbox(self.db, style=self.config.style, failure_rate=self.config.failure_rate,
                               seed=self.seed)
        return super().reset(query, seed)

    def opening(self, query: dict) -> list[dict]:
        return initial_messages(query, self.config.style, self.config.prompt)

    def on_answer(self, answer: str) -> None:
        self.plan = parse_answer(answer)

    def run_tool(self, turn: Turn):
        result = self.toolbox.run(turn.tool_name, turn.arguments)
        return result.text, result.ok, result

    def score(self, reason: str) -> dict:
        mode = self.config.eval_mode
        return score_plan(self.query, self.plan, self.db, mode) if reason == "answer" else empty_scores(mode)
