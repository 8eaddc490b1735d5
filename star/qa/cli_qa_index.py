"""`star qa-index --out DIR`: the search index (BM25 or E5) of a corpus, for `star eval-qa --corpus DIR`.

    star qa-index --out data/qa/index --corpus data/qa/world/corpus.jsonl --retriever bm25   # the qa_index stage
"""

from __future__ import annotations

import argparse
import json
import sys

from star.cli_args import literal_choices
from star.qa.config import QAConfig
from star.qa.retrieval import build_index


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = QAConfig()
    parser.add_argument("--out", required=True, help="index folder (a DVC output; rebuilt whole)")
    parser.add_argument("--corpus", default=d.corpus, help="builtin[:DB], or a corpus JSONL/TSV (wiki-18 / DPR)")
    parser.add_argument("--retriever", default=d.retrieval.method, choices=literal_choices(d.retrieval, "method"), help="retrieval method")
    parser.add_argument("--index-cache", default=d.retrieval.cache_dir, help="content-addressed index cache directory")
    parser.add_argument("--e5-model", default=d.retrieval.e5_model, help="sentence-transformers model for --retriever e5")
    parser.add_argument("--world-db", default=d.builtin.db, help="database of a `builtin` corpus: generated[:SEED] or a dir")


def run(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    try:
        config = QAConfig.model_validate({
            "corpus": args.corpus, "builtin": {"db": args.world_db},
            "retrieval": {"method": args.retriever, "cache_dir": args.index_cache, "e5_model": args.e5_model}})
        path = build_index(config.corpus, args.out, config.retrieval, config.builtin.db)
    except (ValidationError, ValueError) as exc:
        print(f"star qa-index: {exc}", file=sys.stderr)
        return 2
    meta = json.loads((path / "meta.json").read_text())
    print(f"built {meta['method']} index of {meta['passages']} passages at {path}")
    return 0
