import math

import numpy as np
import pytest
import torch
from pytorch_metric_learning.distances import LpDistance
from pytorch_metric_learning.losses import ContrastiveLoss, MultiSimilarityLoss
from pytorch_metric_learning.reducers import AvgNonZeroReducer, MeanReducer

from sipt_lab.core.errors import SiptError
from sipt_lab.objectives import (
    MaskedLM,
    ObjectiveInputs,
    StructureInducing,
    build_objectives,
    combine,
    contrastive_loss,
    get_structure_loss,
    linear_masked_lm_loss,
    loss_parameters,
    masked_lm_loss,
    multi_similarity_loss,
)


def _t(*values):
    return torch.tensor(values, dtype=torch.int64)


def _random_pairs(seed=0, rows=12, dim=5):
    """Embeddings and an indices tuple with several pairs per anchor, no pair both positive and negative."""
    gen = torch.Generator().manual_seed(seed)
    z = torch.randn(rows, dim, generator=gen, dtype=torch.float64) * 2
    a1, p = _t(0, 0, 1, 2, 3, 3, 3), _t(1, 4, 5, 6, 7, 8, 9)
    a2, n = _t(0, 1, 1, 4, 5), _t(10, 11, 2, 0, 6)
    return z, (a1, p, a2, n)


def test_contrastive_hand_computed():
    z = torch.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    # positive (0,1): d=5, pos_margin 1 -> 4; negatives (0,2): d=10 -> 12-10=2, (1,2): d=5 -> 7
    loss = contrastive_loss(z, _t(0), _t(1), _t(0, 1), _t(2, 2), pos_margin=1.0, neg_margin=12.0)
    assert loss.item() == pytest.approx(4.0 + (2.0 + 7.0) / 2)


def test_contrastive_defaults_are_the_original_margins():
    assert loss_parameters("contrastive") == {"pos_margin": 0.0, "neg_margin": 10.0}
    z = torch.tensor([[0.0, 0.0], [3.0, 4.0]])
    assert contrastive_loss(z, _t(0), _t(1), _t(), _t()).item() == pytest.approx(5.0)
    assert contrastive_loss(z, _t(), _t(), _t(0), _t(1)).item() == pytest.approx(5.0)


@pytest.mark.parametrize("pos_margin,neg_margin", [(0.0, 10.0), (0.5, 3.0)])
def test_contrastive_matches_pytorch_metric_learning(pos_margin, neg_margin):
    z, pairs = _random_pairs()
    reference = ContrastiveLoss(
        pos_margin=pos_margin,
        neg_margin=neg_margin,
        distance=LpDistance(normalize_embeddings=False),
        reducer=MeanReducer(),
    )(z, indices_tuple=pairs)
    ours = contrastive_loss(z, *pairs, pos_margin=pos_margin, neg_margin=neg_margin)
    assert ours.item() == pytest.approx(reference.item(), rel=1e-12)


def test_multisim_hand_computed():
    z = torch.tensor([[2.0, 0.0], [0.0, 3.0], [-1.0, 0.0], [1.0, 1.0]])
    # anchor 0: positive 1 (S=0), negative 2 (S=-1); anchor 3: positive 0 (S=1/sqrt 2) only
    loss = multi_similarity_loss(z, _t(0, 3), _t(1, 0), _t(0), _t(2), w_pos=2.0, w_neg=3.0, t=0.5)
    anchor0 = math.log1p(math.exp(-2 * (0 - 0.5))) / 2 + math.log1p(math.exp(3 * (-1 - 0.5))) / 3
    anchor3 = math.log1p(math.exp(-2 * (2**-0.5 - 0.5))) / 2
    assert loss.item() == pytest.approx((anchor0 + anchor3) / 2, rel=1e-6)


