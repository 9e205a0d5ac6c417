import gzip
import json
import re

import pytest

from sipt_lab.core.errors import SiptError
from sipt_lab.data.corpus import MIN_WORDS, load_corpus, split_sentences


def test_split_sentences_keeps_abbreviations_and_initials():
    text = (
        "The U.S. Army was led by Gen. Smith in 1901. J. R. R. Tolkien wrote books! "
        'Was it "good"? Yes. It was 3.5 metres long. e.g. this stays.'
    )
    assert split_sentences(text) == [
        "The U.S. Army was led by Gen. Smith in 1901.",
        "J. R. R. Tolkien wrote books!",
        'Was it "good"?',
        "Yes.",
        "It was 3.5 metres long. e.g. this stays.",
    ]


def test_default_corpus_size_and_provenance():
    corpus = load_corpus()
    assert len(corpus) == 36226
    assert len(corpus.titles) == len(corpus.categories) == len(corpus)
    assert len(set(corpus.categories)) == 12
    assert len(set(corpus.sentences)) == len(corpus)
    assert all(len(s.split()) >= MIN_WORDS for s in corpus.sentences)
    assert corpus.source == "wiki-vital-4"


def test_text_corpus_drops_blank_and_duplicate_lines(tmp_path):
    path = tmp_path / "sents.txt"
    path.write_text("one two three four\n\n  one  two three four \nfive six seven eight\n\n", encoding="utf-8")
    corpus = load_corpus(path)
    assert corpus.sentences == ["one two three four", "five six seven eight"]
    assert (corpus.n_duplicates_dropped, corpus.n_blank_dropped) == (1, 2)
    assert corpus.titles is None


def test_gzip_and_jsonl_corpora(tmp_path):
    lines = [{"text": "alpha beta gamma delta"}, {"text": "alpha beta gamma delta"}, {"text": "one two three four"}]
    path = tmp_path / "c.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(json.dumps(x) for x in lines) + "\n")
    corpus = load_corpus(path)
    assert corpus.sentences == ["alpha beta gamma delta", "one two three four"]
    assert corpus.n_duplicates_dropped == 1


def test_content_hash_follows_content(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("one two three four\nfive six seven eight\n")
    b.write_text("one two three four\nfive six seven nine\n")
    assert load_corpus(a).content_hash == load_corpus(a).content_hash
    assert load_corpus(a).content_hash != load_corpus(b).content_hash


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("missing.txt", None, "does not exist"),
        ("empty.txt", b"", "holds no sentences"),
        ("latin1.txt", "caf\xe9 au lait here\n".encode("latin-1"), "is not UTF-8 text (bad byte on line 1)"),
        ("bad.jsonl", b'{"text": "fine words here ok"}\n{oops\n', "line 2 is not valid JSON"),
        ("notext.jsonl", b'{"title": "x"}\n', 'has no string "text" field'),
    ],
)
def test_bad_corpus_files_give_one_line_errors(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SiptError, match=re.escape(message)) as error:
        load_corpus(path)
    assert "\n" not in str(error.value) and str(path) in str(error.value)


def test_require_names_the_need(tmp_path):
    path = tmp_path / "small.txt"
    path.write_text("one two three four\n")
    with pytest.raises(SiptError, match="has 1 sentences but the cliques graph needs at least 50"):
        load_corpus(path).require(50, "the cliques graph")
