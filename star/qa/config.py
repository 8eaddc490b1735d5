"""Settings of the out-of-domain QA evaluation (recipe §5): corpus, retriever, episodes, datasets.

One place per default: the paper's setting (top-5 passages, temperature 0.6, top_p 0.95) is the
field default; small CPU runs override through params or CLI flags.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from star.rollout.config import BackendName, VLLMConfig

RetrieverName = Literal["bm25", "e5"]

# The seven benchmarks of the paper's Table 2, in its column order.
PAPER_DATASETS: tuple[str, ...] = ("nq", "triviaqa", "popqa", "hotpotqa", "2wiki", "musique", "bamboogle")


class _Config(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid")


class RetrievalConfig(_Config):
    """Which retriever answers `Search(query)` and how its index is built."""

    method: RetrieverName = "bm25"
    """Retriever from the registry: `bm25` (bm25s, offline default) or `e5` (dense, needs sentence-transformers)."""
    top_k: int = Field(5, ge=1)
    """Passages returned per search (paper: 5)."""
    cache_dir: str = "data/qa/cache"
    """Directory of content-addressed indexes: one sub-directory per (corpus, method, settings)."""
    bm25_k1: float = 1.5
    """BM25 term-frequency saturation."""
    bm25_b: float = 0.75
    """BM25 document-length normalisation."""
    e5_model: str = "intfloat/e5-base-v2"
    """Sentence-transformers model (name or local path) of the dense retriever (Search-R1 used E5-base-v2)."""
    e5_download: bool = False
    """Let sentence-transformers fetch the E5 model from the hub when it is not cached (needs network)."""
    e5_batch_size: int = Field(64, ge=1)
    """Passages encoded per batch when building a dense index."""


class BuiltinDataConfig(_Config):
    """The encyclopedia and QA set the project writes itself from a sandbox world."""

    db: str = "generated:0"
    """Sandbox database the facts come from: `generated[:SEED]` or an official database directory."""
    questions: int = Field(200, ge=1)
    """Questions in the built-in QA set."""
    seed: int = 0
    """Seed of question sampling."""


class EpisodeConfig(_Config):
    """One QA episode: the agent searches, then answers in <answer></answer>."""

    temperature: float = Field(0.6, ge=0.0)
    """Sampling temperature (paper's evaluation setting; 0 = greedy)."""
    top_p: float = Field(0.95, gt=0.0, le=1.0)
    """Nucleus sampling mass."""
    max_turns: int = Field(6, ge=1)
    """Assistant turns per episode; past it the episode ends unanswered."""
    max_new_tokens: int = Field(512, ge=1)
    """Tokens generated per assistant turn."""
    max_context: int = Field(32000, ge=128)
    """Prompt + generated tokens per episode; an episode that would overflow ends unanswered."""
    passage_chars: int = Field(600, ge=50)
    """Each returned passage is cut to this many characters (keeps small-context models in budget)."""
    batch_size: int = Field(8, ge=1)
    """Episodes advanced together (one generate call per turn for the whole batch)."""
    seed: int = 0
    """Seed of sampling."""


class QAConfig(_Config):
    """Everything `star eval-qa` and the `eval_qa` stage read."""

    datasets: list[str] = Field(default_factory=lambda: ["world"])
    """Dataset names, `world[:DB]` or file paths (paper: the seven of PAPER_DATASETS, as files or from the hub)."""
    corpus: str = "builtin"
    """Passages to search: `builtin[:DB]` (the sandbox encyclopedia), a JSONL/TSV corpus file, or an index dir."""
    limit: int | None = None
    """Evaluate only the first N examples of each dataset; None = all."""
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    """Retriever settings."""
    episode: EpisodeConfig = Field(default_factory=EpisodeConfig)
    """Episode and sampling settings."""
    builtin: BuiltinDataConfig = Field(default_factory=BuiltinDataConfig)
    """Built-in QA set and encyclopedia settings."""


class LearnConfig(_Config):
    """The `learn` profile's task (`star learn`): search-tool QA over the built-in encyclopedia, short
    episodes so that SFT -> GRPO -> a paired before/after evaluation fits two CPU cores."""

    pipeline: list[str] = Field(default_factory=list)
    """DVC gate of learn/dvc.yaml's stages: [learn] (the learn profile) adds them to `dvc repro`; [] skips them."""
    db: str = "generated:0"
    """Sandbox world the encyclopedia and the questions are written from."""
    questions: int = Field(800, ge=3)
    """Distinct questions drawn from the world; the three splits below take disjoint slices of them."""
    sft_questions: int = Field(160, ge=1)
    """Questions the built-in teacher answers for SFT (its successes are the SFT data)."""
    rl_questions: int = Field(160, ge=1)
    """Questions GRPO trains on."""
    heldout_questions: int = Field(120, ge=2)
    """Held-out questions of the before/after evaluation (never trained on)."""
    seed: int = 0
    """Seed of question sampling and of the split."""
    retrieval: RetrievalConfig = Field(default_factory=lambda: RetrievalConfig(top_k=3))
    """Retriever of the Search tool (fewer passages than the paper's 5: shorter episodes)."""
    episode: EpisodeConfig = Field(default_factory=lambda: EpisodeConfig(
        max_turns=4, max_new_tokens=96, max_context=2048, passage_chars=200, batch_size=16))
    """Episode limits of training and evaluation; temperature / top_p / seed are the evaluation's."""
    eval_samples: int = Field(2, ge=1)
    """Episodes per held-out question and model; sample s of question q has the same seed for both models."""
    torch_threads: int | None = Field(None, ge=1)
    """torch intra-op threads of the evaluation on CPU (None: torch's default)."""
    backend: BackendName = "transformers"
    """Generation backend of the evaluation: transformers, vllm, or auto (vLLM where it is installed)."""
    vllm: VLLMConfig = Field(default_factory=VLLMConfig)
    """vLLM engine options of the evaluation."""
