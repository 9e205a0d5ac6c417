"""Batched training of K same-shaped char encoders equals K separate runs (losses and weights)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from sipt_lab.core.errors import SiptError
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models import ENCODER_PRESETS
from sipt_lab.training import TrainConfig, pretrain
from sipt_lab.training.trainer import BatchedRun, pretrain_batched

ENCODER = ENCODER_PRESETS["paper-small"]


def _run(seed: int, lambda_si: float, n: int = 24, **overrides) -> BatchedRun:
    """Random strings of varied lengths (a per-seed alphabet, so vocabularies differ) on label cliques."""
    rng = np.random.default_rng(seed)
    alphabet = list("abcdefgh ")[: 6 + seed % 3]
    texts = ["".join(rng.choice(alphabet, size=k)) for k in rng.integers(4, 30, n)]
    graph = PretrainingGraph.from_groups(np.arange(n) % 4)
    config = TrainConfig(
        steps=6,
        batch_size=8,
        lr=3e-3,
        seed=seed,
        lambda_si=lambda_si,
        device="cpu",
        max_len=24,
        **{"pairs": "sampled", "schedule": "constant", **overrides},
    )
    return BatchedRun(texts, graph, config)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("overrides", "lambdas", "weight_atol"),
    [
        ({}, (0.0, 0.1), 1e-5),
        ({"pairs": "batch", "mask_replacement": "bert", "schedule": "linear"}, (0.0, 0.1), 1e-5),
        # a loss without a grouped form; λ = 1: L_SI alone, whose small gradients Adam scales up
        # (rounding differences reach ~1e-4 in the weights on some CPUs), and an MLM head it never reads
        ({"loss": "multisim"}, (0.5, 1.0), 1e-3),
    ],
)
def test_batched_equals_separate_runs(overrides, lambdas, weight_atol):
    runs = [_run(seed, lam, **overrides) for seed in (0, 1, 2) for lam in lambdas]
    batched = pretrain_batched(runs, ENCODER)
    for run, result in zip(runs, batched):
        alone = pretrain(run.texts, run.graph, run.config, ENCODER)
        assert result.history.keys() == alone.history.keys()
        for name, values in alone.history.items():
            np.testing.assert_allclose(result.history[name], values, rtol=1e-4, atol=1e-5, err_msg=name)
        assert result.tokenizer.to_dict() == alone.tokenizer.to_dict()
        # the MLM head's own parameters (a tied decoder weight is the token table, read by the encoder too)
        head = {
            name for name, _ in alone.encoder.named_parameters() if name.startswith(("mlm_transform.", "mlm_decoder."))
        }
        for (name, mine), theirs in zip(result.encoder.state_dict().items(), alone.encoder.state_dict().values()):
            if run.config.lambda_si == 1.0 and name in head:
                assert torch.equal(mine, theirs), name  # never read without L_M: left as initialised, not decayed
            if name.endswith("qkv.bias"):  # the key bias shifts every score of a row alike: its gradient is
                keep = torch.arange(len(mine)) // ENCODER.hidden != 1  # rounding noise, which Adam scales up
                mine, theirs = mine[keep], theirs[keep]
            torch.testing.assert_close(mine, theirs, rtol=1e-4, atol=weight_atol, msg=name)


def test_runs_that_differ_beyond_seed_and_lambda_or_use_dropout_are_refused():
    with pytest.raises(SiptError, match="they differ in lr$"):
        other = _run(1, 0.1)
        pretrain_batched(
            [_run(0, 0.0), dataclasses.replace(other, config=dataclasses.replace(other.config, lr=1e-3))], ENCODER
        )
    with pytest.raises(SiptError, match="dropout 0"):
        pretrain_batched([_run(0, 0.0), _run(1, 0.1)], dataclasses.replace(ENCODER, dropout=0.1))


def test_stacked_forward_equals_each_encoder_over_several_length_buckets():
    from sipt_lab.models import TransformerEncoder
    from sipt_lab.models.stacked import StackedEncoders
    from sipt_lab.models.transfer import DeviceArrays

    torch.manual_seed(0)
    encoders = [TransformerEncoder(dataclasses.replace(ENCODER, vocab_size=v)) for v in (12, 9)]
    rng = np.random.default_rng(0)
    lengths = np.stack([rng.integers(1, 21, 10), rng.integers(1, 21, 10)])
    lengths[:, 0] = 20
    ids = torch.zeros((2, 10, 20), dtype=torch.int64)
    for k, vocab in enumerate((12, 9)):
        for row, n in enumerate(lengths[k]):
            ids[k, row, :n] = torch.as_tensor(np.r_[2, rng.integers(3, vocab, n - 1)])
    positions = torch.tensor([[3, 21, 45, 0], [1, 2, 60, 20]])  # model 1 reads row 0 twice, model 0 pads with a [CLS]
    stacked = StackedEncoders.stack(encoders)
    assert len(stacked.pack(lengths, 20, positions.numpy())[1]) > 1
    counts = [3, 4]
    embeddings, heads = stacked(ids, positions, lengths, counts)
    # the fixed-shape packing (one bucket, every row 20 slots) computes the same
    arrays, buckets = stacked.pack(lengths, 20, positions.numpy(), fixed=True)
    assert len(buckets) == 1 and set(arrays) == {"reads", "read_slots", "key_bias"}  # slots = the rows' positions
    fixed = stacked.encode(ids, stacked.packing(DeviceArrays(arrays, torch.device("cpu")), buckets), counts)
    torch.testing.assert_close(fixed[0], embeddings, rtol=1e-5, atol=1e-6)
    for mine, theirs in zip(fixed[1], heads):
        torch.testing.assert_close(mine.logits(), theirs.logits(), rtol=1e-5, atol=1e-5)
    logits = [head.logits() for head in heads]
    for k, (encoder, vocab, count) in enumerate(zip(encoders, (12, 9), counts)):
        rows = [
            encoder.embed_and_masked_logits(ids[k, r : r + 1, : lengths[k, r]], torch.zeros(0, dtype=torch.int64))[0]
            for r in range(10)
        ]
        torch.testing.assert_close(embeddings[k], torch.cat(rows), rtol=1e-5, atol=1e-6)
        assert logits[k].shape == (count, vocab)  # its own masked positions and vocabulary only
        for m, flat in enumerate(positions[k, :count].tolist()):
            row, column = divmod(flat, 20)
            _, want = encoder.embed_and_masked_logits(ids[k, row : row + 1, : lengths[k, row]], torch.tensor([column]))
            torch.testing.assert_close(logits[k][m], want[0], rtol=1e-5, atol=1e-5)


def test_lm_runs_that_differ_only_in_their_graph_train_once_and_equal_separate_runs(monkeypatch):
    import sipt_lab.training.stacked_step as batched

    base = _run(0, 0.0)
    noisy = dataclasses.replace(base, graph=PretrainingGraph.from_groups(np.arange(24) % 3))  # other links, same texts
    sipt = _run(0, 0.1)
    stacks = []
    monkeypatch.setattr(
        batched.StackedEncoders,
        "stack",
        classmethod(lambda cls, encoders: stacks.append(len(encoders)) or cls(encoders)),
    )
    results = pretrain_batched([base, sipt, noisy], ENCODER)
    assert stacks == [2]  # the two LM runs are one model; SIPT reads its graph and is its own
    assert results[0].encoder is not results[2].encoder and results[2].config == noisy.config
    for run, result in zip([base, sipt, noisy], results):
        alone = pretrain(run.texts, run.graph, run.config, ENCODER)
        np.testing.assert_allclose(result.history["loss"], alone.history["loss"], rtol=1e-4, atol=1e-5)
        for mine, theirs in zip(result.encoder.parameters(), alone.encoder.parameters()):
            torch.testing.assert_close(mine, theirs, rtol=1e-3, atol=1e-4)


def test_batched_resume_gives_the_uninterrupted_numbers(tmp_path):
    runs = [_run(seed, lam) for seed, lam in ((0, 0.0), (1, 0.1))]
    whole = pretrain_batched(runs, ENCODER)
    short = [dataclasses.replace(run, config=dataclasses.replace(run.config, steps=3)) for run in runs]
    pretrain_batched(short, ENCODER, checkpoint_dir=tmp_path)
    assert (tmp_path / "checkpoint.pt").is_file()
    resumed = pretrain_batched(runs, ENCODER, checkpoint_dir=tmp_path)
    for mine, theirs in zip(resumed, whole):
        for name, values in theirs.history.items():
            np.testing.assert_array_equal(mine.history[name], values, err_msg=name)
        for a, b in zip(mine.encoder.parameters(), theirs.encoder.parameters()):
            torch.testing.assert_close(a, b, rtol=0, atol=0)
    with pytest.raises(SiptError, match=r"another configuration \(differs in runs.1.train.lambda_si\)"):
        pretrain_batched([runs[0], _run(1, 0.2)], ENCODER, checkpoint_dir=tmp_path)


def _losses_of(runs, compile="none", fixed=None, steps=3):
    """Each run's per-step losses over ``steps`` steps of :func:`stacked_training` (``fixed``: the
    compiled and recorded stacks' fixed shapes, or not; None: the mode's own)."""
    from sipt_lab.training.step import train_step
    from sipt_lab.training.trainer import stacked_training

    stack = stacked_training(runs, ENCODER, compile)
    if fixed is not None:
        stack.step.preparer.fixed = fixed
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    values = [
        train_step(stack.step, stack.optimizer, scaler, [[s.batch(i) for s in stack.samplers]]) for i in range(steps)
    ]
    return np.array([[float(run[0]) for run in step] for step in values])


@pytest.mark.parametrize("loss", ["contrastive", "multisim"])  # padded pairs, or each run's own
def test_the_compiled_or_recorded_stacks_padding_changes_no_loss(loss):
    runs = [_run(seed, lam, loss=loss) for seed in (0, 1) for lam in (0.0, 0.1, 1.0)]
    np.testing.assert_allclose(_losses_of(runs, fixed=True), _losses_of(runs, fixed=False), rtol=1e-5, atol=1e-6)


def test_a_recorded_stack_has_few_shapes():
    from sipt_lab.training.trainer import stacked_training

    runs = [_run(seed, lam) for seed in (0, 1) for lam in (0.0, 0.1)]
    stack = stacked_training(runs, ENCODER)
    stack.step.preparer.fixed = True
    batches = [stack.step.prepare([s.batch(i) for s in stack.samplers]) for i in range(12)]
    # sampled pairs encode 8 seeds and up to 16 neighbours: rows rounded up to 16 or 32, each shape recorded once
    assert len({batch.layout for batch in batches}) == 2
    for layout in {batch.layout for batch in batches}:
        same = [{name: array.shape for name, array in b.arrays.items()} for b in batches if b.layout == layout]
        assert all(shapes == same[0] for shapes in same)  # one layout, one set of shapes: a recording's buffers fit
        assert same[0]["ids"][::2] == (4, 24) and same[0]["targets"] == (4, 64) and layout.pair_sizes is None
    # batch pairs: every edge among the seeds, padded to a multiple of 64; more pairs, another layout
    many = stacked_training([_run(seed, 0.1, pairs="batch") for seed in (0, 1, 2)], ENCODER)
    many.step.preparer.fixed = True
    prepared = [many.step.prepare([s.batch(i) for s in many.samplers]) for i in range(12)]
    pairs = {len(b.arrays["positive"]) for b in prepared}
    assert len(pairs) > 1 and len({b.layout for b in prepared}) >= len(pairs)


@pytest.mark.slow
def test_compiled_batched_training_gives_the_eager_losses(monkeypatch):
    import sipt_lab.training.stacked_step as stacked_step

    # dynamo's graph of the stack through AOTAutograd (inductor's CPU code generation takes minutes here)
    monkeypatch.setitem(stacked_step.COMPILE_OPTIONS, "compile", {"backend": "aot_eager"})
    runs = [_run(0, lam) for lam in (0.0, 0.1)]
    np.testing.assert_allclose(_losses_of(runs, "compile", steps=2), _losses_of(runs, steps=2), rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_a_compiled_stack_compiles_its_encoders_once_per_shape(monkeypatch):
    """Each step's own attention buckets (their number and widths) would be a new graph each step,
    until the recompilation limit; past it new shapes ran eagerly beside the compiled ones."""
    import sipt_lab.training.stacked_step as stacked_step

    graphs = []

    def counting(graph, example_inputs):  # dynamo's graphs, run as traced: the eager ops
        graphs.append(graph)
        return graph.forward

    torch._dynamo.reset()  # the recompilation limit counts per code object, across stacks
    monkeypatch.setitem(stacked_step.COMPILE_OPTIONS, "compile", {"backend": counting})
    runs = [_run(seed, lam) for seed in (0, 1) for lam in (0.0, 0.1)]
    compiled = _losses_of(runs, "compile", steps=10)
    # sampled pairs encode 8 seeds and up to 16 neighbours: rows rounded up to 16 or 32
    assert 1 <= len(graphs) <= 2, [graph.code for graph in graphs[:1]]
    np.testing.assert_allclose(compiled, _losses_of(runs, steps=10), rtol=1e-5, atol=1e-6)


def test_worker_processes_draw_the_batches_this_process_draws():
    import dataclasses as dc

    from sipt_lab.training.batch_stream import batch_stream
    from sipt_lab.training.trainer import stacked_training

    stack = stacked_training([_run(seed, lam) for seed in (0, 1) for lam in (0.0, 0.1)], ENCODER)
    here = list(batch_stream(stack.samplers, 2, 3, 7, workers=0))
    ahead = list(batch_stream(stack.samplers, 2, 3, 7, workers=2))
    assert len(here) == len(ahead) == 4 and all(len(micro) == 2 and len(micro[0]) == 4 for micro in ahead)
    for mine, theirs in zip(here, ahead):
        for a, b in zip(sum(mine, []), sum(theirs, [])):
            for field in dc.fields(a):
                x, y = getattr(a, field.name), getattr(b, field.name)
                assert x == y if not isinstance(x, np.ndarray) else np.array_equal(x, y), field.name
    first = stack.samplers[1].batch(6)  # step 3's first micro-batch is each sampler's batch 3 * 2
    np.testing.assert_array_equal(first.nodes, ahead[0][0][1].nodes)


def test_recorded_steps_need_a_fixed_shape_stack_on_a_gpu():
    from sipt_lab.training.recorded_steps import RecordedSteps
    from sipt_lab.training.trainer import stacked_training

    stack = stacked_training([_run(0, 0.1)], ENCODER)
    with pytest.raises(SiptError, match="fixed-shape stack on a CUDA GPU"):
        RecordedSteps(stack.step, stack.optimizer)


def test_cuda_graphs_need_a_gpu():
    with pytest.raises(SiptError, match="cudagraphs needs a CUDA GPU"):
        pretrain_batched([_run(0, 0.1)], ENCODER, compile="cudagraphs")
    with pytest.raises(SiptError, match="unknown compile mode 'graphs'"):
        pretrain_batched([_run(0, 0.1)], ENCODER, compile="graphs")


def test_pretrain_trains_a_fresh_char_encoder_as_a_stack_of_one_on_cuda_only():
    from sipt_lab.models import CharInit
    from sipt_lab.training.methods import method_recipe
    from sipt_lab.training.trainer import trains_as_stack_of_one

    cuda, cpu, char = torch.device("cuda"), torch.device("cpu"), CharInit(ENCODER)
    assert trains_as_stack_of_one(char, cuda, method=None, watch=None, processes=1)
    assert not trains_as_stack_of_one(char, cpu, method=None, watch=None, processes=1)
    assert not trains_as_stack_of_one(char, cuda, method=None, watch=None, processes=2)  # torchrun: data parallel
    assert not trains_as_stack_of_one(char, cuda, method=None, watch=lambda *a: None, processes=1)
    assert not trains_as_stack_of_one(char, cuda, method=method_recipe("linkbert"), watch=None, processes=1)
    dropping = CharInit(dataclasses.replace(ENCODER, dropout=0.1))  # the stacked models would share dropout draws
    assert not trains_as_stack_of_one(dropping, cuda, method=None, watch=None, processes=1)
