"""Retrievers behind one interface: `search(query, k) -> [Hit]`, built once per corpus and cached.

Registry `RETRIEVERS` maps a name to a class, so the retriever is a parameter:
- `bm25` — lexical BM25 with bm25s (sparse matrix scoring in numpy; the offline default);
- `e5` — dense E5 embeddings (sentence-transformers) searched by inner product with FAISS when
  installed, numpy otherwise. Import-guarded: asking for it without the package is a clear error.

`load_retriever(passages, config)` addresses each index by content (corpus digest + method +
settings) under `config.cache_dir`; a second call with the same corpus loads instead of building.
An index is built in a temp directory and renamed into place, so a crash never leaves half an index.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from star.qa.builtin_data import resolve_corpus
from star.qa.config import RetrievalConfig
from star.qa.corpus import Passage, corpus_digest, load_corpus, write_corpus
from star.qa.metrics import has_answer, support_recall


class RetrieverUnavailable(ValueError):
    """The retriever needs a package or model that is not installed here; the message says which."""


class IndexDirError(ValueError):
    """An index directory is missing or damaged; the message names it."""


@dataclass(frozen=True, slots=True)
class Hit:
    passage: Passage
    score: float


RETRIEVERS: dict[str, type["Retriever"]] = {}


def register(name: str):
    def deco(cls):
        cls.name = name
        RETRIEVERS[name] = cls
        return cls
    return deco


class Retriever(ABC):
    """Top-k passages for a query. Subclasses implement build / save / load / batch_search."""

    name: ClassVar[str] = ""

    def __init__(self, passages: list[Passage], config: RetrievalConfig):
        self.passages = passages
        self.config = config

    @classmethod
    @abstractmethod
    def build(cls, passages: list[Passage], config: RetrievalConfig) -> "Retriever":
        """Index `passages` in memory."""

    @abstractmethod
    def _save_index(self, directory: Path) -> None:
        """Write the method's own index files into `directory`."""

    @classmethod
    @abstractmethod
    def _load_index(cls, directory: Path, passages: list[Passage], config: RetrievalConfig) -> "Retriever":
        """Read what `_save_index` wrote."""

    @abstractmethod
    def batch_search(self, queries: list[str], k: int | None = None) -> list[list[Hit]]:
        """Top-k hits per query, best first (k defaults to config.top_k, clamped to the corpus size)."""

    def search(self, query: str, k: int | None = None) -> list[Hit]:
        return self.batch_search([query], k)[0]

    @classmethod
    def settings(cls, config: RetrievalConfig) -> dict:
        """The settings that change the index (part of its content address)."""
        return {}

    def _k(self, k: int | None) -> int:
        return max(1, min(k or self.config.top_k, len(self.passages)))

    # ---- on disk: passages.jsonl + meta.json + the method's files
    def save(self, directory: str | Path) -> Path:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        write_corpus(directory / "passages.jsonl", self.passages)
        self._save_index(directory)
        meta = {"method": self.name, "settings": self.settings(self.config), "passages": len(self.passages),
                "corpus_digest": corpus_digest(self.passages)}
        (directory / "meta.json").write_text(json.dumps(meta, indent=2))
        return directory


def open_index(directory: str | Path, config: RetrievalConfig | None = None) -> Retriever:
    """Load a saved index directory (self-contained: it carries its passages)."""
    directory = Path(directory)
    meta_path = directory / "meta.json"
    if not meta_path.is_file():
        raise IndexDirError(f"{directory}: not an index directory (no meta.json)")
    meta = json.loads(meta_path.read_text())
    method = meta.get("method")
    if method not in RETRIEVERS:
        raise IndexDirError(f"{meta_path}: unknown retriever {method!r}; known: {', '.join(RETRIEVERS)}")
    config = config or RetrievalConfig(method=method)
    passages = load_corpus(directory / "passages.jsonl")
    return RETRIEVERS[method]._load_index(directory, passages, config)


def index_key(passages: list[Passage], config: RetrievalConfig) -> str:
    """Content address: corpus digest + method + the settings that change the index."""
    cls = get_retriever_class(config.method)
    blob = json.dumps({"corpus": corpus_digest(passages), "method": config.method,
                       "settings": cls.settings(config)}, sort_keys=True)
    return f"{config.method}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def get_retriever_class(method: str) -> type[Retriever]:
    if method not in RETRIEVERS:
        raise RetrieverUnavailable(f"unknown retriever {method!r}; known: {', '.join(RETRIEVERS)}")
    return RETRIEVERS[method]


