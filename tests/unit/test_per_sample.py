"""The per-sample baselines: their losses on hand-checked batches, the pairs same-family draws, the
labels file and its missing samples, and both methods end to end through ``pretrain``."""

import dataclasses
import json
import math

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from sipt_lab.cli.main import main
from sipt_lab.core.errors import SiptError
from sipt_lab.jobs.per_sample_labels import method_labels
from sipt_lab.objectives import ObjectiveInputs
from sipt_lab.objectives.sample_heads import MultiLabel, SameFamily
from sipt_lab.training import TrainConfig
from sipt_lab.training.defaults import method_train_config
from sipt_lab.training.methods import METHODS, method_recipe
from sipt_lab.training.per_sample import LabelOverlap, SampleLabels


def _bce(logit: float, target: float) -> float:
    return -(target * math.log(1 / (1 + math.exp(-logit))) + (1 - target) * math.log(1 - 1 / (1 + math.exp(-logit))))


def _no_pairs() -> torch.Tensor:
    return torch.empty(0, 2, dtype=torch.int64)


def test_multitask_loss_is_the_mean_bce_over_the_known_seeds_labels():
    # samples 0..2; sample 1 is unknown; two labels; head: logit_l = h_l (identity weights, zero bias)
    labels = sp.csr_array(np.array([[1, 0], [0, 0], [1, 1]]))
    objective = MultiLabel(2, labels, np.array([True, False, True]))
    with torch.no_grad():
        objective.head.weight.copy_(torch.eye(2))
    embeddings = torch.tensor([[2.0, -1.0], [5.0, 5.0], [0.0, 1.0]])
    rows = np.array([2, 1, 0])  # the embedding rows' samples
    inputs = ObjectiveInputs(embeddings, _no_pairs(), _no_pairs(), samples=rows, seed_samples=rows, seed_count=3)
    # known rows: 0 (sample 2, targets 1 1, logits 2 -1) and 2 (sample 0, targets 1 0, logits 0 1)
    expected = (_bce(2, 1) + _bce(-1, 1) + _bce(0, 1) + _bce(1, 0)) / (2 * 2)
    assert objective(inputs).item() == pytest.approx(expected, rel=1e-6)


def test_same_family_loss_is_the_mean_bce_of_positive_and_negative_pairs():
    objective = SameFamily(1)
    with torch.no_grad():  # logit = 1·(a·b) − 1·|a − b| + 0.5
        objective.head.weight.copy_(torch.tensor([[1.0, -1.0]]))
        objective.head.bias.fill_(0.5)
    embeddings = torch.tensor([[1.0], [2.0], [-1.0]])
    positive, negative = torch.tensor([[0, 1]]), torch.tensor([[0, 2], [1, 2]])
    loss = objective(ObjectiveInputs(embeddings, positive, negative))
    # (0, 1): 2 − 1 + .5 = 1.5 (target 1); (0, 2): −1 − 2 + .5 = −2.5; (1, 2): −2 − 3 + .5 = −4.5 (target 0)
    expected = (_bce(1.5, 1) + _bce(-2.5, 0) + _bce(-4.5, 0)) / 3
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    assert objective(ObjectiveInputs(embeddings, _no_pairs(), _no_pairs())).item() == 0.0


