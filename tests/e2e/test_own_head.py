"""``pretrain``'s new MLM head is fitted on the run's own samples, from their frozen token states
encoded once: it reads the samples' language better than a head fitted on other-language
sentences, its states are the model's own, and the fit draws nothing from the run's random state."""

import numpy as np
import pytest
import torch
from hf_fakes import WORDS, write_tiny_bert
from test_pretrain_phases import _job

from sipt_lab.data.samples import read_samples
from sipt_lab.jobs.configs import resolve_pretrain_job
from sipt_lab.jobs.pretrain import run_pretraining
from sipt_lab.models import encoder_source
from sipt_lab.objectives import build_objectives
from sipt_lab.objectives.mlm import masked_lm_loss
from sipt_lab.training.defaults import train_config
from sipt_lab.training.head_warmups import HEAD_CACHE, head_file, head_warmup_key, load_head
from sipt_lab.training.inputs import encoder_inputs
from sipt_lab.training.own_head import fit_head_on_states, masked_states, masking_sampler
from sipt_lab.training.step import ModelStep, RunLoss

#: A second "language": words the tiny checkpoint knows that no English sample uses.
FRENCH = "le la les des et une est dans pour sur avec par qui que son sa ses aux du ce cette il elle".split()


@pytest.fixture(scope="module")
def bilingual_st(tmp_path_factory):
    """An untrained sentence-transformers checkpoint without an MLM head whose vocabulary holds both word sets."""
    return write_tiny_bert(
        tmp_path_factory.mktemp("st") / "bilingual", [*WORDS, *FRENCH], with_head=False, st_pooling="mean"
    )


def _sentences(words, n, seed):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(words, 10)) for _ in range(n)]


def _write(directory, texts):
    directory.mkdir()
    (directory / "samples.tsv").write_text("".join(f"s{i}\t{text}\n" for i, text in enumerate(texts)))
    (directory / "edges.tsv").write_text("".join(f"s{i}\ts{i + 1}\n" for i in range(len(texts) - 1)))
    return directory


def _mlm(config):
    return [(1.0, objective) for _, objective in build_objectives(0.0, config.loss, config.loss_params)]


def _heldout_loss(source, config, head, texts):
    """The MLM loss of ``head`` (its tensors) on the checkpoint's frozen states of ``texts``, masked with seed 99."""
    tokenizer = source.tokenizer(texts, config.max_len)
    model, _ = source.encoder(tokenizer)
    with torch.no_grad():
        for parameter, value in zip(model.new_head_parameters(), head, strict=True):
            parameter.copy_(value)
    loss = RunLoss(encoder_inputs(tokenizer, texts, torch.device("cpu")), None, _mlm(config), torch.device("cpu"))
    sampler = masking_sampler(tokenizer, texts, loss.lengths, config.batch_size, config, 99)
    with torch.no_grad():
        scores = [masked_lm_loss(model.head_logits(s), t) for s, t in masked_states(model, loss, sampler, 4)]
    return float(torch.stack(scores).mean())


def _fit_on(source, config, texts):
    """The head :func:`fit_head_on_states` fits on ``texts`` (seed 0's masks)."""
    tokenizer = source.tokenizer(texts, config.max_len)
    torch.manual_seed(0)
    model, _ = source.encoder(tokenizer)
    heads = model.new_head_parameters()
    loss = RunLoss(encoder_inputs(tokenizer, texts, torch.device("cpu")), None, _mlm(config), torch.device("cpu"))
    sampler = masking_sampler(tokenizer, texts, loss.lengths, config.batch_size, config, 0)
    fit_head_on_states(model, heads, loss, sampler, config)
    return [parameter.detach().clone() for parameter in heads]


def test_the_default_head_reads_a_non_english_run_better_than_an_english_head(bilingual_st, tmp_path, monkeypatch):
    """What is compared: on held-out sentences of the run's (non-English) language, the MLM loss of
    the head a default ``pretrain`` warm-up gives against a head fitted the same way on English
    sentences. Direction: the run's head must be lower, by a clear margin (a default that fitted
    every run's head on a fixed English corpus would give the English head, and fail)."""
    monkeypatch.setenv("SIPT_LAB_CACHE", str(tmp_path / "cache"))
    files = _write(tmp_path / "fr", _sentences(FRENCH, 64, 0))
    job = _job(files, bilingual_st, steps=1, batch_size=16, head_warmup=60)
    outcome = run_pretraining(job, tmp_path / "run", log=lambda _: None)
    assert any("samples encoded once" in note for note in outcome.report["notes"])
    texts = list(read_samples(files / "samples.tsv").texts)
    key = head_warmup_key(outcome.result.config, {**outcome.result.source, "head_fit": "frozen states"}, texts)
    run_head = load_head(tmp_path / "cache" / HEAD_CACHE / head_file(key), key)["head"]

    source, config = encoder_source(str(bilingual_st)), job.train
    english_head = _fit_on(source, config, _sentences(WORDS, 64, 1))
    heldout = _sentences(FRENCH, 64, 2)
    run_loss, english_loss = (_heldout_loss(source, config, head, heldout) for head in (run_head, english_head))
    assert run_loss < english_loss - 0.5, (run_loss, english_loss)


def test_the_cached_states_give_the_models_own_mlm_loss(tiny_st):
    """The states the fit reads, through the head, give the loss the model's own MLM step gives
    on the same masked batch (eval mode: no dropout)."""
    source = encoder_source(str(tiny_st))
    config = train_config("checkpoint", batch_size=8, device="cpu")
    texts = _sentences(WORDS, 24, 3)
    tokenizer = source.tokenizer(texts, config.max_len)
    torch.manual_seed(0)
    model, _ = source.encoder(tokenizer)
    loss = RunLoss(encoder_inputs(tokenizer, texts, torch.device("cpu")), None, _mlm(config), torch.device("cpu"))
    sampler = masking_sampler(tokenizer, texts, loss.lengths, config.batch_size, config, 5)
    ((states, targets),) = masked_states(model, loss, sampler, 1)
    step = ModelStep(model, loss).eval()
    with torch.no_grad():
        expected = step([sampler.batch(0)])[1][0][0]
        torch.testing.assert_close(masked_lm_loss(model.head_logits(states), targets), expected)


