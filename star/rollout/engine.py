"""Asynchronous multi-episode rollout: many episodes in flight, generation batched across them.

Scheduling is at turn granularity. Each episode cycles generate -> execute (tool call, or the
evaluator for an answer) -> generate. The main thread only generates: it takes up to
`max_batch` episodes that are ready for their next turn and decodes them together, while tool
executions and scoring run in a thread pool. An episode waiting on its tool, or finished, never
holds the others back, and a finished episode's slot is refilled at once from the queue.

Token-in/token-out: an episode keeps the exact ids the policy generated (mask 1, with their
log-probs) and appends the ids of each tool response and the next assistant header (mask 0);
the history is never decoded and re-encoded. Every random choice of an episode (the sampling
seed of each turn, injected tool failures) derives from (base seed, query id, sample, turn),
so the schedule cannot change a trajectory: the lock-step baseline produces the same ones.
"""

from __future__ import annotations

import queue
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from star.agent.config import AGENT_DEFAULTS, AgentConfig
from star.agent.env import ProtocolEnv, TravelPlannerEnv, episode_success
from star.agent.trajectory import Trajectory
from star.rollout.base import Generation, GenerationBackend, SamplingParams, derive_seed
from star.rollout.chat import TurnJoiner, prompt_ids
from star.rollout.config import ROLLOUT_DEFAULTS, RolloutConfig
from star.sandbox.rows import Database


EnvFactory = Callable[[int], ProtocolEnv]
"""Builds one episode's environment from its seed (default: a TravelPlannerEnv over the engine's database)."""


def query_id(query: dict, index: int) -> str:
    return str(query.get("id", query.get("idx", index)))


def episode_list(queries: Sequence[dict], samples_per_query: int) -> list[tuple[dict, str, int]]:
    """(query, query id, sample index) for every episode, in output order."""
    if samples_per_query < 1:
        raise ValueError(f"samples_per_query must be >= 1, got {samples_per_query}")
    return [(q, query_id(q, i), s) for i, q in enumerate(queries) for s in range(samples_per_query)]


def turn_text(tokenizer, ids: Sequence[int], stop_ids) -> tuple[str, bool]:
    """A generated turn's text, special tokens kept (the turn's tags may be special tokens), without the stop
    token that ended it; and whether one did."""
    ended = bool(ids) and ids[-1] in stop_ids
    return tokenizer.decode(list(ids[:-1]) if ended else list(ids), skip_special_tokens=False), ended


@dataclass
class Episode:
    """One episode's token view and its environment."""

    index: int
    query: dict
    query_id: str
    sample: int
    seed: int
    env: ProtocolEnv
    ids: list[int]
    mask: list[int]
    logprobs: list[float]
    prompt_len: int
    turn: int = 0
    started: float = field(default_factory=time.perf_counter)
    pending: Generation | None = None
    """The last generation, between the generate call and its execution."""


