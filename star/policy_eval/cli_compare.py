"""`star compare`: two evaluations of the same queries and seeds, paired; where the difference comes from.

    star compare --before metrics/eval/sft --after metrics/eval/rl --names SFT RL \
        --queries data/splits/val.jsonl --db data/sandbox --reward quality --out metrics/compare

Writes compare.md (tables: rewards and metrics under both evaluator modes, every check, behaviour, by
level), compare.json, metrics.json (the numbers DVC and MLflow read) and compare.png.
"""

from __future__ import annotations

import argparse

from star.evaluation.queries import load_queries
from star.evaluation.rewards import SCHEDULED, final_reward
from star.evaluation.rewards import REWARDS as REWARD_REGISTRY
from star.policy_eval.paired import compare, headline_row, read_episodes, write
from star.sandbox.database import load_database
from star.training.config import resolve_config
from star.training.rl_config import GRPOConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--before", required=True, help="eval-agent output directory of the first model")
    parser.add_argument("--after", required=True, help="eval-agent output directory of the second model")
    parser.add_argument("--names", nargs=2, default=("before", "after"), metavar=("BEFORE", "AFTER"))
    parser.add_argument("--queries", required=True, help="the query file both evaluations ran")
    parser.add_argument("--db", default=None, help="database spec (default $STAR_DB, else generated)")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--reward", default="sum", choices=[*REWARD_REGISTRY, *SCHEDULED],
                        help="the reward the headline leads with: the one the model was trained on (a schedule: "
                             "the reward it ends on)")
    parser.add_argument("--config", default=None, help="params file whose rl.curriculum a scheduled --reward follows")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def _trained_reward(name: str, config: str | None) -> str:
    """The headline reward: `name`, or for a schedule the reward it ends on (its rl.curriculum from `config`)."""
    if name in SCHEDULED and config:
        return final_reward(name, resolve_config(GRPOConfig, "rl", path=config).curriculum)
    return final_reward(name)


def run(args) -> int:
    reward = _trained_reward(args.reward, args.config)
    try:
        before, after = read_episodes(args.before), read_episodes(args.after)
        result = compare(before, after, load_queries(args.queries), load_database(args.db), tuple(args.names),
                         progress=not args.quiet, reward=reward)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"star compare: {e}") from None
    files = write(result, args.out)
    h = headline_row(result)
    print(f"{args.names[1]} - {args.names[0]} over {result['queries']} queries: reward ({reward}) {h['diff']:+.3f} "
          f"(s.e. {h['diff_se']:.3f}, z {h['z']:.2f}); wrote {', '.join(str(p) for p in files.values())}")
    return 0