@pytest.mark.parametrize("w_pos,w_neg,t", [(1.0, 1.0, 0.1), (2.0, 40.0, 0.5)])
def test_multisim_matches_pytorch_metric_learning(w_pos, w_neg, t):
    z, pairs = _random_pairs(seed=1)
    z.requires_grad_(True)
    reference = MultiSimilarityLoss(alpha=w_pos, beta=w_neg, base=t, reducer=AvgNonZeroReducer())(
        z, indices_tuple=pairs
    )
    (ref_grad,) = torch.autograd.grad(reference, z)
    ours = multi_similarity_loss(z, *pairs, w_pos=w_pos, w_neg=w_neg, t=t)
    (our_grad,) = torch.autograd.grad(ours, z)
    assert ours.item() == pytest.approx(reference.item(), rel=1e-9)
    torch.testing.assert_close(our_grad.double(), ref_grad, rtol=1e-6, atol=1e-9)


def test_large_weights_stay_finite():
    z, pairs = _random_pairs(seed=2)
    assert torch.isfinite(multi_similarity_loss(z * 100, *pairs, w_pos=500.0, w_neg=500.0))


def test_zero_distance_has_finite_gradient():
    z = torch.zeros(2, 3, requires_grad=True)
    contrastive_loss(z, _t(0), _t(1), _t(0), _t(1), neg_margin=1.0).backward()
    assert torch.isfinite(z.grad).all()


def test_empty_pair_sets_give_zero():
    z = torch.randn(3, 2)
    for loss in (contrastive_loss, multi_similarity_loss):
        assert loss(z, _t(), _t(), _t(), _t()).item() == 0.0


def _pairs(*pairs):
    return torch.tensor(pairs, dtype=torch.int64).reshape(-1, 2)


def test_structure_objective_scores_the_given_pairs():
    z = torch.randn(5, 3, generator=torch.Generator().manual_seed(0))
    inputs = ObjectiveInputs(z, positive_pairs=_pairs((0, 3), (2, 4)), negative_pairs=_pairs((1, 4), (2, 0)))
    for name, loss in (("contrastive", contrastive_loss), ("multisim", multi_similarity_loss)):
        expected = loss(z, _t(0, 2), _t(3, 4), _t(1, 2), _t(4, 0))
        assert StructureInducing(name)(inputs).item() == pytest.approx(expected.item())


def test_masked_lm_is_cross_entropy_and_zero_when_nothing_masked():
    logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    expected = (-math.log(math.exp(2) / (math.exp(2) + 2)) - math.log(1 / 3)) / 2
    assert masked_lm_loss(logits, _t(0, 1)).item() == pytest.approx(expected)
    empty = masked_lm_loss(torch.zeros(0, 3, requires_grad=True), _t())
    assert empty.item() == 0.0 and empty.requires_grad


def _decoder_inputs(seed=0, rows=7, hidden=4, vocab=11):
    gen = torch.Generator().manual_seed(seed)
    tensors = [
        torch.randn(rows, hidden, generator=gen) * 3,
        torch.randn(vocab, hidden, generator=gen),
        torch.randn(vocab, generator=gen),
    ]
    return [t.requires_grad_() for t in tensors], torch.randint(0, vocab, (rows,), generator=gen)


@pytest.mark.parametrize("count", [None, 20])
def test_fused_decoder_loss_equals_cross_entropy_of_the_logits_with_its_gradients(count):
    (hidden, weight, bias), targets = _decoder_inputs()
    fused = linear_masked_lm_loss(hidden, weight, bias, targets, count)
    (fused * 3).backward()  # an upstream factor, which the saved gradients must be scaled by
    got = [t.grad.clone() for t in (hidden, weight, bias)]
    for t in (hidden, weight, bias):
        t.grad = None
    expected = masked_lm_loss(torch.addmm(bias, hidden, weight.T), targets, count)
    (expected * 3).backward()
    assert fused.item() == pytest.approx(expected.item(), rel=1e-6)
    for grad, t in zip(got, (hidden, weight, bias)):
        torch.testing.assert_close(grad, t.grad, rtol=1e-5, atol=1e-6)


