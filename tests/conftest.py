"""Shared fixtures: every test run gets its own topic cache so results never leak between runs, and
torch uses one intra-op thread (the models here are tiny: threads gain nothing, and on a busy
2-core machine OpenMP threads contending with other processes make steps ten times slower).

Layout: ``unit/`` library functions on small inputs, ``cli/`` through ``sipt_lab.cli.main.main`` or a
subprocess, ``e2e/`` whole runs; the shared fakes live in ``fakes/`` and import by their module names
(pytest's ``pythonpath`` option in pyproject.toml; exported to ``PYTHONPATH`` too, for the subprocesses
tests start).
``pytest -m "not slow"`` leaves out what takes more than a few seconds."""

import logging
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from golden_support import torch_threads
from hf_fakes import WORDS

from sipt_lab.data.corpus import Corpus
from sipt_lab.data.topics import TopicAssignment
from sipt_lab.synthetic import builder

#: pyproject's ``pythonpath``: subprocesses (submitit's local jobs) import test modules by name, and
#: with them the fakes and the constants test modules share.
TEST_PATHS = [Path(__file__).resolve().parent / folder for folder in ("fakes", "unit", "cli", "e2e")]
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [*map(str, TEST_PATHS), os.environ.get("PYTHONPATH")]))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SIPT_LAB_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(autouse=True)
def _unconfigured_logging():
    """The ``sipt_lab`` logger as a fresh process has it: a command run in one test (``main``
    configures logging) must not show bars and INFO lines in the next."""
    from sipt_lab.core.progress import ROOT

    yield
    for handler in list(ROOT.handlers):
        ROOT.removeHandler(handler)
    ROOT.setLevel(logging.NOTSET)


@pytest.fixture(autouse=True)
def _one_torch_thread():
    """One torch thread, or as many as ``SIPT_LAB_TEST_THREADS`` says (``benchmarks/golden_spread.py``
    runs the golden tests with two as one of the math-library paths it measures)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(torch_threads())
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A tiny random BERT with an MLM head, saved as a Hugging Face directory (see hf_fakes)."""
    from hf_fakes import WORDS, write_tiny_bert

    return write_tiny_bert(tmp_path_factory.mktemp("hf") / "tiny-bert", WORDS)


@pytest.fixture(scope="module")
def tiny_st(tmp_path_factory):
    """An untrained sentence-transformers checkpoint without an MLM head (mean pooling + Normalize)."""
    from hf_fakes import WORDS, write_tiny_bert

    return write_tiny_bert(tmp_path_factory.mktemp("st") / "tiny-st", WORDS, with_head=False, st_pooling="mean")


#: Label cliques of :func:`clique_files`.
N_GROUPS, GROUP_SIZE = 4, 10


@pytest.fixture()
def clique_files(tmp_path):
    """40 random word sequences in 4 label cliques: the labels are not in the text."""
    rng = np.random.default_rng(0)
    ids = [f"s{i}" for i in range(N_GROUPS * GROUP_SIZE)]
    (tmp_path / "samples.tsv").write_text(
        "id\ttext\n" + "".join(f"{i}\t{' '.join(rng.choice(WORDS, 8))}\n" for i in ids)
    )
    group = {i: k % N_GROUPS for k, i in enumerate(ids)}
    (tmp_path / "labels.tsv").write_text("".join(f"{i}\tg{group[i]}\n" for i in ids))
    (tmp_path / "edges.tsv").write_text(
        "".join(f"{a}\t{b}\n" for a in ids for b in ids if a < b and group[a] == group[b])
    )
    return tmp_path


@pytest.fixture
def signal_free_corpus(monkeypatch):
    """240 random strings over one shared alphabet, 12 topics: the characters say nothing about
    the topic, so only the pre-training graph can separate the classes."""
    rng = np.random.default_rng(0)
    alphabet = np.array(list("abcdefgh "))
    sentences = ["".join(rng.choice(alphabet, 24)) for _ in range(240)]
    owner = np.arange(240) % 12
    doc_topic = np.full((240, 12), 0.05 / 11)
    doc_topic[np.arange(240), owner] = 0.95
    corpus, topics = Corpus(sentences, None, None, "fake"), TopicAssignment.from_doc_topic(doc_topic)
    monkeypatch.setattr(builder, "load_corpus", lambda path=None: corpus)
    monkeypatch.setattr(builder, "fit_topics", lambda corpus, config: topics)
