"""The LLM teacher: an OpenAI-compatible chat model plays the protocol through the env.

Works in text (hosted APIs speak chat, not token ids); the env parses each reply strictly, runs
the tool, and scores the final plan exactly as for any policy. Context use is read from the
server's `usage.prompt_tokens` when it reports it.
"""

from __future__ import annotations

import time

from star.agent.config import AGENT_DEFAULTS, AgentConfig
from star.agent.env import TravelPlannerEnv
from star.agent.trajectory import Trajectory
from star.rollout.base import SamplingParams, derive_seed
from star.sandbox.rows import Database


class LLMTeacher:
    def __init__(self, backend, db: Database, agent_config: AgentConfig = AGENT_DEFAULTS,
                 params: SamplingParams | None = None):
        self.backend, self.db, self.agent_config = backend, db, agent_config
        self.params = params or SamplingParams(temperature=0.6, top_p=0.95, max_new_tokens=4096)
        self.name = f"openai:{getattr(backend, 'model', '?')}"

    def run(self, query: dict, query_id: str = "0", sample: int = 0, seed: int = 0) -> Trajectory:
        started = time.perf_counter()
        env = TravelPlannerEnv(self.db, self.agent_config, seed=seed)
        env.reset(query)
        prompt_tokens = completion_tokens = 0
        turn = 0
        while not env.done:
            room = self.agent_config.max_context - prompt_tokens
            if room <= 0:
                env.stop("context_overflow")
                break
            params = self.params.with_(seed=derive_seed(seed, "turn", turn),
                                       max_new_tokens=min(self.params.max_new_tokens, room))
            reply = self.backend.chat(env.messages, params)
            turn += 1
            prompt_tokens = (reply.prompt_tokens or prompt_tokens) + (reply.completion_tokens or 0)
            completion_tokens += reply.completion_tokens or 0
            if reply.finish_reason == "length" and prompt_tokens >= self.agent_config.max_context:
                env.messages.append({"role": "assistant", "content": reply.text})
                env.stop("context_overflow")
                break
            env.step(reply.text)
        fe = env.format_error
        return Trajectory(
            query_id=query_id, messages=list(env.messages), finish_reason=env.finish_reason, level=query.get("level"),
            sample=sample, seed=seed, plan=env.plan, answer=env.answer, scores=env.scores, tool_calls=env.tool_calls,
            tool_errors=env.tool_errors, format_error=fe.error if fe else None, format_detail=fe.detail if fe else None,
            n_tokens=prompt_tokens, n_policy_tokens=completion_tokens, agent=self.name,
            elapsed_s=round(time.perf_counter() - started, 4))