def test_fused_decoder_loss_is_stable_for_far_apart_logits_and_zero_when_nothing_is_masked():
    hidden, weight, bias = torch.tensor([[1.0]]), torch.tensor([[200.0], [-200.0], [0.0]]), torch.zeros(3)
    for target, expected in ((0, 0.0), (1, 400.0)):  # exp(-400) underflows: the loss must not be inf
        assert linear_masked_lm_loss(hidden, weight, bias, _t(target)).item() == pytest.approx(expected, abs=1e-4)
    (hidden, weight, bias), _ = _decoder_inputs()
    empty = linear_masked_lm_loss(hidden[:0], weight, bias, _t())
    empty.backward()
    assert empty.item() == 0.0 and (weight.grad == 0).all()


def test_fused_decoder_loss_under_autocast_follows_fp32():
    (hidden, weight, bias), targets = _decoder_inputs()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        low = linear_masked_lm_loss(hidden, weight, bias, targets)
    low.backward()
    assert low.dtype == torch.float32 and weight.grad.dtype == torch.float32
    low_grad = weight.grad.clone()
    weight.grad = None
    full = linear_masked_lm_loss(hidden, weight, bias, targets)
    full.backward()
    assert low.item() == pytest.approx(full.item(), rel=0.05)
    torch.testing.assert_close(low_grad, weight.grad, rtol=0.1, atol=0.05)


def test_weights_follow_lambda_and_zero_terms_are_not_built():
    assert [(w, o.name) for w, o in build_objectives(0.0)] == [(1.0, "mlm")]
    assert [(w, o.name) for w, o in build_objectives(1.0)] == [(1.0, "si")]
    assert [(w, o.name) for w, o in build_objectives(0.1)] == [(0.9, "mlm"), (0.1, "si")]


def test_combine_weights_terms():
    z = torch.tensor([[0.0, 0.0], [3.0, 4.0]])
    logits = torch.zeros(1, 3)
    inputs = ObjectiveInputs(z, _pairs((0, 1), (1, 0)), _pairs(), logits, _t(2))
    total, terms = combine(build_objectives(0.25), inputs)
    assert terms["mlm"].item() == pytest.approx(math.log(3))
    assert terms["si"].item() == pytest.approx(5.0)
    assert total.item() == pytest.approx(0.75 * math.log(3) + 0.25 * 5.0)
    assert isinstance(build_objectives(0.5)[0][1], MaskedLM)


def test_bad_names_and_values_are_sipt_errors():
    with pytest.raises(SiptError, match="unknown structure loss 'triplet'"):
        build_objectives(0.1, "triplet")
    with pytest.raises(SiptError, match="has no parameter"):
        build_objectives(0.1, "contrastive", {"w_pos": 2.0})


@pytest.mark.parametrize("temperature", [0.05, 0.5])
def test_infonce_matches_pytorch_metric_learning_ntxent(temperature):
    from pytorch_metric_learning.losses import NTXentLoss

    from sipt_lab.objectives.structure import infonce_loss

    z, pairs = _random_pairs(seed=1)
    ours = infonce_loss(z, *pairs, temperature=temperature)
    reference = NTXentLoss(temperature=temperature)(z, indices_tuple=pairs)
    assert ours.item() == pytest.approx(reference.item(), rel=1e-10)


