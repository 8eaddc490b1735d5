"""One training rank for tests/training/test_multirank.py (run by torchrun, or alone as 1 rank).

    python -m torch.distributed.run --nproc_per_node 2 tests/training/dist_worker.py sft --model M --out O
    python tests/training/dist_worker.py grpo --model M --out O [--steps 2] [--kill-after 1] [--resume]

sft: train_sft on scripted conversations. grpo: GRPO on fixed, teacher-forced trajectories
(test_resume.FixedRollouts), each rank appending the query ids of its share per step to
batches-rank{R}.jsonl; --kill-after N SIGKILLs rank 0 right after step N's checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def _queries(db, n_queries: int):
    from star.training.synthetic import scripted_conversations

    convs = scripted_conversations(db, 2 * n_queries, seed=4, system="Plan.", max_obs_lines=1)
    return [{"id": f"q{n}", "n": n, "conversations": convs[2 * n:2 * n + 2]} for n in range(n_queries)]


def main() -> int:
    import torch

    torch.set_num_threads(1)
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=("sft", "grpo"))
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--queries", type=int, default=2)
    parser.add_argument("--save-every", type=int, default=0)
    parser.add_argument("--kill-after", type=int, default=None)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()

    from star.sandbox.database import load_database
    from star.training import distributed as D

    db = load_database("generated:0")
    out = Path(args.out)
    if args.mode == "sft":
        from star.training.config import SFTConfig
        from star.training.sft import train_sft
        from star.training.synthetic import scripted_conversations, write_sft_jsonl

        data = out.parent / f"{out.name}-sft.jsonl"
        write_sft_jsonl(data, scripted_conversations(db, 8, seed=2, system="Plan trips.", max_obs_lines=1))
        cfg = SFTConfig(batch_size=4, micro_batch_size=1, epochs=1, max_steps=2, learning_rate=1e-3,
                        warmup_ratio=0.0, eval_fraction=0.0, zero_stage=2, bf16=False, bucketing=False)
        train_sft(data, args.model, out, cfg, progress=False)
        return 0

    from star.training.rl_config import GRPOConfig
    from tests.training.test_resume import FixedRollouts

    class Worker(FixedRollouts):
        def train_step(self):
            row = super().train_step()
            with open(out / f"batches-rank{self.rank}.jsonl", "a") as fh:
                fh.write(json.dumps({"step": self.step, "ids": self.batch_ids[self.rank],
                                     "loss": row.get("loss")}) + "\n")
            return row

        def checkpoint(self):
            super().checkpoint()
            if args.kill_after is not None and self.step == args.kill_after and D.rank() == 0:
                os.kill(os.getpid(), signal.SIGKILL)  # a real kill: no cleanup, no final save

    cfg = GRPOConfig(batch_queries=2, num_generations=2, learning_rate=1e-3, max_steps=args.steps, bf16=False,
                     zero_stage=2, save_every=args.save_every, mini_batches=1, micro_batch_size=1,
                     num_iterations=1, validation={"every": 0})
    out.mkdir(parents=True, exist_ok=True)
    Worker(args.model, _queries(db, args.queries), out, cfg, db=db, progress=False).train(resume=args.resume)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