def test_the_fit_leaves_the_run_random_state_and_encodes_each_batch_once(tiny_st, monkeypatch):
    source = encoder_source(str(tiny_st))
    config = train_config("checkpoint", head_warmup=7, batch_size=8, device="cpu")
    texts = _sentences(WORDS, 20, 4)  # 2 batches of 8 a pass: the 7 steps cycle over them
    tokenizer = source.tokenizer(texts, config.max_len)
    model, _ = source.encoder(tokenizer)
    calls = []
    encode = model.hidden_states
    monkeypatch.setattr(model, "hidden_states", lambda *args: calls.append(1) or encode(*args))
    loss = RunLoss(encoder_inputs(tokenizer, texts, torch.device("cpu")), None, _mlm(config), torch.device("cpu"))
    sampler = masking_sampler(tokenizer, texts, loss.lengths, config.batch_size, config, 0)
    before = [p.detach().clone() for p in model.new_head_parameters()]
    encoder = [p.detach().clone() for p in model.model.base_model.parameters()]
    state = torch.get_rng_state()
    note = fit_head_on_states(model, model.new_head_parameters(), loss, sampler, config)
    assert torch.equal(torch.get_rng_state(), state) and "7 steps" in note and "16 samples encoded once" in note
    assert len(calls) == 2
    assert all(p.requires_grad for p in model.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, model.new_head_parameters(), strict=True))
    for a, b in zip(encoder, model.model.base_model.parameters(), strict=True):
        assert torch.equal(a, b)


def test_other_samples_fit_their_own_head_and_the_same_ones_load_it(clique_files, tiny_st, tmp_path, monkeypatch):
    monkeypatch.setenv("SIPT_LAB_CACHE", str(tmp_path / "cache"))
    first = run_pretraining(_job(clique_files, tiny_st, steps=1, head_warmup=3), tmp_path / "first", log=print)
    assert any("fitted for 3 steps" in note and "encoded once" in note for note in first.report["notes"])
    again = run_pretraining(_job(clique_files, tiny_st, steps=1, head_warmup=3), tmp_path / "again", log=print)
    assert any("the head an earlier run with the same start fitted" in n for n in again.report["notes"])
    for name, values in first.result.history.items():
        np.testing.assert_array_equal(again.result.history[name], values, err_msg=name)

    other = _write(tmp_path / "other", _sentences(WORDS, 20, 5))
    changed = run_pretraining(_job(other, tiny_st, steps=1, head_warmup=3), tmp_path / "third", log=print)
    assert any("fitted for 3 steps" in note for note in changed.report["notes"])
    assert len(list((tmp_path / "cache" / HEAD_CACHE).iterdir())) == 2


def test_a_method_run_keys_its_head_by_its_samples_and_reuses_it(clique_files, tiny_st, tmp_path, monkeypatch):
    """A ``--method`` run (here multitask) fits its new MLM head on its own samples' batches with the
    encoder in the loop (:func:`~sipt_lab.training.loop.fit_heads`): it keys the head by them
    (:func:`head_warmup_key`), a second run with the same settings copies it and trains exactly as
    the first did, and other samples fit their own."""
    monkeypatch.setenv("SIPT_LAB_CACHE", str(tmp_path / "cache"))
    ids = [line.split("\t")[0] for line in (clique_files / "samples.tsv").read_text().splitlines()[1:]]
    (tmp_path / "pt_labels.tsv").write_text("".join(f"{name}\tgroup{k % 3}\n" for k, name in enumerate(ids)))
    settings = {"steps": 2, "head_warmup": 3, "device": "cpu", "pt_labels": str(tmp_path / "pt_labels.tsv")}

    def run(files, out):
        fields = {"samples": str(files / "samples.tsv"), "edges": str(files / "edges.tsv"), "init": str(tiny_st)}
        return run_pretraining(resolve_pretrain_job(settings, **fields, method="multitask"), tmp_path / out)

    first = run(clique_files, "first")
    texts = list(read_samples(clique_files / "samples.tsv").texts)
    assert first.result.source["method"]["recipe"] == "multitask"
    key = head_warmup_key(first.result.config, first.result.source, texts)
    assert [path.name for path in (tmp_path / "cache" / HEAD_CACHE).iterdir()] == [head_file(key)]
    assert any("new MLM head fitted for 3 steps" in note for note in first.report["notes"])
    assert not any("encoded once" in note for note in first.report["notes"])

    again = run(clique_files, "again")
    assert any("the head an earlier run with the same start fitted" in note for note in again.report["notes"])
    for name, values in first.result.history.items():
        np.testing.assert_array_equal(again.result.history[name], values, err_msg=name)

    other = tmp_path / "other"  # the same ids (the labels still apply), other texts
    other.mkdir()
    samples = (clique_files / "samples.tsv").read_text().splitlines()
    (other / "samples.tsv").write_text("\n".join([samples[0], *(line + " again" for line in samples[1:])]) + "\n")
    (other / "edges.tsv").write_text((clique_files / "edges.tsv").read_text())
    changed = run(other, "changed")
    assert any("new MLM head fitted for 3 steps" in note for note in changed.report["notes"])
    assert len(list((tmp_path / "cache" / HEAD_CACHE).iterdir())) == 2
