"""The study at scale: the built-in tasks, presets, the shared head warm-up, fine-tuning as a
metric and the time estimate printed before training."""

from __future__ import annotations

import csv
import dataclasses

import numpy as np
import pytest
import torch
from hf_fakes import WORDS, write_tiny_bert

from sipt_lab.cli.main import main
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.studies.lc.arms import arm_configs, study_source, train_arm
from sipt_lab.studies.lc.config import LcTransferConfig, study_preset
from sipt_lab.studies.lc.dial import dial_graph
from sipt_lab.studies.lc.estimate import arms_per_seed, estimated_seconds
from sipt_lab.studies.lc.tasks import study_task
from sipt_lab.studies.lc.transfer import run_lc_transfer
from sipt_lab.training.defaults import train_config
from sipt_lab.training.head_warmups import HeadWarmups

CHAR = train_config("char", steps=2, batch_size=8, max_len=32, device="cpu")


def topic_corpus(path, n_topics=14, n_sentences=1200, seed=0):
    """Sentences of ``n_topics`` disjoint made-up vocabularies (letters only: LDA drops digits)."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("bcdfghklmnprstvz"))
    word = lambda: "".join(rng.choice(letters, 6))  # noqa: E731
    vocabularies = [[word() for _ in range(12)] for _ in range(n_topics)]
    lines = [
        "Sentence " + " ".join(rng.choice(vocabularies[i % n_topics], 8)) + " " + word() + "."
        for i in range(n_sentences)
    ]
    path.write_text("\n".join(lines) + "\n")
    return {word: topic for topic, words in enumerate(vocabularies) for word in words}


def test_head_warmups_reuse_a_fit_with_the_numbers_of_fitting_it(tmp_path):
    """LM-only after SIPT with a shared warm-up cache ends exactly where LM-only alone ends."""
    model = write_tiny_bert(tmp_path / "st", WORDS, with_head=False, st_pooling="mean")
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, 6)) for _ in range(24)]
    graph = dial_graph(np.arange(24) % 3, 1.0, rng)
    train = train_config("checkpoint", steps=3, batch_size=8, max_len=16, head_warmup=3, device="cpu")
    config = LcTransferConfig(init=str(model), train=train, n_pretrain=24)
    source, arms = study_source(config), arm_configs(config, 0)
    alone = train_arm(texts, graph, arms["lm"], source)
    warmups = HeadWarmups()
    train_arm(texts, graph, arms["sipt"], source, head_warmups=warmups)
    shared = train_arm(texts, graph, arms["lm"], source, head_warmups=warmups)
    assert len(warmups) == 1 and any("an earlier run" in note for note in shared.notes)
    for name, value in alone.encoder.state_dict().items():
        torch.testing.assert_close(shared.encoder.state_dict()[name], value, atol=0, rtol=0)
    other = HeadWarmups()
    train_arm(texts, graph, dataclasses.replace(arms["lm"], head_lr=0.5), source, head_warmups=other)
    refit = train_arm(texts, graph, arms["lm"], source, head_warmups=other)
    assert len(other) == 2 and not any("an earlier run" in note for note in refit.notes)


def test_cliques_task_draws_balanced_topic_classes_from_a_corpus(tmp_path):
    corpus = tmp_path / "corpus.txt"
    topic_of = topic_corpus(corpus)
    config = LcTransferConfig(
        task="cliques",
        corpus=str(corpus),
        n_pretrain=80,
        n_train=40,
        n_validation=20,
        n_test=40,
        init="char",
        train=CHAR,
    )
    task = study_task(config, 0)
    assert len(task.ids) == len(task.texts) == task.labels.size == 80 + 150 and task.natural is None
    assert np.array_equal(task.pretrain, np.arange(80))
    # balanced on each side: 8 pre-training sentences a class, 1.5 x 10 never-seen candidates a class
    assert np.bincount(task.labels[:80]).tolist() == [8] * 10 and np.bincount(task.labels[80:]).tolist() == [15] * 10
    assert set(task.texts) <= set(corpus.read_text().splitlines())
    vocabulary = np.array([topic_of[text.split()[1]] for text in task.texts])
    purity = [np.bincount(vocabulary[task.labels == c]).max() / 23 for c in range(10)]
    assert min(purity) >= 0.8  # a class is (mostly) one made-up vocabulary: its LDA topic
    assert study_task(config, 1).texts != task.texts  # another split seed parts the corpus anew


def test_cliques_task_keeps_articles_on_one_side_and_fits_its_topics_without_the_never_seen_side(tmp_path, monkeypatch):
    """Sentences of one article never sit on both sides, and the topic model that labels them saw
    only the pre-training side's sentences (the never-seen ones are labelled by its transform)."""
    from sipt_lab.data import corpus as corpus_module
    from sipt_lab.data import topics
    from sipt_lab.data.corpus import Corpus, load_corpus

    path = tmp_path / "corpus.txt"
    topic_corpus(path)
    plain = load_corpus(path)
    titles = [f"article {i // 4}" for i in range(len(plain))]  # four sentences an article
    monkeypatch.setattr(corpus_module, "load_corpus", lambda path=None: Corpus(plain.sentences, titles, None, "titled"))
    fitted_on = []
    original = topics.fit_topics
    monkeypatch.setattr(topics, "fit_topics", lambda *a, **k: fitted_on.append(k["fit_rows"]) or original(*a, **k))
    config = LcTransferConfig(
        task="cliques", n_pretrain=80, n_train=40, n_validation=20, n_test=40, init="char", train=CHAR
    )
    task = study_task(config, 0)
    row_of = {sentence: i for i, sentence in enumerate(plain.sentences)}
    rows = np.array([row_of[text] for text in task.texts])
    pretrain, never_seen = rows[task.pretrain], np.delete(rows, task.pretrain)
    assert not {titles[i] for i in pretrain} & {titles[i] for i in never_seen}
    assert np.array_equal(task.groups, np.unique(titles, return_inverse=True)[1][rows])
    [fit_rows] = fitted_on
    assert set(pretrain) <= set(fit_rows) and not set(never_seen) & set(fit_rows)
    assert not {titles[i] for i in fit_rows} & {titles[i] for i in never_seen}


