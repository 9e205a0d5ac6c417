"""The method registry: LinkBERT's pairs and relation head, MLSM's concept targets and probe, and
every method end to end."""

import numpy as np
import pytest
import torch

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models import CharTokenizer, EncoderConfig
from sipt_lab.objectives.concepts import concept_kl, concept_targets, fista_nonneg, learn_dictionary
from sipt_lab.training import TrainConfig, pretrain
from sipt_lab.training.concept_student import fit_linear_probe
from sipt_lab.training.methods import (
    METHODS,
    ConceptOptions,
    LinkBertRecipe,
    get_method,
    method_recipe,
    relation_accuracy,
)
from sipt_lab.training.names import METHODS as METHOD_NAMES
from sipt_lab.training.sampler import KEEP_TOKEN, GraphBatchSampler
from sipt_lab.training.segment_pairs import (
    CONTIGUOUS,
    LINKED,
    RANDOM,
    draw_relations,
    half_length,
    inverse_degree_neighbours,
    join_segments,
    split_halves,
)

TINY = EncoderConfig(hidden=32, n_layers=2, n_heads=2, ffn=64, max_len=64)


def test_registry_matches_names():
    assert tuple(METHODS) == METHOD_NAMES
    assert [m for m in METHODS if METHODS[m].structure_aware] == ["sipt", "linkbert"]
    with pytest.raises(SiptError, match="unknown method 'bert'"):
        get_method("bert")
    with pytest.raises(SiptError, match="teacher"):
        method_recipe("mlsm")


def test_pairs_join_with_token_types():
    tokenizer = CharTokenizer.build(["hello big world", "abc"], sep=True)
    first, second = split_halves(["hello big world", "abc"])
    assert first == ["hello big", "a"] and second == ["world", "bc"]
    ids, types, lengths = join_segments(
        tokenizer.encode(first), tokenizer.encode(second), tokenizer.sep_id, tokenizer.pad_id
    )
    assert tokenizer.decode(ids[0]) == "[CLS]hello big[SEP]world[SEP]" and lengths.tolist() == [17, 6]
    assert types[0, :11].tolist() == [0] * 11 and types[0, 11:17].tolist() == [1] * 6
    # rows already closed by [SEP] (Hugging Face): the same pair
    closed = [
        np.column_stack([ids_, np.zeros(len(ids_), dtype=np.int64)])
        for ids_, _ in (tokenizer.encode(first), tokenizer.encode(second))
    ]
    for rows, (_, length) in zip(closed, (tokenizer.encode(first), tokenizer.encode(second))):
        rows[np.arange(len(rows)), length] = tokenizer.sep_id
    again = join_segments(
        (closed[0], tokenizer.encode(first)[1] + 1),
        (closed[1], tokenizer.encode(second)[1] + 1),
        tokenizer.sep_id,
        tokenizer.pad_id,
        closing=1,
    )
    assert np.array_equal(again[0], ids) and np.array_equal(again[1], types) and np.array_equal(again[2], lengths)
    assert half_length(64, 0) == 31 and 2 * half_length(32, 1) + 1 - 2 <= 32
    assert CharTokenizer.from_dict(tokenizer.to_dict()) == tokenizer
    assert "sep" not in CharTokenizer.build(["abc"]).to_dict()  # other tokenizers are unchanged


