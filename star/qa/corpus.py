"""Passage corpora: read and write the layouts retrieval QA uses, and name a corpus by its content.

Accepted on disk (detected per file):
- JSONL with `id` and `contents` = `"Title"\\ntext` — the wiki-18 layout of FlashRAG / Search-R1;
- JSONL with `id`, `title`, `text`;
- TSV with header `id  text  title` — DPR's psgs_w100.tsv.
`builtin[:DB]` names the encyclopedia the project writes from a sandbox world (builtin_data.py).
"""

from __future__ import annotations

from star.jsonl import parse_lines, write_jsonl

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable


class CorpusError(ValueError):
    """A corpus file is missing or malformed; the message names the file and line."""


@dataclass(frozen=True, slots=True)
class Passage:
    id: str
    title: str
    text: str

    @property
    def contents(self) -> str:
        """The wiki-18 `contents` field: quoted title on the first line, then the text."""
        return f'"{self.title}"\n{self.text}'

    def to_record(self) -> dict:
        return {"id": self.id, "contents": self.contents}


def split_contents(contents: str) -> tuple[str, str]:
    """`"Title"\\ntext` -> (Title, text); a first line without quotes is still the title."""
    first, _, rest = contents.partition("\n")
    title = first.strip()
    if len(title) >= 2 and title[0] == title[-1] == '"':
        title = title[1:-1]
    return title, rest.strip()


def _from_json(record: object, where: str) -> Passage:
    if not isinstance(record, dict):
        raise CorpusError(f"{where}: expected a JSON object, got {type(record).__name__}")
    if "id" not in record:
        raise CorpusError(f"{where}: missing field 'id'")
    if "contents" in record:
        title, text = split_contents(str(record["contents"]))
        return Passage(str(record["id"]), title, text)
    if "text" in record:
        return Passage(str(record["id"]), str(record.get("title", "")), str(record["text"]))
    raise CorpusError(f"{where}: needs 'contents' (wiki-18 layout) or 'text' (+ optional 'title')")


def load_corpus(path: str | Path) -> list[Passage]:
    """Read a corpus file (JSONL or DPR TSV). Raises CorpusError naming the file/line on bad input."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: corpus file not found")
    passages: list[Passage] = []
    with _progress(path) as bar, path.open(newline="" if path.suffix == ".tsv" else None) as raw:
        fh = _Counting(raw, bar)
        if path.suffix == ".tsv":
            reader = csv.reader(fh, delimiter="\t")
            header = next(reader, None)
            if header is None or [h.strip() for h in header[:3]] != ["id", "text", "title"]:
                raise CorpusError(f"{path}:1: expected the DPR header 'id<TAB>text<TAB>title', got {header!r}")
            for lineno, row in enumerate(reader, start=2):
                if len(row) < 3:
                    raise CorpusError(f"{path}:{lineno}: expected 3 tab-separated fields, got {len(row)}")
                passages.append(Passage(row[0], row[2], row[1]))
        else:
            for lineno, record, bad in parse_lines(fh):
                if bad is not None:
                    raise CorpusError(f"{path}:{lineno}: not valid JSON ({bad.msg})")
                passages.append(_from_json(record, f"{path}:{lineno}"))
    if not passages:
        raise CorpusError(f"{path}: corpus is empty")
    seen: set[str] = set()
    for p in passages:
        if p.id in seen:
            raise CorpusError(f"{path}: passage id {p.id!r} appears twice")
        seen.add(p.id)
    return passages


class _Counting:
    """Line iterator that advances a byte progress bar (a wiki-scale corpus takes minutes to read)."""

    def __init__(self, fh, bar):
        self.fh, self.bar = fh, bar

    def __iter__(self):
        for line in self.fh:
            self.bar.update(len(line))
            yield line


def _progress(path: Path):
    from tqdm.auto import tqdm

    size = path.stat().st_size
    return tqdm(total=size, unit="B", unit_scale=True, desc=f"reading {path.name}", leave=False,
                disable=size < 50_000_000)


def write_corpus(path: str | Path, passages: Iterable[Passage]) -> Path:
    """Write passages in the wiki-18 JSONL layout (id, contents)."""
    return write_jsonl(path, (p.to_record() for p in passages))


def corpus_digest(passages: list[Passage]) -> str:
    """Content address of a corpus: equal passages (ids, titles, texts, order) give equal digests."""
    h = hashlib.sha256()
    for p in passages:
        for part in (p.id, p.title, p.text):
            h.update(part.encode())
            h.update(b"\x00")
    return h.hexdigest()[:16]
