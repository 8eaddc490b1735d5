"""`star eval-qa`: out-of-domain knowledge QA with a local search tool (recipe §5, the paper's Table 2).

    star eval-qa --model models/rl --dataset world --dataset data/qa/nq_test.jsonl --out metrics/ood
    star eval-qa --recall --dataset world                  # retrieval recall@k only, no model
    star eval-qa --merge metrics/ood/base metrics/ood/rl --out metrics/ood/compare   # one table, one plot

The built-in world and its index are written by `star qa-data` and `star qa-index` (star/qa/cli_qa_data.py,
cli_qa_index.py), the two stages before `eval_qa`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from star.cli_args import literal_choices, optional_int
from star.qa.config import PAPER_DATASETS, QAConfig
from star.qa.evaluate import evaluate_ood, load_datasets
from star.qa.report import load_results, plot_table2, table2_markdown
from star.qa.retrieval import retrieval_recall, retriever_for


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = QAConfig()
    parser.add_argument("--model", help="saved model directory (transformers); required unless --recall/--merge")
    parser.add_argument("--dataset", action="append", default=None, metavar="NAME|PATH",
                        help=f"QA set: a registry name ({', '.join(PAPER_DATASETS)}, world), world:DB, or a file "
                             f"in any benchmark's release format; repeatable (default: {', '.join(d.datasets)})")
    parser.add_argument("--corpus", default=d.corpus, help="builtin[:DB], a corpus JSONL/TSV (wiki-18 / DPR), or an index dir")
    parser.add_argument("--out", help="output directory (results.json, table.md, predictions/)")
    parser.add_argument("--retriever", default=d.retrieval.method, choices=literal_choices(d.retrieval, "method"), help="retrieval method")
    parser.add_argument("--top-k", type=int, default=d.retrieval.top_k, help="passages per search")
    parser.add_argument("--index-cache", default=d.retrieval.cache_dir, help="content-addressed index cache directory")
    parser.add_argument("--e5-model", default=d.retrieval.e5_model, help="sentence-transformers model for --retriever e5")
    parser.add_argument("--limit", type=optional_int, default=None, help="first N examples of each dataset (none = all)")
    parser.add_argument("--temperature", type=float, default=d.episode.temperature)
    parser.add_argument("--top-p", type=float, default=d.episode.top_p)
    parser.add_argument("--max-turns", type=int, default=d.episode.max_turns, help="assistant turns per episode")
    parser.add_argument("--max-new-tokens", type=int, default=d.episode.max_new_tokens, help="tokens per turn")
    parser.add_argument("--max-context", type=int, default=d.episode.max_context, help="tokens per episode")
    parser.add_argument("--batch-size", type=int, default=d.episode.batch_size, help="episodes decoded together")
    parser.add_argument("--seed", type=int, default=d.episode.seed)
    parser.add_argument("--world-db", default=d.builtin.db,
                        help="database of the built-in `world` QA set and `builtin` corpus: generated[:SEED] or a dir")
    parser.add_argument("--world-questions", type=int, default=d.builtin.questions, help="size of the `world` QA set")
    parser.add_argument("--name", default=None, help="row name in the table (default: the model directory name)")
    parser.add_argument("--recall", action="store_true", help="only measure retrieval recall@k on the datasets")
    parser.add_argument("--merge", nargs="+", metavar="RESULTS", help="merge results.json files/dirs into one table + plot")
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")


def config_from_args(args: argparse.Namespace) -> QAConfig:
    return QAConfig.model_validate({
        "datasets": args.dataset or QAConfig().datasets,
        "corpus": args.corpus,
        "limit": args.limit,
        "retrieval": {"method": args.retriever, "top_k": args.top_k, "cache_dir": args.index_cache,
                      "e5_model": args.e5_model},
        "builtin": {"db": args.world_db, "questions": args.world_questions},
        "episode": {"temperature": args.temperature, "top_p": args.top_p, "max_turns": args.max_turns,
                    "max_new_tokens": args.max_new_tokens, "max_context": args.max_context,
                    "batch_size": args.batch_size, "seed": args.seed},
    })


def _print_recall(config: QAConfig) -> None:
    datasets = load_datasets(config.datasets, config.limit, config.builtin)  # bad input fails before any output
    retriever = retriever_for(config.corpus, config.retrieval, config.builtin.db)
    k = config.retrieval.top_k
    print(f"retriever {config.retrieval.method}, corpus {config.corpus} ({len(retriever.passages)} passages)")
    print(f"| dataset | n | answer recall@{k} | support recall@{k} | support hit@{k} |")
    print("|---|---|---|---|---|")
    for ds in datasets:
        r = retrieval_recall(retriever, ds.examples, k)
        sup = f"{r['support_recall']:.3f} | {r['support_hit']:.3f}" if "support_recall" in r else "– | –"
        print(f"| {ds.title} | {r['examples']} | {r['answer_recall']:.3f} | {sup} |")


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    try:
        config = config_from_args(args)
    except ValidationError as exc:
        print(f"star eval-qa: invalid arguments:\n{exc}", file=sys.stderr)
        return 2
    try:
        if args.merge:
            return _merge(args)
        if args.recall:
            _print_recall(config)
            return 0
        if not args.model or not args.out:
            print("star eval-qa: --model and --out are required to evaluate (or use --recall / --merge)",
                  file=sys.stderr)
            return 2
        if not (Path(args.model) / "config.json").is_file():
            print(f"star eval-qa: no model at {args.model} (config.json missing); build one with `star build-model`",
                  file=sys.stderr)
            return 2
        import torch

        torch.set_num_threads(max(1, min(torch.get_num_threads(), 4)))
        results = evaluate_ood(args.model, args.out, config, model_name=args.name, progress=not args.no_progress)
    except ValueError as exc:  # every bad-input error of the package is a ValueError subclass
        print(f"star eval-qa: {exc}", file=sys.stderr)
        return 2
    print((Path(args.out) / "table.md").read_text())
    for r in results["datasets"].values():
        if "retrieval" in r:
            rr = r["retrieval"]
            print(f"{r['title']}: retrieval answer recall@{rr['k']} {rr['answer_recall']:.3f}, "
                  f"support recall@{rr['k']} {rr.get('support_recall', float('nan')):.3f}")
    print(f"wrote {args.out}/results.json, table.md, predictions/")
    return 0


def _merge(args: argparse.Namespace) -> int:
    if not args.out:
        print("star eval-qa --merge: --out is required", file=sys.stderr)
        return 2
    rows = load_results(args.merge)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    text = table2_markdown(rows, with_paper=True)
    (out / "table.md").write_text(text)
    plot_table2(rows, out / "table.png")
    print(text)
    print(f"wrote {out}/table.md and table.png")
    return 0