def test_label_overlap_draws_partners_that_share_a_label_or_none():
    # families: {0, 1, 2} label a, {2, 3} label b, {4} label c alone, 5 unknown
    matrix = sp.csr_array(np.array([[1, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [0, 0, 0]]))
    graph = LabelOverlap(SampleLabels(matrix, np.array([1, 1, 1, 1, 1, 0], dtype=bool)))
    nodes = np.repeat(np.arange(6), 50)
    positives, negatives = graph.sample_positives(nodes, 0), graph.sample_negatives(nodes, 1)
    known = nodes < 5
    assert (positives[nodes == 4] == -1).all() and (positives[nodes == 5] == -1).all()
    assert (negatives[nodes == 5] == -1).all()
    linked = (nodes != 4) & known
    assert graph.has_edge(nodes[linked], positives[linked]).all()
    assert (negatives[known] >= 0).all() and not graph.has_edge(nodes[known], negatives[known]).any()
    assert not (negatives == 5).any()  # an unknown sample is nobody's partner
    assert set(positives[nodes == 2]) == {0, 1, 3}
    assert graph.has_edge([0, 0, 2], [3, 0, 3]).tolist() == [False, False, True]


def _write_labels(tmp_path, lines: str):
    path = tmp_path / "pt_labels.tsv"
    path.write_text(lines)
    return str(path)


def test_missing_labels_are_counted_and_allow_missing_skips_them(tmp_path):
    path = _write_labels(tmp_path, "a\tF1;F2\nc\t\n")
    config = TrainConfig(lambda_si=0.1, pt_labels=path)
    with pytest.raises(SiptError, match=r"^1 of 3 pre-training samples .* \(e.g. 'b'\).*TrainConfig.allow_missing"):
        method_labels("multitask", config, ["a", "b", "c"])
    labels = method_labels("same-family", TrainConfig(pt_labels=path, allow_missing=True), ["a", "b", "c"])
    assert labels.known.tolist() == [True, False, True] and labels.names == ("F1", "F2")
    assert labels.matrix.toarray().tolist() == [[1, 1], [0, 0], [0, 0]]
    assert method_labels("sipt", config, ["a"]) is None  # a method that reads none
    with pytest.raises(SiptError, match="TrainConfig.pt_labels"):
        method_labels("multitask", TrainConfig(), ["a"])
    with pytest.raises(SiptError, match="need per-sample pre-training labels"):
        method_recipe("multitask")


def test_pretrain_job_takes_labels_only_for_a_per_sample_method():
    from sipt_lab.core.errors import ConfigError
    from sipt_lab.jobs.configs import PretrainJob

    files = {"samples": "s.tsv", "edges": "e.tsv", "init": "char"}
    with pytest.raises(ConfigError, match="TrainConfig.pt_labels"):
        PretrainJob(**files, method="sipt", train=TrainConfig(pt_labels="l.tsv"))
    assert PretrainJob(**files, method="multitask", train=TrainConfig(pt_labels="l.tsv")).train.pt_labels == "l.tsv"


def test_per_sample_methods_are_weighted_by_lambda():
    assert [m for m in METHODS if METHODS[m].needs_labels] == ["multitask", "same-family"]
    with pytest.raises(SiptError, match="TrainConfig.lambda_si is 0, but method multitask weights its per-sample term"):
        method_train_config("multitask", TrainConfig(lambda_si=0.0))
    assert method_train_config("same-family", TrainConfig(pairs="batch")).pairs == "sampled"


@pytest.mark.parametrize("method, term", [("multitask", "multitask"), ("same-family", "same_family")])
def test_pretrain_runs_each_per_sample_baseline_end_to_end(clique_files, tmp_path, method, term, capsys):
    labels = "".join(f"s{i}\tg{i % 4};{'odd' if i % 2 else 'even'}\n" for i in range(39))  # s39 unlisted
    path = _write_labels(tmp_path, labels)
    argv = [
        "pretrain",
        *("--samples", str(clique_files / "samples.tsv"), "--edges", str(clique_files / "edges.tsv")),
        *("--init", "char", "--encoder", "paper-small", "--steps", "3", "--batch-size", "8", "--quiet"),
        *("--method", method, "--lambda-si", "0.5", "--pt-labels", path),
    ]
    assert main([*argv, "--out", str(tmp_path / "refused")]) == 2
    error = capsys.readouterr().err.strip()
    assert "1 of 40 pre-training samples" in error and "--allow-missing" in error and "\n" not in error
    assert main([*argv, "--allow-missing", "--out", str(tmp_path / "run")]) == 0
    final = json.loads((tmp_path / "run" / "result.json").read_text())["final"]
    assert set(final) == {"loss", "mlm", term, "lr"} and final[term] > 0
    assert final["loss"] == pytest.approx(0.5 * final["mlm"] + 0.5 * final[term], rel=1e-4)


def test_a_per_sample_head_is_fitted_with_the_encoder_frozen_before_training():
    from test_trainer import TINY, _cliques

    from sipt_lab.training import pretrain
    from sipt_lab.training.per_sample import SampleLabels

    sentences, graph, groups = _cliques()
    matrix = sp.csr_array(np.eye(4, dtype=np.int8)[groups])  # each sample's clique as its one label
    recipe = method_recipe("multitask", labels=SampleLabels(matrix, np.ones(len(sentences), bool)))
    # lr 1e-12: training leaves the encoder where it was, so any move would be the warm-up's
    config = TrainConfig(steps=1, batch_size=12, max_len=24, lambda_si=0.5, lr=1e-12, seed=3, device="cpu")
    fitted = pretrain(sentences, graph, dataclasses.replace(config, head_warmup=20), TINY, method=recipe)
    alone = pretrain(sentences, graph, config, TINY, method=recipe)
    (note,) = [note for note in fitted.notes if "multitask head fitted" in note]
    before, after = (float(x) for x in note.rsplit(":", 1)[1].replace("multitask loss", "").split("->"))
    assert note.startswith("new multitask head fitted for 20 steps with the encoder frozen") and after < before
    assert not any("head fitted" in note for note in alone.notes)  # head_warmup 0: nothing fitted
    assert fitted.history["multitask"][0] < alone.history["multitask"][0]
    for (name, mine), theirs in zip(fitted.encoder.named_parameters(), alone.encoder.parameters()):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=1e-9, msg=name)  # the encoder never moved
    head = fitted.objectives["multitask"].head.weight
    assert not torch.allclose(head, alone.objectives["multitask"].head.weight)