def test_infonce_never_pushes_a_linked_sample_away():
    from sipt_lab.graphs.graph import PretrainingGraph
    from sipt_lab.objectives.structure import infonce_loss
    from sipt_lab.training.sampler import batch_pairs

    graph = PretrainingGraph.from_groups(np.array([0, 0, 0, 1, 1, 2]))
    nodes = np.arange(6)
    positive, negative = (torch.as_tensor(x) for x in batch_pairs(graph, nodes, None, None))
    z = torch.randn(6, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0), requires_grad=True)
    loss = infonce_loss(z, positive[:, 0], positive[:, 1], negative[:, 0], negative[:, 1], temperature=0.1)
    # by hand: anchor a, positive p, denominators over the anchor's non-linked samples only
    s = torch.nn.functional.normalize(z, dim=1) @ torch.nn.functional.normalize(z, dim=1).T / 0.1
    linked = torch.as_tensor(graph.has_edge(nodes[:, None], nodes[None, :]))
    terms = [
        -s[a, p] + torch.logsumexp(torch.cat([s[a, p].view(1), s[a][~linked[a] & (torch.arange(6) != a)]]), 0)
        for a, p in positive.tolist()
    ]
    assert loss.item() == pytest.approx(torch.stack(terms).mean().item(), rel=1e-10)
    # a plain in-batch softmax (every other sample a negative) is a different, larger loss
    naive = [-s[a, p] + torch.logsumexp(s[a][torch.arange(6) != a], 0) for a, p in positive.tolist()]
    assert torch.stack(naive).mean().item() > loss.item()
    with pytest.raises(SiptError, match="temperature"):
        infonce_loss(z, positive[:, 0], positive[:, 1], negative[:, 0], negative[:, 1], temperature=0.0)


def test_grouped_contrastive_is_each_groups_contrastive_loss():
    from sipt_lab.objectives.structure import grouped_contrastive_loss

    z, (a1, p, a2, n) = _random_pairs()
    positive_groups, negative_groups = _t(0, 0, 2, 2, 0, 2, 2), _t(2, 0, 0, 2, 2)  # group 1 has no pairs
    z_grouped = z.clone().requires_grad_()
    grouped = grouped_contrastive_loss(
        z_grouped, a1, p, a2, n, positive_groups, negative_groups, 3, pos_margin=0.5, neg_margin=4.0
    )
    z_alone = z.clone().requires_grad_()
    alone = torch.stack(
        [
            contrastive_loss(
                z_alone,
                a1[positive_groups == g],
                p[positive_groups == g],
                a2[negative_groups == g],
                n[negative_groups == g],
                pos_margin=0.5,
                neg_margin=4.0,
            )
            for g in range(3)
        ]
    )
    torch.testing.assert_close(grouped, alone)
    assert grouped[1] == 0
    (grouped * torch.tensor([1.0, 2.0, 3.0], dtype=z.dtype)).sum().backward()
    (alone * torch.tensor([1.0, 2.0, 3.0], dtype=z.dtype)).sum().backward()
    torch.testing.assert_close(z_grouped.grad, z_alone.grad)


@pytest.mark.parametrize("loss", ["contrastive", "multisim", "infonce"])
def test_structure_objective_per_run_equals_each_run(loss):
    objective = StructureInducing(loss)
    stacked = torch.randn(3, 12, 5, dtype=torch.float64) * 2
    rng = np.random.default_rng(0)
    positives = [rng.integers(0, 12, (k, 2)) for k in (4, 0, 6)]
    negatives = [rng.integers(0, 12, (k, 2)) for k in (5, 3, 0)]
    arrays = StructureInducing.pair_arrays(positives, negatives, 12)
    sizes = [(len(pos), len(neg)) for pos, neg in zip(positives, negatives)]
    per_run = objective.per_run(stacked, {name: torch.as_tensor(a) for name, a in arrays.items()}, sizes)
    if objective.grouped_loss is not None:  # padding pairs (group K) change nothing
        padded = StructureInducing.pair_arrays(positives, negatives, 12, pad=8)
        assert len(padded["positive"]) == 16 and len(padded["negative"]) == 8
        torch.testing.assert_close(
            objective.per_run(stacked, {name: torch.as_tensor(a) for name, a in padded.items()}), per_run
        )
    alone = [
        objective(ObjectiveInputs(run, torch.as_tensor(pos).reshape(-1, 2), torch.as_tensor(neg).reshape(-1, 2)))
        for run, pos, neg in zip(stacked, positives, negatives)
    ]
    torch.testing.assert_close(per_run, torch.stack(alone))
    assert (objective.grouped_loss is None) == (loss != "contrastive") and get_structure_loss(loss) is objective.loss