def test_relation_proportions_and_inverse_degree_draw():
    # a star (hub 0 with leaves 1..4) plus leaf 1 - node 5 whose degree is 1
    graph = PretrainingGraph.from_edges([0, 0, 0, 0, 1], [1, 2, 3, 4, 5], 7)  # node 6 isolated
    rng = np.random.default_rng(0)
    draws = inverse_degree_neighbours(graph, np.full(40_000, 1), rng)
    # neighbours of 1: hub 0 (degree 4) and 5 (degree 1): probabilities 0.2 and 0.8
    assert abs(np.mean(draws == 5) - 0.8) < 0.01 and set(np.unique(draws)) == {0, 5}
    assert inverse_degree_neighbours(graph, np.array([6]), rng).tolist() == [-1]
    relations, partners = draw_relations(graph, np.tile(np.arange(6), 6000), rng)
    shares = np.bincount(relations, minlength=3) / len(relations)
    assert np.allclose(shares, 1 / 3, atol=0.01)
    seeds = np.tile(np.arange(6), 6000)
    assert np.all(partners[relations == CONTIGUOUS] == seeds[relations == CONTIGUOUS])
    assert np.all(partners[relations == RANDOM] != seeds[relations == RANDOM])
    assert graph.has_edge(seeds[relations == LINKED], partners[relations == LINKED]).all()
    isolated, _ = draw_relations(graph, np.full(300, 6), rng)
    assert set(np.unique(isolated)) == {CONTIGUOUS, RANDOM}


def _alphabet_documents(n_groups=6, per_group=8, seed=0):
    rng = np.random.default_rng(seed)
    letters = "abcdefghijklmnopqrstuvwx"
    texts = []
    for group in range(n_groups):
        alphabet = list(letters[4 * group : 4 * group + 4])
        texts += [" ".join("".join(rng.choice(alphabet, 4)) for _ in range(8)) for _ in range(per_group)]
    return texts, np.repeat(np.arange(n_groups), per_group)


def _drp(graph, texts):
    config = TrainConfig(
        steps=120, batch_size=32, lr=3e-3, lambda_si=0.0, mask_replacement="bert", seed=0, device="cpu", max_len=48
    )
    recipe = LinkBertRecipe()
    result = pretrain(texts, graph, config, TINY, method=recipe)
    sampler = recipe.plan_sampler(texts, graph, result.tokenizer, config)
    return relation_accuracy(result.encoder, result.objectives["drp"], sampler, steps=8)


@pytest.mark.slow
def test_drp_learns_links_on_cliques_and_not_on_random_links():
    texts, groups = _alphabet_documents()
    cliques = _drp(
        PretrainingGraph.from_edges(*np.nonzero(np.triu(groups[:, None] == groups[None, :], 1)), len(texts)), texts
    )
    rng = np.random.default_rng(1)
    u, v = rng.integers(0, len(texts), 300), rng.integers(0, len(texts), 300)
    random_links = _drp(PretrainingGraph.from_edges(u[u != v], v[u != v], len(texts)), texts)
    # chance: 1/3 over the three relations, 0.5 for linked against random (seeds 0-3 gave 0.52-0.58 and 0.76-0.88)
    assert cliques["accuracy"] > 0.45 and cliques["linked_vs_random"] > 0.7
    assert abs(random_links["linked_vs_random"] - 0.5) < 0.12


def test_fista_codes_match_sklearn_and_are_sparse():
    from sklearn.decomposition import sparse_encode

    rng = np.random.default_rng(0)
    states = rng.normal(size=(40, 8))[rng.integers(0, 40, 600)] + 0.1 * rng.normal(size=(600, 8))
    dictionary = learn_dictionary(states, 16, 0.1, seed=0)
    assert np.allclose(np.linalg.norm(dictionary, axis=1), 1, atol=1e-5)
    x = states[:6] / np.linalg.norm(states[:6], axis=1, keepdims=True)
    reference = sparse_encode(
        x, dictionary.astype(np.float64), algorithm="lasso_cd", alpha=0.1, positive=True, max_iter=10_000
    )
    mine = fista_nonneg(torch.tensor(x), torch.tensor(dictionary, dtype=torch.float64), 0.1, iterations=500).numpy()
    assert np.abs(mine - reference).max() < 1e-3
    targets = concept_targets(states, np.full(6, 100), dictionary, 0.1, max_codes=8)
    assert (targets.weights >= 0).all() and np.allclose(targets.weights.sum(1), 1, atol=1e-5)
    assert 1 <= targets.stats["nonzero_median"] <= 8 and targets.stats["zero_fraction"] == 0
    dense = targets.dense(np.array([[0, 0], [1, 3]]), torch.device("cpu"))
    assert dense.shape == (2, 16) and torch.allclose(dense.sum(1), torch.ones(2))