def test_articles_task_takes_every_category_or_refuses_an_unknown_one():
    config = LcTransferConfig(categories=("all",), init="char", train=CHAR)
    task = study_task(config, 0)
    assert task.labels.size == 9033 and task.labels.max() == 10 and np.array_equal(task.groups, np.arange(9033))
    with pytest.raises(SiptError, match="unknown article categories \\['Sport'\\]"):
        study_task(LcTransferConfig(categories=("Sport", "History"), init="char", train=CHAR), 0)


def test_presets_set_the_scale_and_fields_override_them():
    cpu = study_preset("cpu")
    assert (cpu.task, cpu.n_pretrain, cpu.n_train + cpu.n_validation + cpu.n_test, cpu.seeds, cpu.split_seeds) == (
        "cliques",
        640,
        640,
        5,
        (0, 1),
    )
    assert len(cpu.levels) == 5 and cpu.init == "minilm" and cpu.train.max_len == 40 and cpu.train.steps == 24
    assert cpu.metric == "knn_accuracy"
    wiki = study_preset("gpu-wiki", seeds=2)
    assert wiki.seeds == 2 and wiki.n_test == 900 and wiki.finetune_epochs == 2 and wiki.train.device == "cuda"
    with pytest.raises(ConfigError, match="'huge' is unknown"):
        study_preset("huge")


def test_cli_preset_under_flags(capsys):
    assert main(["study", "lc-transfer", "--preset", "cpu", "--steps", "7", "--print-config"]) == 0
    printed = capsys.readouterr().out
    for line in (
        'task = "cliques"',
        "n-pretrain = 640",
        "steps = 7",
        "max-length = 40",
        'seeds = "5"',
        "split-seeds = [0, 1]",
    ):
        assert line in printed.splitlines(), line


def test_estimate_counts_every_step_and_embedded_sample():
    config = LcTransferConfig(
        n_pretrain=100,
        n_train=40,
        n_validation=10,
        n_test=50,
        levels=(0.0, 0.5, 1.0),
        seeds=2,
        split_seeds=(0, 3),
        finetune_epochs=2,
        init="char",
        train=train_config("char", steps=10, batch_size=8, head_warmup=5),
    )
    assert arms_per_seed(config) == 4  # LM-only + 3 levels
    # per replicate (2 seeds x 2 split seeds): (4 arms x 10 steps + 5 warm-up + 5 fine-tunings x 2 passes x
    # 5 batches) steps, and (5 scorings x 100 never-seen + 2 x 100 pre-training) embedded samples
    assert estimated_seconds(config, 1.0, 0.01) == pytest.approx(4 * ((40 + 5 + 50) * 1.0 + 700 * 0.01))


