"""QA benchmark loaders: the seven sets of the paper's Table 2 (+ the built-in one), through `datasets`.

Every loader returns examples with the fields Search-R1 used — `id, question, golden_answers`
(+ `dataset`, `metadata`) — the FlashRAG layout it read from the hub
(`RUC-NLPIR/FlashRAG_datasets`, split test, else dev, else train). Local files are read in
their benchmark's own release format, detected from the record's fields:

| format | fields that identify it |
|---|---|
| flashrag | id, question, golden_answers, metadata |
| searchr1 | data_source, prompt, reward_model.ground_truth.target (Search-R1's processed parquet) |
| nq_open | question, answer (list) |
| trivia_qa | question_id, question, answer{value, aliases, …} |
| popqa | id, subj, prop, obj, …, question, possible_answers (a JSON list in a string) |
| hotpot_qa | id/_id, question, answer, type, level, supporting_facts, context |
| 2wiki | _id, type, question, context, supporting_facts, evidences, answer |
| musique | id, paragraphs, question, question_decomposition, answer, answer_aliases, answerable |
| bamboogle | Question, Answer |
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from star.qa.builtin_data import BUILTIN_NAME, BuiltinDataConfig, build_questions
from star.sandbox.database import load_database


class DatasetError(ValueError):
    """A QA file is missing, unreadable or in no known format; the message names file / record / field."""


FLASHRAG_HUB = "RUC-NLPIR/FlashRAG_datasets"


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    """Registry name (CLI `--dataset NAME`)."""
    title: str
    """Column header in the Table-2-shaped report."""
    flashrag_config: str | None
    """Config name in the FlashRAG hub dataset (what Search-R1 loaded)."""
    original: tuple[str, str | None, str] | None = None
    """(hub path, config, split) of the benchmark's own release, for `source='original'`."""
    record_format: str = "flashrag"
    """Converter for the original release's records."""


DATASETS: dict[str, DatasetSpec] = {s.name: s for s in [
    DatasetSpec("nq", "NQ", "nq", ("google-research-datasets/nq_open", None, "validation"), "nq_open"),
    DatasetSpec("triviaqa", "TriviaQA", "triviaqa", ("mandarjoshi/trivia_qa", "rc.nocontext", "validation"), "trivia_qa"),
    DatasetSpec("popqa", "PopQA", "popqa", ("akariasai/PopQA", None, "test"), "popqa"),
    DatasetSpec("hotpotqa", "HotpotQA", "hotpotqa", ("hotpotqa/hotpot_qa", "distractor", "validation"), "hotpot_qa"),
    DatasetSpec("2wiki", "2Wiki", "2wikimultihopqa", None, "2wiki"),
    DatasetSpec("musique", "Musique", "musique", None, "musique"),
    DatasetSpec("bamboogle", "Bamboogle", "bamboogle", ("chiayewken/bamboogle", None, "test"), "bamboogle"),
    DatasetSpec(BUILTIN_NAME, "World", None, None, "flashrag"),
]}
ALIASES = {"2wikimultihopqa": "2wiki", "trivia_qa": "triviaqa", "nq_open": "nq", "hotpot_qa": "hotpotqa",
           "hotpot": "hotpotqa"}


@dataclass
class QADataset:
    name: str
    title: str
    examples: list[dict] = field(default_factory=list)
    source: str = ""
    """Where the examples came from (a path, a hub id, or builtin:DB)."""

    def __len__(self) -> int:
        return len(self.examples)


# ------------------------------------------------------------------------------------ converters

def _example(id_, question, answers, dataset, metadata=None) -> dict:
    answers = [str(a) for a in answers if a is not None and str(a).strip()]
    return {"id": str(id_), "question": str(question).strip(), "golden_answers": list(dict.fromkeys(answers)),
            "dataset": dataset, "metadata": metadata or {}}


