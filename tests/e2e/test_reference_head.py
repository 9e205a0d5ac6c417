"""``pretrain``'s new MLM head is the init's: fitted once on the reference corpus, whatever the
samples, seed or batch size, on a random stream of its own, and then loaded by every run."""

import numpy as np
import torch
from test_pretrain_phases import _job

from sipt_lab.jobs.pretrain import run_pretraining
from sipt_lab.models import encoder_source
from sipt_lab.objectives import build_objectives
from sipt_lab.training.defaults import train_config
from sipt_lab.training.head_warmups import HEAD_CACHE
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
