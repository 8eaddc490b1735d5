"""Lock-step baseline: a fixed group of episodes advances one turn together until all are done.

Each round generates one turn for every unfinished episode of the group in one batch, then
executes all their tool calls, then starts the next round; a new group starts only when the
whole group has finished. Same episode logic and seeds as the async engine, so the two give
the same trajectories; only the schedule (and so the throughput) differs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from star.agent.config import AGENT_DEFAULTS, AgentConfig
from star.agent.env import episode_success
from star.agent.trajectory import Trajectory
from star.rollout.base import GenerationBackend
from star.rollout.config import ROLLOUT_DEFAULTS, RolloutConfig
from star.rollout.engine import EnvFactory, EpisodeStepper, _progress, episode_list
from star.sandbox.rows import Database


def run_lockstep(stepper: EpisodeStepper, backend: GenerationBackend, episodes: list) -> list[Trajectory]:
    """Drive started episodes to the end together: each round one generation batch for every unfinished
    episode, then all their tool calls. The one lock-step loop (this engine's groups, ARPO's branches)."""
    while True:
        active, params = [], []
        for ep in episodes:
            p = None if ep.env.done else stepper.params_for(ep)
            if p is not None:
                active.append(ep)
                params.append(p)
        if not active:
            break
        for ep, gen, p in zip(active, backend.generate([ep.ids for ep in active], params), params):
            stepper.execute(ep, gen, p.max_new_tokens)
    return [stepper.finish(ep) for ep in episodes]


class LockstepEngine:
    def __init__(self, backend: GenerationBackend, db: Database, agent_config: AgentConfig = AGENT_DEFAULTS,
                 rollout_config: RolloutConfig = ROLLOUT_DEFAULTS,
                 reward_fn: Callable[[dict, str], float] = episode_success, agent_name: str = "policy",
                 env_factory: EnvFactory | None = None):
        self.config = rollout_config
        self.stepper = EpisodeStepper(backend, db, agent_config, rollout_config, reward_fn, agent_name, env_factory)
        self.backend = backend

    def run(self, queries: Sequence[dict], samples_per_query: int = 1) -> list[Trajectory]:
        todo = episode_list(queries, samples_per_query)
        st, size = self.stepper, self.config.max_batch
        results: list[Trajectory] = []
        bar = _progress(len(todo), self.config.progress, "rollout (lock-step)")
        try:
            for start in range(0, len(todo), size):
                group = [st.start(start + i, q, qid, s) for i, (q, qid, s) in enumerate(todo[start:start + size])]
                results += run_lockstep(st, self.backend, group)
                bar.update(len(group))
        finally:
            bar.close()
        return results