def _parse_list(value, where: str) -> list:
    """A list, or a list written as a string (PopQA's possible_answers): JSON first, then a Python literal."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, str):
        for parse in (json.loads, ast.literal_eval):
            try:
                parsed = parse(value)
            except (ValueError, SyntaxError):
                continue
            return list(parsed) if isinstance(parsed, (list, tuple)) else [parsed]
        return [value]
    raise DatasetError(f"{where}: expected a list of answers, got {type(value).__name__}")


def _support_titles(sf) -> list[str]:
    """HotpotQA / 2Wiki supporting facts: [[title, sent]] in the JSON release, {title: [...]} on the hub."""
    if isinstance(sf, dict):
        return list(dict.fromkeys(sf.get("title") or []))
    return list(dict.fromkeys(str(item[0]) for item in sf or [] if item))


def _flashrag(r, i, ds, where):
    return _example(r.get("id", i), r["question"], _parse_list(r["golden_answers"], f"{where}: golden_answers"),
                    ds, r.get("metadata") if isinstance(r.get("metadata"), dict) else {})


_SR1_QUESTION = re.compile(r"Question:\s*(.*?)\s*(?:\n|$)", re.DOTALL)


def _searchr1(r, i, ds, where):
    """Search-R1's processed rows: the question is FlashRAG's column when kept, else the prompt's last
    'Question:' line; answers are reward_model.ground_truth.target; data_source names the benchmark."""
    question = r.get("question")
    if not question:
        prompt = r["prompt"]
        text = prompt[0]["content"] if isinstance(prompt, list) and prompt else str(prompt)
        found = _SR1_QUESTION.findall(text)
        if not found:
            raise DatasetError(f"{where}: prompt has no 'Question:' line")
        question = found[-1]
    target = r["reward_model"]["ground_truth"]["target"]
    extra = r.get("extra_info") or {}
    source = r.get("data_source") or ds
    source = ALIASES.get(source, source)
    return _example(r.get("id") or f"{source}_{extra.get('index', i)}", question, _parse_list(target, where),
                    source, {"split": extra.get("split"), "index": extra.get("index")})


def _nq_open(r, i, ds, where):
    return _example(r.get("id", i), r["question"], _parse_list(r["answer"], f"{where}: answer"), ds)


def _trivia_qa(r, i, ds, where):
    ans = r["answer"]
    if not isinstance(ans, dict):
        raise DatasetError(f"{where}: 'answer' must be an object with value/aliases")
    answers = [ans.get("value")] + list(ans.get("aliases") or [])
    return _example(r.get("question_id", i), r["question"], answers, ds, {"type": ans.get("type")})


def _popqa(r, i, ds, where):
    meta = {k: r.get(k) for k in ("subj", "prop", "obj", "s_pop", "o_pop") if k in r}
    return _example(r.get("id", i), r["question"], _parse_list(r["possible_answers"], f"{where}: possible_answers"),
                    ds, meta)


def _hotpot(r, i, ds, where):
    meta = {"type": r.get("type"), "level": r.get("level"), "supporting_titles": _support_titles(r.get("supporting_facts"))}
    return _example(r.get("id", r.get("_id", i)), r["question"], [r["answer"]], ds, meta)


def _2wiki(r, i, ds, where):
    answers = [r["answer"]] + list(r.get("answer_aliases") or [])
    meta = {"type": r.get("type"), "supporting_titles": _support_titles(r.get("supporting_facts")),
            "evidences": r.get("evidences")}
    return _example(r.get("_id", r.get("id", i)), r["question"], answers, ds, meta)


def _musique(r, i, ds, where):
    id_ = str(r.get("id", i))
    hops = int(id_[0]) if re.match(r"^\dhop", id_) else None
    meta = {"answerable": r.get("answerable", True), "hops": hops,
            "supporting_titles": [p.get("title") for p in r.get("paragraphs") or [] if p.get("is_supporting")]}
    return _example(id_, r["question"], [r["answer"]] + list(r.get("answer_aliases") or []), ds, meta)


def _bamboogle(r, i, ds, where):
    return _example(r.get("id", i), r["Question"], [r["Answer"]], ds)


CONVERTERS: dict[str, Callable] = {
    "flashrag": _flashrag, "searchr1": _searchr1, "nq_open": _nq_open, "trivia_qa": _trivia_qa, "popqa": _popqa,
    "hotpot_qa": _hotpot, "2wiki": _2wiki, "musique": _musique, "bamboogle": _bamboogle,
}
_2WIKI_TYPES = {"comparison", "bridge_comparison", "inference", "compositional"}


def detect_format(record: dict) -> str:
    """The release format of one record, from its fields (table in the module docstring)."""
    keys = set(record)
    if {"prompt", "reward_model"} <= keys:  # before flashrag: Search-R1 keeps FlashRAG's columns too
        return "searchr1"
    if "golden_answers" in keys:
        return "flashrag"
    if "possible_answers" in keys:
        return "popqa"
    if "paragraphs" in keys or {"answer_aliases", "answerable"} <= keys:
        return "musique"
    if "evidences" in keys:
        return "2wiki"
    if "supporting_facts" in keys:  # both have `type`; only HotpotQA has `level`
        return "2wiki" if "level" not in keys and record.get("type") in _2WIKI_TYPES else "hotpot_qa"
    if {"Question", "Answer"} <= keys:
        return "bamboogle"
    if "question_id" in keys and isinstance(record.get("answer"), dict):
        return "trivia_qa"
    if "question" in keys and isinstance(record.get("answer"), (list, tuple)):
        return "nq_open"
    raise DatasetError(f"record with fields {sorted(keys)} matches no known QA format "
                       f"({', '.join(CONVERTERS)})")


def convert_records(records, dataset: str, fmt: str | None = None, where: str = "") -> list[dict]:
    """Release-format records -> examples; errors name the record (file:index) and the missing field."""
    out = []
    for i, record in enumerate(records):
        loc = f"{where}[{i}]" if where else f"record {i}"
        if not isinstance(record, dict):
            raise DatasetError(f"{loc}: expected an object, got {type(record).__name__}")
        try:
            kind = fmt or detect_format(record)
            if kind not in CONVERTERS:
                raise DatasetError(f"unknown record format {kind!r}; known: {', '.join(CONVERTERS)}")
            out.append(CONVERTERS[kind](record, i, dataset, loc))
        except KeyError as exc:
            raise DatasetError(f"{loc}: missing field {exc.args[0]!r} for format {kind!r}") from None
        except DatasetError as exc:
            raise DatasetError(f"{loc}: {exc}" if not str(exc).startswith(loc) else str(exc)) from None
        if not out[-1]["question"]:
            raise DatasetError(f"{loc}: empty question")
        if not out[-1]["golden_answers"]:
            raise DatasetError(f"{loc}: no golden answer")
    return out


# ----------------------------------------------------------------------------------------- files

_BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv", ".tsv": "csv"}


def read_records(path: str | Path) -> list[dict]:
    """Rows of a local QA file through `datasets` (JSON/JSONL/parquet/CSV/TSV).

    HotpotQA/2Wiki releases nest mixed-type lists (`[title, [sentences]]`) that Arrow cannot type;
    for JSON those fall back to the standard json module, so the release file loads as published."""
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"{path}: QA file not found")
    builder = _BUILDERS.get(path.suffix.lower())
    if builder is None:
        raise DatasetError(f"{path}: unsupported file type {path.suffix!r} (use {', '.join(_BUILDERS)})")
    import datasets

    kwargs = {"delimiter": "\t"} if path.suffix.lower() == ".tsv" else {}
    if builder == "csv" and sum(1 for line in path.open() if line.strip()) <= 1:
        return []  # a header alone: no rows (datasets would fail with a confusing split error)
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # a tiny file's "Generating split" bar is noise in eval logs
    try:
        ds = datasets.load_dataset(builder, data_files=str(path), split="train", **kwargs)
        return ds.to_list()
    except Exception as exc:
        if builder != "json":
            raise DatasetError(f"{path}: cannot read as {builder} ({type(exc).__name__}: {exc})") from None
    finally:
        if bars:
            datasets.enable_progress_bars()
    return _read_json_plain(path)


def _read_json_plain(path: Path) -> list[dict]:
    text = path.read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = []
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                data.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
    if isinstance(data, dict):
        for key in ("data", "examples", "test", "dev"):  # wrapped releases
            if isinstance(data.get(key), list):
                return data[key]
        raise DatasetError(f"{path}: a JSON object, expected a list of records")
    return data


# ------------------------------------------------------------------------------------------ load

def dataset_spec(name: str) -> DatasetSpec:
    key = ALIASES.get(name.lower(), name.lower())
    if key not in DATASETS:
        raise DatasetError(f"unknown QA dataset {name!r}; known: {', '.join(DATASETS)} (or give a file path)")
    return DATASETS[key]


def load_hub(name: str, source: str = "flashrag", split: str | None = None) -> QADataset:
    """From the Hugging Face hub: FlashRAG's copy (what Search-R1 used) or the benchmark's own release."""
    import datasets

    spec = dataset_spec(name)
    try:
        if source == "flashrag":
            if spec.flashrag_config is None:
                raise DatasetError(f"{spec.name}: not on the hub")
            dd = datasets.load_dataset(FLASHRAG_HUB, spec.flashrag_config)
            # Search-R1's rule: the test split, else dev, else train.
            split = split or next(s for s in ("test", "dev", "train") if s in dd)
            rows, fmt, where = dd[split], "flashrag", f"{FLASHRAG_HUB}/{spec.flashrag_config}:{split}"
        elif source == "original":
            if spec.original is None:
                raise DatasetError(f"{spec.name}: no original hub release registered; use source='flashrag' or a file")
            path, config, default_split = spec.original
            rows = datasets.load_dataset(path, config, split=split or default_split)
            fmt, where = spec.record_format, f"{path}:{split or default_split}"
        else:
            raise DatasetError(f"unknown source {source!r} (flashrag | original)")
    except DatasetError:
        raise
    except Exception as exc:  # offline, gated, renamed: say what failed and what to do instead
        raise DatasetError(f"cannot load {spec.name!r} from the hub ({type(exc).__name__}: {exc}); "
                           f"download it once and pass the file path instead") from None
    return QADataset(spec.name, spec.title, convert_records(rows, spec.name, fmt, where), where)


def load_qa(spec: str, *, limit: int | None = None, name: str | None = None, source: str = "flashrag",
            split: str | None = None, builtin: BuiltinDataConfig | None = None) -> QADataset:
    """A QA set by registry name (hub), `world[:DB]` (built-in), or local file path (format detected).

    `name` sets the dataset name of a file (default: matched from the file name, else its stem);
    `builtin` sets the built-in set's database, size and seed (DB in the spec wins)."""
    if spec == BUILTIN_NAME or spec.startswith(BUILTIN_NAME + ":"):
        cfg = builtin or BuiltinDataConfig()
        db_spec = spec.partition(":")[2] or cfg.db
        examples = [dict(e, dataset=BUILTIN_NAME) for e in build_questions(load_database(db_spec), cfg.questions, cfg.seed)]
        ds = QADataset(BUILTIN_NAME, DATASETS[BUILTIN_NAME].title, examples, f"builtin:{db_spec}")
    elif Path(spec).suffix.lower() in _BUILDERS or Path(spec).exists():
        path = Path(spec)
        ds_name = name or _name_from_path(path)
        title = DATASETS[ds_name].title if ds_name in DATASETS else ds_name
        records = read_records(path)
        if not records:
            raise DatasetError(f"{path}: contains no examples")
        ds = QADataset(ds_name, title, convert_records(records, ds_name, None, str(path)), str(path))
    else:
        ds = load_hub(spec, source=source, split=split)
    if limit is not None:
        ds.examples = ds.examples[:limit]
    return ds


def split_by_dataset(ds: QADataset) -> list[QADataset]:
    """A merged file (Search-R1's test.parquet holds all seven sets) -> one QADataset per benchmark, in
    the paper's column order, then first appearance."""
    groups: dict[str, list[dict]] = {}
    for e in ds.examples:
        groups.setdefault(e.get("dataset") or ds.name, []).append(e)
    if len(groups) <= 1:
        return [ds]
    order = {name: i for i, name in enumerate(DATASETS)}
    names = sorted(groups, key=lambda n: (order.get(n, len(order)), list(groups).index(n)))
    return [QADataset(n, DATASETS[n].title if n in DATASETS else n, groups[n], ds.source) for n in names]


def _name_from_path(path: Path) -> str:
    stem = path.stem.lower()
    for key in sorted(set(DATASETS) | set(ALIASES), key=len, reverse=True):
        if key in stem:
            return ALIASES.get(key, key)
    return path.stem