def test_finetuning_is_a_metric_of_every_arm(tmp_path):
    with pytest.raises(ConfigError, match="finetune_epochs"):
        LcTransferConfig(metric="finetune_accuracy", init="char", train=CHAR)
    config = LcTransferConfig(
        init="char",
        encoder="paper-small",
        train=CHAR,
        n_pretrain=40,
        n_train=24,
        n_validation=8,
        n_test=16,
        levels=(0.0, 1.0),
        seeds=1,
        finetune_epochs=1,
        metric="finetune_macro_f1",
    )
    lines = []
    summary = run_lc_transfer(config, tmp_path / "run", log=lines.append)
    assert lines[0].startswith("estimated time: ") and "ms per training step" in lines[0]
    rows = list(csv.DictReader((tmp_path / "run" / "results.csv").open()))
    tuned = {(row["arm"], row["level"]) for row in rows if row["metric"] == "finetune_macro_f1"}
    assert tuned == {
        ("init", ""),
        ("lm", ""),
        ("sipt", "0"),
        ("sipt", "1"),
    }  # the labels-direct arms are not fine-tuned
    assert all(0 <= float(row["value"]) <= 1 for row in rows if row["metric"].startswith("finetune_"))
    assert summary["metric"] == "finetune_macro_f1" and len(summary["levels"]) == 2


def test_cli_refuses_an_unknown_category_in_one_line(tmp_path, capsys):
    code = main(
        ["study", "lc-transfer", "--categories", "Sport", "History", "--init", "char", "--out", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "unknown article categories ['Sport']" in err


@pytest.mark.parametrize("name", ["mentions", "tfidf-knn"])
def test_the_articles_own_graph_is_built_over_the_pretraining_articles_only(name):
    from sipt_lab.domains import subset
    from sipt_lab.domains.wiki import load_wiki, mentions_graph, tfidf_knn_graph
    from sipt_lab.studies.lc.arms import study_inputs
    from sipt_lab.studies.lc.dial import pretraining_nodes

    config = LcTransferConfig(natural_graph=name, n_pretrain=400, n_train=100, init="char", train=CHAR)
    task, splits, natural = study_inputs(config, 0)
    ids = task.ids
    pt = pretraining_nodes(splits, "inductive")
    assert natural.n_nodes == 400 and natural.n_edges > 0
    articles = subset(load_wiki(), np.array([int(ids[i].removeprefix("article")) for i in pt]))
    expected = {"mentions": mentions_graph, "tfidf-knn": tfidf_knn_graph}[name](articles)
    assert natural.n_edges == expected.n_edges  # the never-seen articles take no part in it
    with pytest.raises(ConfigError, match="natural_graph"):
        LcTransferConfig(natural_graph=name, task="cliques", init="char", train=CHAR)


def test_the_study_splits_the_labelled_samples_of_a_labels_file_for_some(tmp_path):
    """Labels for 20 of 30 samples: the study's task holds the labelled ones, their groups and the
    graph between them (the rule of every command), and leaves the rest out."""
    ids = [f"s{i}" for i in range(30)]
    (tmp_path / "samples.tsv").write_text("".join(f"{i}\t{WORDS[k % len(WORDS)]} text\n" for k, i in enumerate(ids)))
    labelled = ids[::3] + ids[1::3]
    (tmp_path / "labels.tsv").write_text("".join(f"{i}\t{'ab'[int(i[1:]) % 2]}\n" for i in labelled))
    (tmp_path / "groups.tsv").write_text("".join(f"{i}\tg{int(i[1:]) // 4}\n" for i in ids))
    edges = [(f"s{k}", f"s{k + 1}") for k in range(29)]
    (tmp_path / "edges.tsv").write_text("".join(f"{u}\t{v}\n" for u, v in edges))
    config = LcTransferConfig(
        samples=str(tmp_path / "samples.tsv"),
        labels=str(tmp_path / "labels.tsv"),
        groups=str(tmp_path / "groups.tsv"),
        edges=str(tmp_path / "edges.tsv"),
        init="char",
        train=CHAR,
    )
    task = study_task(config, 0)
    kept = sorted(labelled, key=lambda i: int(i[1:]))
    assert task.ids == kept and task.labels.tolist() == [int(i[1:]) % 2 for i in kept]
    groups = [int(i[1:]) // 4 for i in kept]
    assert np.array_equal(task.groups, np.unique(groups, return_inverse=True)[1])
    between = sum(u in labelled and v in labelled for u, v in edges)
    assert task.natural.n_nodes == 20 and task.natural.n_edges == between
