"""A pretrain export loads in transformers and sentence-transformers as cleanly as its init did:
no missing or unexpected weights (the init's pooler kept), and its model cards say where it came from."""

import logging

import numpy as np
import pytest
import torch

from sipt_lab.jobs.pretrain import PretrainJob, run_pretraining
from sipt_lab.models.hf import MASKED_LM_DIR
from sipt_lab.training.defaults import init_kind, train_config

LOAD_REPORT = ("MISSING", "UNEXPECTED", "newly initialized", "were not used")


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _loaded(loader, path, capfd):
    """``loader(path)`` with transformers' own logging at its default level, and what it printed
    or logged (its load report is a warning of the ``transformers`` logger)."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity(logging.WARNING)
    records = _Records()
    hf_logging.get_logger("transformers").addHandler(records)
    capfd.readouterr()
    try:
        model = loader(str(path))
    finally:
        hf_logging.get_logger("transformers").removeHandler(records)
    out, err = capfd.readouterr()
    return model, "\n".join([out, err, *records.messages])


def _run(files, init, out, **train):
    job = PretrainJob(
        samples=str(files / "samples.tsv"),
        edges=str(files / "edges.tsv"),
        labels=str(files / "labels.tsv"),
        init=str(init),
        train=train_config(init_kind(str(init)), device="cpu", steps=2, batch_size=8, **train),
    )
    return run_pretraining(job, out, log=lambda _: None)


def test_export_of_a_bare_encoder_loads_without_a_load_report(clique_files, tiny_st, tmp_path, capfd):
    from safetensors.torch import load_file
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoModelForMaskedLM

    _, printed = _loaded(AutoModelForMaskedLM.from_pretrained, tiny_st, capfd)
    assert "MISSING" in printed  # the capture sees transformers' report: the init itself has no MLM head
    _run(clique_files, tiny_st, tmp_path / "run", head_warmup=2, eval_every=1, keep_best="link_mrr")
    model_dir = tmp_path / "run" / "model"
    bare, printed = _loaded(AutoModel.from_pretrained, model_dir, capfd)
    assert not any(word in printed for word in LOAD_REPORT), printed
    init_pooler = load_file(tiny_st / "model.safetensors")["pooler.dense.weight"]
    torch.testing.assert_close(bare.pooler.dense.weight, init_pooler)  # the init's pooler, not a random one
    masked, printed = _loaded(AutoModelForMaskedLM.from_pretrained, model_dir / MASKED_LM_DIR, capfd)
    assert not any(word in printed for word in LOAD_REPORT), printed
    torch.testing.assert_close(masked.bert.embeddings.word_embeddings.weight, bare.embeddings.word_embeddings.weight)
    st, printed = _loaded(lambda path: SentenceTransformer(path, device="cpu"), model_dir, capfd)
    assert not any(word in printed for word in LOAD_REPORT), printed
    assert np.isfinite(st.encode(["the one", "a two"])).all()

    for card in (model_dir / "README.md", tmp_path / "run" / "best" / "README.md"):
        front = card.read_text().split("---")[1]
        assert 'datasets:\n- "samples.tsv"\n- "edges.tsv"\n- "labels.tsv"' in front, card
    assert "| kept | the best link_mrr" in (tmp_path / "run" / "best" / "README.md").read_text()


def test_export_of_a_masked_lm_loads_as_its_init_did(clique_files, tiny_bert, tmp_path, capfd):
    from transformers import AutoModel, AutoModelForMaskedLM

    _run(clique_files, tiny_bert, tmp_path / "run")
    for loader in (AutoModel, AutoModelForMaskedLM):
        _, init_info = loader.from_pretrained(tiny_bert, output_loading_info=True)
        _, export_info = loader.from_pretrained(tmp_path / "run" / "model", output_loading_info=True)
        assert export_info["missing_keys"] == init_info["missing_keys"], loader
        assert export_info["unexpected_keys"] == init_info["unexpected_keys"], loader
    _, printed = _loaded(AutoModelForMaskedLM.from_pretrained, tmp_path / "run" / "model", capfd)
    assert not any(word in printed for word in LOAD_REPORT), printed


@pytest.mark.slow
def test_minilm_card_carries_its_license(clique_files, tmp_path):
    from sipt_lab.jobs.model_card import init_license

    assert init_license("minilm") == "apache-2.0" and init_license("char") is None
