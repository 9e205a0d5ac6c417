"""A default ``pretrain`` from a checkpoint without an MLM head: the head its warm-up fits is kept
in the cache and loaded by the next run, every phase is announced with its estimated time, and an
epoch says which samples it leaves out."""

import dataclasses
import logging

import numpy as np

from sipt_lab.jobs.pretrain import PretrainJob, run_pretraining
from sipt_lab.training.defaults import init_kind, train_config
from sipt_lab.training.head_warmups import HEAD_CACHE
from sipt_lab.training.train_config import epoch_remainder_note


def _job(files, init, **train) -> PretrainJob:
    return PretrainJob(
        samples=str(files / "samples.tsv"),
        edges=str(files / "edges.tsv"),
        init=str(init),
        train=train_config(init_kind(str(init)), device="cpu", **train),
    )


def test_fitted_head_is_cached_and_the_second_run_gives_the_same_numbers(
    clique_files, tiny_st, tmp_path, monkeypatch, caplog
):
    monkeypatch.setenv("SIPT_LAB_CACHE", str(tmp_path / "cache"))
    caplog.set_level(logging.DEBUG, logger="sipt_lab")
    job = _job(clique_files, tiny_st, steps=2, batch_size=8, head_warmup=3)
    first = run_pretraining(job, tmp_path / "first", log=lambda _: None)
    estimates = [r.message for r in caplog.records if r.message.startswith("estimated time:")]
    assert len(estimates) == 1 and "a head warm-up of 3 steps" in estimates[0]
    assert len(list((tmp_path / "cache" / HEAD_CACHE).iterdir())) == 1
    caplog.clear()

    second = run_pretraining(job, tmp_path / "second", log=lambda _: None)
    estimates = [r.message for r in caplog.records if r.message.startswith("estimated time:")]
    assert len(estimates) == 1 and "warm-up" not in estimates[0]  # the head is cached: no warm-up to price
    assert any("fitted for 3 steps" in note for note in first.report["notes"])
    assert any("the head an earlier run with the same start fitted" in note for note in second.report["notes"])
    for name, values in first.result.history.items():
        np.testing.assert_array_equal(values, second.result.history[name], err_msg=name)
    messages = [r.message for r in caplog.records]
    assert any(m.startswith("exporting the model") for m in messages)
    assert any(m.startswith("tokenising: 40 samples") for m in messages)  # -v: the phase with its sizes and time
    assert any(m.startswith("head warm-up: loaded the fitted head") for m in messages)


def test_a_damaged_cache_entry_is_fitted_again(clique_files, tiny_st, tmp_path, monkeypatch):
    monkeypatch.setenv("SIPT_LAB_CACHE", str(tmp_path / "cache"))
    job = _job(clique_files, tiny_st, steps=1, batch_size=8, head_warmup=2)
    run_pretraining(job, tmp_path / "first", log=lambda _: None)
    (entry,) = (tmp_path / "cache" / HEAD_CACHE).iterdir()
    entry.write_bytes(b"not a head")
    again = run_pretraining(job, tmp_path / "again", log=lambda _: None)
    assert any("fitted for 2 steps" in note for note in again.report["notes"])


def test_an_epoch_says_which_samples_it_leaves_out(clique_files, tmp_path):
    assert epoch_remainder_note(40, 8) is None and epoch_remainder_note(40, 64) is None
    lines = []
    job = _job(clique_files, "char", batch_size=32)
    one_pass = dataclasses.replace(job, epochs=1.0, train=dataclasses.replace(job.train, steps=1))  # 40 // 32
    outcome = run_pretraining(one_pass, tmp_path / "run", log=lines.append)
    note = epoch_remainder_note(40, 32)
    assert "8 of the 40 samples" in note
    assert f"note: {note}" in lines and note in outcome.report["notes"]


def test_a_run_loads_its_checkpoints_tokenizer_once(clique_files, tiny_st, tmp_path, monkeypatch):
    # the job checks the checkpoint with it, the trainer uses it
    import sipt_lab.models.sources as sources

    monkeypatch.setenv("SIPT_LAB_CACHE", str(tmp_path / "cache"))
    loads = []
    load = sources.load_hf_tokenizer
    monkeypatch.setattr(sources, "load_hf_tokenizer", lambda *args: loads.append(args) or load(*args))
    outcome = run_pretraining(_job(clique_files, tiny_st, steps=1, head_warmup=2), tmp_path / "run", log=print)
    assert any("samples encoded once" in note for note in outcome.report["notes"])
    assert len(loads) == 1, loads