def test_concept_kl_by_hand():
    logits = torch.tensor([[0.0, np.log(3.0)], [0.0, 0.0]])  # softmax: (1/4, 3/4) and (1/2, 1/2)
    targets = torch.tensor([[0.5, 0.5], [0.0, 0.0]])  # the second row has no target
    by_hand = 0.5 * np.log(0.5 / 0.25) + 0.5 * np.log(0.5 / 0.75)
    assert concept_kl(logits, targets).item() == pytest.approx(by_hand, rel=1e-6)
    assert concept_kl(logits, targets, count=2).item() == pytest.approx(by_hand / 2, rel=1e-6)


def test_probe_learns_a_planted_concept_to_token_map():
    rng = np.random.default_rng(0)
    planted = rng.integers(0, 10, size=12)  # concept j -> token planted[j]
    concepts = rng.integers(0, 12, size=2000)
    z = torch.tensor(rng.normal(size=(2000, 12)) * 0.3, dtype=torch.float32)
    z[torch.arange(2000), torch.as_tensor(concepts)] += 3.0
    y = torch.as_tensor(planted[concepts])
    probe = fit_linear_probe(z[:1500], y[:1500], 10)
    assert (probe(z[1500:]).argmax(1) == y[1500:]).float().mean() > 0.95


def test_keep_replacement_selects_every_token():
    sampler = GraphBatchSampler(
        PretrainingGraph.from_edges([0], [1], 4),
        np.array([5, 4, 6, 3]),
        4,
        mask_prob=1.0,
        mask_replacement="keep",
        vocab_size=10,
    )
    batch = sampler.batch(0)
    assert batch.mask.sum() == (np.array([5, 4, 6, 3]) - 1).sum() and (batch.replacement == KEEP_TOKEN).all()
    with pytest.raises(Exception, match="mask_prob"):
        TrainConfig(mask_prob=1.0, mask_replacement="mask")


def test_linkbert_checkpoint_resume_is_identical(tmp_path):
    texts, groups = _alphabet_documents(3, 6)
    graph = PretrainingGraph.from_groups(groups)
    config = TrainConfig(
        steps=6,
        batch_size=8,
        lambda_si=0.0,
        mask_replacement="bert",
        schedule="constant",
        device="cpu",
        checkpoint_every=3,
        max_len=40,
    )
    whole = pretrain(texts, graph, config, TINY, method=LinkBertRecipe())
    first = pretrain(
        texts,
        graph,
        TrainConfig(**{**config.__dict__, "steps": 3}),
        TINY,
        method=LinkBertRecipe(),
        checkpoint_dir=tmp_path,
    )
    resumed = pretrain(texts, graph, config, TINY, method=LinkBertRecipe(), checkpoint_dir=tmp_path)
    assert np.array_equal(whole.history["loss"], resumed.history["loss"]) and set(whole.history) >= {"mlm", "drp"}
    assert np.array_equal(first.history["loss"], whole.history["loss"][:3])
    with pytest.raises(SiptError, match="another configuration"):
        pretrain(texts, graph, config, TINY, checkpoint_dir=tmp_path)  # lm on a linkbert checkpoint


