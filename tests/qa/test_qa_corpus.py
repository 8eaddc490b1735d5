"""Corpus files: the wiki-18 JSONL layout, title/text JSONL, DPR TSV; clear errors; content addresses."""

from __future__ import annotations

import pytest

from star.qa.builtin_data import resolve_corpus
from star.qa.corpus import CorpusError, Passage, corpus_digest, load_corpus, split_contents, write_corpus


def test_wiki18_contents_split_into_title_and_text(tmp_path):
    path = tmp_path / "wiki.jsonl"
    path.write_text('{"id": "0", "contents": "\\"Aaron\\"\\nAaron is a prophet."}\n'
                    '\n'  # blank lines are tolerated
                    '{"id": "1", "contents": "\\"Abba\\"\\nAbba is a band."}\n')
    passages = load_corpus(path)
    assert passages == [Passage("0", "Aaron", "Aaron is a prophet."), Passage("1", "Abba", "Abba is a band.")]
    assert passages[0].contents == '"Aaron"\nAaron is a prophet.'


def test_title_text_jsonl_and_dpr_tsv_load(tmp_path):
    jl = tmp_path / "c.jsonl"
    jl.write_text('{"id": 7, "title": "T", "text": "body"}\n')
    assert load_corpus(jl) == [Passage("7", "T", "body")]
    tsv = tmp_path / "psgs_w100.tsv"
    tsv.write_text("id\ttext\ttitle\n1\tAaron is a prophet.\tAaron\n")
    assert load_corpus(tsv) == [Passage("1", "Aaron", "Aaron is a prophet.")]


def test_write_then_load_round_trips(tmp_path):
    passages = [Passage("a", "Title \"quoted\"", "line one"), Passage("b", "B", "text")]
    path = write_corpus(tmp_path / "out" / "corpus.jsonl", passages)
    assert load_corpus(path) == passages
    assert not list((tmp_path / "out").glob(".*.tmp"))


@pytest.mark.parametrize("content, message", [
    ('{"id": "0", "contents": "x"}\n{not json\n', ":2: not valid JSON"),
    ('{"contents": "x"}\n', "missing field 'id'"),
    ('{"id": "0", "body": "x"}\n', "needs 'contents'"),
    ('[1, 2]\n', "expected a JSON object"),
    ('{"id": "0", "text": "x"}\n{"id": "0", "text": "y"}\n', "appears twice"),
    ('', "corpus is empty"),
])
def test_malformed_corpus_names_file_and_problem(tmp_path, content, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(CorpusError, match=message) as err:
        load_corpus(path)
    assert "bad.jsonl" in str(err.value)


def test_missing_corpus_and_bad_tsv_header_are_clear_errors(tmp_path):
    with pytest.raises(CorpusError, match="corpus file not found"):
        load_corpus(tmp_path / "nope.jsonl")
    tsv = tmp_path / "x.tsv"
    tsv.write_text("a\tb\tc\n")
    with pytest.raises(CorpusError, match="DPR header"):
        load_corpus(tsv)


def test_split_contents_tolerates_an_unquoted_title():
    assert split_contents("Plain title\nbody text") == ("Plain title", "body text")


def test_digest_changes_with_any_content_and_only_then():
    a = [Passage("1", "T", "x"), Passage("2", "U", "y")]
    assert corpus_digest(a) == corpus_digest(list(a))
    assert corpus_digest(a) != corpus_digest([Passage("1", "T", "x!"), a[1]])
    assert corpus_digest(a) != corpus_digest(a[::-1])


def test_builtin_spec_resolves_to_the_encyclopedia(generated_world):
    _, passages, _, _ = generated_world
    assert resolve_corpus("builtin:generated:0") == passages