class EpisodeStepper:
    """What one turn does to one episode; shared by the async engine and the lock-step baseline."""

    def __init__(self, backend: GenerationBackend, db: Database, agent_config: AgentConfig,
                 rollout_config: RolloutConfig, reward_fn: Callable[[dict, str], float], agent_name: str,
                 env_factory: EnvFactory | None = None):
        self.backend, self.db = backend, db
        self.env_factory = env_factory or self._travel_env
        self.agent_config, self.rollout_config = agent_config, rollout_config
        self.reward_fn, self.agent_name = reward_fn, agent_name
        self.tokenizer = backend.tokenizer
        self.joiner = TurnJoiner(self.tokenizer)
        self.stop_ids = backend.stop_token_ids
        self.base = SamplingParams(temperature=rollout_config.temperature, top_p=rollout_config.top_p,
                                   max_new_tokens=rollout_config.max_new_tokens)

    def _travel_env(self, seed: int) -> TravelPlannerEnv:
        return TravelPlannerEnv(self.db, self.agent_config, seed=seed, reward_fn=self.reward_fn)

    def start(self, index: int, query: dict, qid: str, sample: int) -> Episode:
        seed = derive_seed(self.rollout_config.seed, qid, sample)
        env = self.env_factory(seed)
        messages = env.reset(query)
        ids = prompt_ids(self.tokenizer, messages)
        ep = Episode(index, query, qid, sample, seed, env, ids, [0] * len(ids), [0.0] * len(ids), len(ids))
        if len(ids) >= self.agent_config.max_context:
            env.stop("context_overflow")
        return ep

    def params_for(self, ep: Episode) -> SamplingParams | None:
        """This turn's sampling params, or None when no room is left in the context (episode stopped)."""
        room = self.agent_config.max_context - len(ep.ids)
        if room <= 0:
            ep.env.stop("context_overflow")
            return None
        return self.base.with_(max_new_tokens=min(self.base.max_new_tokens, room),
                               seed=derive_seed(ep.seed, "turn", ep.turn))

    def execute(self, ep: Episode, gen: Generation, max_new_tokens: int) -> None:
        """Append the generated turn, run it through the env, append the observation (tool thread)."""
        ids = list(gen.token_ids)
        ep.ids += ids
        ep.mask += [1] * len(ids)
        ep.logprobs += list(gen.logprobs)
        ep.turn += 1
        text, ended = turn_text(self.tokenizer, ids, self.stop_ids)
        capped_by_context = gen.finish_reason == "length" and max_new_tokens < self.base.max_new_tokens
        if capped_by_context and len(ep.ids) >= self.agent_config.max_context:
            ep.env.messages.append({"role": "assistant", "content": text})
            ep.env.stop("context_overflow")
            return
        obs, _, done, _ = ep.env.step(text)
        if done:
            return
        obs_ids = self.joiner.after_turn_ids(ended, obs["content"])
        if len(ep.ids) + len(obs_ids) >= self.agent_config.max_context:
            ep.env.stop("context_overflow")  # no room for the observation plus a next turn
            return
        ep.ids += obs_ids
        ep.mask += [0] * len(obs_ids)
        ep.logprobs += [0.0] * len(obs_ids)

    def finish(self, ep: Episode) -> Trajectory:
        env = ep.env
        fe = env.format_error
        return Trajectory(
            query_id=ep.query_id, messages=list(env.messages), finish_reason=env.finish_reason,
            level=ep.query.get("level"), sample=ep.sample, seed=ep.seed, token_ids=ep.ids,
            policy_mask=ep.mask, logprobs=ep.logprobs, prompt_len=ep.prompt_len, plan=env.plan,
            answer=env.answer, scores=env.scores, tool_calls=env.tool_calls, tool_errors=env.tool_errors,
            format_error=fe.error if fe else None, format_detail=fe.detail if fe else None,
            n_tokens=len(ep.ids), n_policy_tokens=sum(ep.mask), agent=self.agent_name,
            elapsed_s=round(time.perf_counter() - ep.started, 4))


def _progress(total: int, enabled: bool, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="ep", disable=not enabled, leave=False)


