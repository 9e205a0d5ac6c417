"""Shared fixtures: every test run gets its own topic cache so results never leak between runs, and
torch uses one intra-op thread (the models here are tiny: threads gain nothing, and on a busy
2-core machine OpenMP threads contending with other processes make steps ten times slower)."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SIPT_LAB_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture(autouse=True)
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    """A tiny random BERT with an MLM head, saved as a Hugging Face directory (see hf_fakes)."""
    from hf_fakes import WORDS, write_tiny_bert

    return write_tiny_bert(tmp_path_factory.mktemp("hf") / "tiny-bert", WORDS)