def load_retriever(passages: list[Passage], config: RetrievalConfig | None = None, *,
                   cache: bool = True) -> Retriever:
    """The retriever for `passages`: loaded from the content-addressed cache, or built and cached."""
    config = config or RetrievalConfig()
    cls = get_retriever_class(config.method)
    if not cache:
        return cls.build(passages, config)
    target = Path(config.cache_dir) / index_key(passages, config)
    if (target / "meta.json").is_file():
        return cls._load_index(target, passages, config)
    retriever = cls.build(passages, config)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    os.chmod(tmp, 0o755)  # mkdtemp makes it private; the index is shared like any output
    try:
        retriever.save(tmp)
        try:
            os.replace(tmp, target)
        except OSError:  # another process finished the same index first: theirs is identical
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return retriever


# ------------------------------------------------------------------------------------------- BM25

def _stemmer():
    """PyStemmer's English stemmer when installed (bm25s' recommended one), else no stemming."""
    try:
        import Stemmer  # PyStemmer
    except ImportError:
        return None
    return Stemmer.Stemmer("english")


@register("bm25")
class BM25Retriever(Retriever):
    """Okapi BM25 (Lucene variant) over title + text, English stopwords removed."""

    def __init__(self, passages, config, model):
        super().__init__(passages, config)
        self.model = model
        stemmer = _stemmer()
        self._stem = stemmer.stemWords if stemmer is not None else None

    @classmethod
    def settings(cls, config: RetrievalConfig) -> dict:
        return {"k1": config.bm25_k1, "b": config.bm25_b, "stemmer": "pystemmer-en" if _stemmer() else None}

    @staticmethod
    def _texts(passages: list[Passage]) -> list[str]:
        return [f"{p.title} {p.text}" for p in passages]

    @classmethod
    def build(cls, passages, config):
        import bm25s

        if not passages:
            raise ValueError("cannot index an empty corpus")
        stemmer = _stemmer()
        tokens = bm25s.tokenize(cls._texts(passages), stopwords="en",
                                stemmer=stemmer.stemWords if stemmer else None, show_progress=False)
        model = bm25s.BM25(k1=config.bm25_k1, b=config.bm25_b)
        model.index(tokens, show_progress=len(passages) > 50_000)
        return cls(passages, config, model)

    def _save_index(self, directory: Path) -> None:
        self.model.save(str(directory / "bm25"), show_progress=False)

    @classmethod
    def _load_index(cls, directory, passages, config):
        import bm25s

        path = directory / "bm25"
        if not path.is_dir():
            raise IndexDirError(f"{directory}: BM25 index files missing")
        model = bm25s.BM25.load(str(path), show_progress=False)
        return cls(passages, config, model)

    def batch_search(self, queries, k=None):
        import bm25s

        k = self._k(k)
        tokens = bm25s.tokenize(list(queries), stopwords="en", stemmer=self._stem, return_ids=False,
                                show_progress=False)
        docs, scores = self.model.retrieve(tokens, k=k, show_progress=False, n_threads=1)
        return [[Hit(self.passages[int(d)], float(s)) for d, s in zip(row_d, row_s)]
                for row_d, row_s in zip(docs, scores)]


# -------------------------------------------------------------------------------------------- E5

def _faiss():
    try:
        import faiss
    except ImportError:
        return None
    return faiss