class RolloutEngine:
    """`run(queries, samples_per_query) -> list[Trajectory]` (ordered by query, then sample)."""

    def __init__(self, backend: GenerationBackend, db: Database, agent_config: AgentConfig = AGENT_DEFAULTS,
                 rollout_config: RolloutConfig = ROLLOUT_DEFAULTS,
                 reward_fn: Callable[[dict, str], float] = episode_success, agent_name: str = "policy",
                 env_factory: EnvFactory | None = None):
        self.config = rollout_config
        self.stepper = EpisodeStepper(backend, db, agent_config, rollout_config, reward_fn, agent_name, env_factory)
        self.backend = backend

    def run(self, queries: Sequence[dict], samples_per_query: int = 1, done: dict[int, Trajectory] | None = None,
            on_finish: Callable[[int, Trajectory], None] | None = None) -> list[Trajectory]:
        """`done`: episodes (by output index) a cut-off run already finished, kept and not run again;
        `on_finish(index, trajectory)` is called as each new episode ends (an episode journal)."""
        done = done or {}
        episodes = episode_list(queries, samples_per_query)
        results: list[Trajectory | None] = [done.get(i) for i in range(len(episodes))]
        todo = deque((i, e) for i, e in enumerate(episodes) if i not in done)
        ready: deque[Episode] = deque()
        back: queue.Queue = queue.Queue()  # episodes returning from the tool pool (or raising)
        count = {"in_flight": 0, "executing": 0}
        cfg, st = self.config, self.stepper
        continuous = cfg.continuous and hasattr(self.backend, "generate_continuous")
        bar = _progress(len(episodes), cfg.progress, "rollout")
        bar.update(len(episodes) - len(todo))

        def execute(ep: Episode, gen: Generation, max_new: int) -> Episode:
            st.execute(ep, gen, max_new)
            return ep

        def collect(wait: bool) -> None:
            """Start queued episodes into free slots, then take in what the tool threads finished. With
            `wait`: block when nothing can generate, and when a batch is not full while tools still run,
            wait a moment for them to fill it (tool calls take milliseconds, a generate call far longer)."""
            while todo and count["in_flight"] < cfg.max_in_flight:
                index, (q, qid, s) = todo.popleft()
                ready.append(st.start(index, q, qid, s))
                count["in_flight"] += 1
            deadline = None
            while True:
                if not wait or (ready and not (len(ready) < cfg.max_batch and count["executing"])):
                    timeout = 0.0
                elif not ready:
                    timeout = None
                else:
                    deadline = deadline or time.perf_counter() + cfg.gather_wait_s
                    timeout = max(0.0, deadline - time.perf_counter())
                try:
                    item = back.get(block=timeout != 0.0, timeout=timeout)
                except queue.Empty:
                    break
                count["executing"] -= 1
                if isinstance(item, BaseException):
                    raise item
                ready.append(item)

        def take(n: int) -> list[tuple[Episode, SamplingParams]]:
            """Up to n ready episodes that want a turn; finished ones are recorded and free their slot."""
            batch = []
            while ready and len(batch) < n:
                ep = ready.popleft()
                p = None if ep.env.done else st.params_for(ep)
                if p is None:  # finished (answer, stop) -> record it and free the slot
                    results[ep.index] = st.finish(ep)
                    if on_finish is not None:
                        on_finish(ep.index, results[ep.index])
                    count["in_flight"] -= 1
                    bar.update(1)
                    continue
                batch.append((ep, p))
            return batch

        with ThreadPoolExecutor(max_workers=cfg.tool_workers, thread_name_prefix="tools") as pool:

            def dispatch(ep: Episode, gen: Generation, p: SamplingParams) -> None:
                count["executing"] += 1
                fut = pool.submit(execute, ep, gen, p.max_new_tokens)
                fut.add_done_callback(lambda f: back.put(f.exception() or f.result()))

            def requests(batch: list[tuple[Episode, SamplingParams]]) -> list[tuple]:
                """generate_continuous's (tag, prompt, params): the tag brings the episode and params back."""
                return [((ep, p), ep.ids, p) for ep, p in batch]

            def refill(n: int) -> list[tuple]:
                collect(wait=False)
                return requests(take(n))

            try:
                while todo or count["in_flight"]:
                    collect(wait=True)
                    batch = take(cfg.max_batch)
                    if not batch:
                        continue
                    if continuous:
                        self.backend.generate_continuous(
                            requests(batch), refill,
                            lambda tag, gen: dispatch(tag[0], gen, tag[1]), admit_every=cfg.admit_every)
                        continue
                    gens = self.backend.generate([ep.ids for ep, _ in batch], [p for _, p in batch])
                    for (ep, p), gen in zip(batch, gens):
                        dispatch(ep, gen, p)
            finally:
                bar.close()
        return results  # type: ignore[return-value]