def test_simulate_cli_rejects_an_unknown_method(capsys, signal_free_corpus):
    from sipt_lab.cli.main import main

    assert main(["simulate", "--graph", "cliques", "--methods", "lm", "bert", "--executor", "serial"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--methods" in err and "bert" in err and "\n" not in err


@pytest.mark.slow
def test_methods_figure_writes_every_method(tmp_path, signal_free_corpus):
    import csv

    from sipt_lab.studies.paper.figures import FigureOptions, make_figures
    from sipt_lab.studies.paper.methods_figure import METHODS as FIGURE_METHODS

    options = FigureOptions(seeds=1, executor="serial", steps=2, n_nodes=24, families=("cliques",))
    written = make_figures(["methods"], tmp_path, options)["methods"]
    assert (tmp_path / "methods.png").is_file() and tmp_path / "methods.csv" in written
    row = next(csv.DictReader(open(tmp_path / "methods.csv")))
    assert row["graph"] == "cliques" and float(row["local_consistency_mean"]) == 1.0
    assert FIGURE_METHODS == tuple(m for m in METHOD_NAMES if m not in ("multitask", "same-family"))
    assert all(0 <= float(row[f"{method}_auroc_mean"]) <= 1 for method in FIGURE_METHODS)
    # every method's pre-trained encoder is fine-tuned too (LinkBERT and the MLSM family as SIPT)
    assert all(0 <= float(row[f"{method}_finetune_accuracy_mean"]) <= 1 for method in FIGURE_METHODS)  # nan fails
    cell = next(csv.DictReader(open(tmp_path / "methods_cells.csv")))  # every method ran end to end in simulate
    assert 0 <= float(cell["metrics.methods.linkbert.drp.accuracy"]) <= 1
    for method in ("mlsm", "lsm15", "lsm"):
        assert float(cell[f"metrics.methods.{method}.concepts.nonzero_median"]) >= 1
        assert 0 <= float(cell[f"metrics.methods.{method}.probe.probe_accuracy"]) <= 1


def test_linkbert_on_a_hugging_face_bert(tiny_bert):
    from hf_fakes import WORDS

    from sipt_lab.models import encoder_source

    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, 8)) for _ in range(16)]
    graph = PretrainingGraph.from_groups(np.arange(16) % 4)
    config = TrainConfig(steps=2, batch_size=8, lambda_si=0.0, mask_replacement="bert", device="cpu", max_len=16)
    result = pretrain(texts, graph, config, encoder_source(str(tiny_bert)), method=LinkBertRecipe())
    assert np.isfinite(result.history["drp"]).all() and np.isfinite(result.history["mlm"]).all()
    sampler = LinkBertRecipe().plan_sampler(texts, graph, result.tokenizer, config)
    batch = sampler.batch(0).inputs
    assert batch.lengths.max() <= 16 and (batch.ids[:, 0] == result.tokenizer.backend.cls_token_id).all()
    assert ((batch.ids == result.tokenizer.sep_id).sum(1) == 2).all()


def test_domain_runs_add_graph_methods_per_graph_and_the_mlsm_family_per_seed():
    from sipt_lab.studies.domain.cells import domain_cells
    from sipt_lab.studies.domain.presets import PRESETS

    cells = domain_cells(
        "wiki", ["mentions", "random"], 1, PRESETS["cpu"], init="char", methods=("linkbert", "lsm", "mlsm")
    )
    assert [(c.arm, c.graph) for c in cells] == [
        ("off-the-shelf", None),
        ("lm", None),
        ("sipt", "mentions"),
        ("sipt", "random"),
        ("linkbert", "mentions"),
        ("linkbert", "random"),
        ("lsm", None),
        ("mlsm", None),
    ]
    with pytest.raises(SiptError, match="not 'simcse'"):
        domain_cells("wiki", ["mentions"], 1, PRESETS["cpu"], methods=("simcse",))


def test_a_teacher_layer_beyond_the_lm_arm_is_refused_when_the_simulation_is_configured():
    from sipt_lab.core.errors import ConfigError
    from sipt_lab.studies.simulation.config import simulation_config

    two_layers = EncoderConfig(hidden=8, n_heads=2, n_layers=2)
    assert simulation_config("cliques", encoder=two_layers, methods=("lm", "mlsm"), concepts=ConceptOptions(layer=2))
    with pytest.raises(ConfigError, match=r"ConceptOptions.layer is 3 but the teacher has layers 0..2"):
        simulation_config("cliques", encoder=two_layers, methods=("lm", "mlsm"), concepts=ConceptOptions(layer=3))