@register("e5")
class E5Retriever(Retriever):
    """Dense retrieval with an E5 encoder: 'query: ' / 'passage: ' prefixes, normalised embeddings, inner product."""

    def __init__(self, passages, config, encoder, embeddings):
        super().__init__(passages, config)
        self.encoder = encoder
        self.embeddings = embeddings  # (n_passages, dim) float32, L2-normalised
        faiss = _faiss()
        self.index = None
        if faiss is not None:
            self.index = faiss.IndexFlatIP(embeddings.shape[1])
            self.index.add(embeddings)

    @classmethod
    def settings(cls, config: RetrievalConfig) -> dict:
        return {"model": config.e5_model}

    @staticmethod
    def _encoder(config: RetrievalConfig):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise RetrieverUnavailable(
                "retriever 'e5' needs the sentence-transformers package (and faiss-cpu for fast search); "
                "install them or use --retriever bm25") from None
        try:
            # Offline by default: a local path or the HF cache; fetching is opt-in (e5_download).
            return SentenceTransformer(config.e5_model, device="cpu", local_files_only=not config.e5_download)
        except Exception as exc:
            raise RetrieverUnavailable(
                f"retriever 'e5': cannot load model {config.e5_model!r} ({type(exc).__name__}: {exc}); give a local "
                "path with --e5-model, or pre-fetch it into the Hugging Face cache") from None

    def _encode(self, texts: list[str]):
        import numpy as np

        vecs = self.encoder.encode(texts, batch_size=self.config.e5_batch_size, normalize_embeddings=True,
                                   show_progress_bar=len(texts) > 1000, convert_to_numpy=True)
        return np.ascontiguousarray(vecs, dtype="float32")

    @classmethod
    def build(cls, passages, config):
        import numpy as np

        encoder = cls._encoder(config)
        vecs = encoder.encode([f"passage: {p.title} {p.text}" for p in passages], batch_size=config.e5_batch_size,
                              normalize_embeddings=True, show_progress_bar=len(passages) > 5000,
                              convert_to_numpy=True)
        return cls(passages, config, encoder, np.ascontiguousarray(vecs, dtype="float32"))

    def _save_index(self, directory: Path) -> None:
        import numpy as np

        np.save(directory / "embeddings.npy", self.embeddings)

    @classmethod
    def _load_index(cls, directory, passages, config):
        import numpy as np

        path = directory / "embeddings.npy"
        if not path.is_file():
            raise IndexDirError(f"{directory}: embeddings.npy missing")
        return cls(passages, config, cls._encoder(config), np.load(path))

    def batch_search(self, queries, k=None):
        import numpy as np

        k = self._k(k)
        q = self._encode([f"query: {text}" for text in queries])
        if self.index is not None:
            scores, ids = self.index.search(q, k)
        else:
            sims = q @ self.embeddings.T
            ids = np.argsort(-sims, axis=1, kind="stable")[:, :k]
            scores = np.take_along_axis(sims, ids, axis=1)
        return [[Hit(self.passages[int(d)], float(s)) for d, s in zip(row_d, row_s)]
                for row_d, row_s in zip(ids, scores)]


# ---------------------------------------------------------------------------------------- quality

def retrieval_recall(retriever: Retriever, examples: list[dict], k: int = 5) -> dict:
    """Recall@k on QA records: `support_recall` (share of supporting passages retrieved, when the
    records carry metadata.supporting_ids), `support_hit` (any of them retrieved) and `answer_recall`
    (a golden answer occurs in a top-k passage, the DPR measure), querying with the question text."""
    if not examples:
        raise ValueError("retrieval_recall: no examples")
    results = retriever.batch_search([e["question"] for e in examples], k)
    answer_hits, support, support_any, with_support = 0, 0.0, 0, 0
    for example, hits in zip(examples, results):
        answer_hits += any(has_answer(h.passage.contents, example["golden_answers"]) for h in hits)
        gold = (example.get("metadata") or {}).get("supporting_ids") or []
        if gold:
            with_support += 1
            ids = [h.passage.id for h in hits]
            support += support_recall(ids, gold)
            support_any += any(g in ids for g in gold)
    out = {"k": k, "examples": len(examples), "answer_recall": answer_hits / len(examples)}
    if with_support:
        out["support_recall"] = support / with_support
        out["support_hit"] = support_any / with_support
    return out


# ----------------------------------------------------------------------------------- by spec

def is_index_dir(spec: str | Path) -> bool:
    return (Path(spec) / "meta.json").is_file()


def retriever_for(corpus: str, config: RetrievalConfig | None = None, default_db: str | None = None) -> Retriever:
    """`corpus` = an index directory (as `build_index` writes), `builtin[:DB]`, or a corpus file."""
    config = config or RetrievalConfig()
    if is_index_dir(corpus):
        return open_index(corpus, config)
    return load_retriever(resolve_corpus(corpus, default_db), config)


def build_index(corpus: str, out_dir: str | Path, config: RetrievalConfig | None = None,
                default_db: str | None = None) -> Path:
    """The corpus + index stage: a self-contained index directory at `out_dir` (DVC output), written
    atomically (built beside it, then renamed over any previous one)."""
    config = config or RetrievalConfig()
    passages = resolve_corpus(corpus, default_db)
    retriever = load_retriever(passages, config, cache=False)
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}."))
    os.chmod(tmp, 0o755)
    try:
        retriever.save(tmp)
        if out_dir.exists():
            old = Path(tempfile.mkdtemp(dir=out_dir.parent, prefix=f".{out_dir.name}.old."))
            os.replace(out_dir, old / "index")
            os.replace(tmp, out_dir)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out_dir
