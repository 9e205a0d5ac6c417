"""``pretrain``'s new MLM head is the init's: fitted once on the reference corpus, whatever the
samples, seed or batch size, on a random stream of its own, and then loaded by every run."""

import numpy as np
import torch
from test_pretrain_phases import _job

from sipt_lab.data.samples import read_samples
from sipt_lab.jobs.configs import resolve_pretrain_job
from sipt_lab.jobs.pretrain import run_pretraining
from sipt_lab.models import encoder_source
from sipt_lab.objectives import build_objectives
from sipt_lab.training.defaults import train_config
from sipt_lab.training.head_warmups import HEAD_CACHE, head_file, head_warmup_key
from sipt_lab.training.reference_head import REFERENCE_SENTENCES, fit_reference_head, reference_texts


def test_one_head_serves_other_samples_seeds_and_batch_sizes(clique_files, tiny_st, tmp_path, monkeypatch):
    monkeypatch.setenv("SIPT_LAB_CACHE", str(tmp_path / "cache"))
    first = run_pretraining(_job(clique_files, tiny_st, steps=1, head_warmup=3), tmp_path / "first", log=print)
    assert any("fitted for 3 steps" in note and "reference sentences" in note for note in first.report["notes"])

    other = tmp_path / "other"  # other samples, another graph, another seed and batch size
    other.mkdir()
    lines = (clique_files / "samples.tsv").read_text().splitlines()[1:21]
    (other / "samples.tsv").write_text("".join(f"{line.split()[0]}\tnew {line}\n" for line in lines))
    (other / "edges.tsv").write_text("".join(f"s{i}\ts{i + 1}\n" for i in range(19)))
    job = _job(other, tiny_st, steps=1, head_warmup=3, seed=7, batch_size=4)
    second = run_pretraining(job, tmp_path / "second", log=print)
    assert any("fitted earlier for this init and these warm-up settings" in n for n in second.report["notes"])
    assert len(list((tmp_path / "cache" / HEAD_CACHE).iterdir())) == 1

    changed = run_pretraining(_job(other, tiny_st, steps=1, head_warmup=2), tmp_path / "third", log=print)
    assert any("fitted for 2 steps" in note for note in changed.report["notes"])  # a warm-up setting: a new head
    assert len(list((tmp_path / "cache" / HEAD_CACHE).iterdir())) == 2


def test_the_reference_fit_ignores_the_run_seed_and_leaves_its_random_state(tiny_st):
    source = encoder_source(str(tiny_st))
    config = train_config("checkpoint", head_warmup=2, device="cpu")
    mlm = [(1.0, objective) for _, objective in build_objectives(0.0, config.loss, config.loss_params)]
    fitted = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        model, _ = source.encoder(source.tokenizer([], None))
        heads = model.new_head_parameters()
        state = torch.get_rng_state()
        note = fit_reference_head(model, source, heads, mlm, config, torch.device("cpu"))
        assert torch.equal(torch.get_rng_state(), state) and "2 steps" in note
        fitted.append([parameter.detach().clone() for parameter in heads])
    for a, b in zip(*fitted, strict=True):
        torch.testing.assert_close(a, b, atol=0, rtol=0)


def test_the_reference_corpus_is_a_fixed_draw_of_distinct_sentences():
    texts = reference_texts()
    assert len(texts) == len(set(texts)) == REFERENCE_SENTENCES
    assert np.mean([len(text.split()) for text in texts]) > 10  # whole sentences, not fragments


def test_a_method_run_keys_its_head_by_its_samples_and_reuses_it(clique_files, tiny_st, tmp_path, monkeypatch):
    """A ``--method`` run (here multitask) fits its new MLM head on its own samples' batches, not on
    the reference corpus: it keys the head by them (:func:`head_warmup_key`), a second run with the
    same settings copies it and trains exactly as the first did, and other samples fit their own."""
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
    assert not any("reference sentences" in note for note in first.report["notes"])

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
