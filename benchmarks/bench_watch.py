"""What watching a pre-training run costs: ``pretrain --eval-every`` against the same run unwatched.

The data: ``--n`` default-corpus sentences (seed 0), labelled by their article's category, linked
in a sparse random graph within each category (each sentence to ``--degree`` others of its
category). Both runs pre-train ``--init char`` for ``--steps`` steps with the same seed, batch and
length and the same ``--labels`` (so both write the same before/after report); the watched run
adds evaluations every ``--eval-every`` steps (the default interval unless given) and
``--keep-best loo_3nn_auroc``. Rows: the unwatched run, the watched run
and the run's own account of its evaluations (``result.json``'s ``evaluation``: count, slice size,
seconds and share of the training time). The ratio column is watched / unwatched wall time; the
two runs alternate ``--rounds`` times (median) so background load hits both alike.

Run: ``python benchmarks/bench_watch.py [--n 1500] [--steps 400] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from sipt_lab.cli.main import main
from sipt_lab.data.corpus import load_corpus
from sipt_lab.training.train_config import EVAL_EVERY_DEFAULT


def write_task(directory: Path, n: int, degree: int, seed: int = 0) -> tuple[Path, Path, Path]:
    """``samples.tsv``, ``labels.tsv`` and ``edges.tsv`` of ``n`` corpus sentences."""
    corpus = load_corpus()
    rng = np.random.default_rng(seed)
    rows = rng.choice(len(corpus.sentences), size=n, replace=False)
    categories = np.array(corpus.categories)[rows]
    samples, labels, edges = directory / "samples.tsv", directory / "labels.tsv", directory / "edges.tsv"
    samples.write_text("".join(f"s{i}\t{corpus.sentences[row]}\n" for i, row in enumerate(rows)))
    labels.write_text("".join(f"s{i}\t{category}\n" for i, category in enumerate(categories)))
    lines = []
    for category in np.unique(categories):
        members = np.flatnonzero(categories == category)
        for i in members:
            for j in rng.choice(members, size=min(degree, len(members) - 1), replace=False):
                if i != j:
                    lines.append(f"s{i}\ts{j}\n")
    edges.write_text("".join(lines))
    return samples, labels, edges


def timed_run(arguments: list[str]) -> float:
    start = time.perf_counter()
    if main(arguments) != 0:
        raise SystemExit(f"pretrain failed: {' '.join(arguments)}")
    return time.perf_counter() - start


def main_bench() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1500)
    parser.add_argument("--degree", type=int, default=5)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--eval-every", type=int, default=EVAL_EVERY_DEFAULT)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        samples, labels, edges = write_task(root, args.n, args.degree)
        common = [
            "-q",
            "pretrain",
            "--init",
            "char",
            "--samples",
            str(samples),
            "--edges",
            str(edges),
            "--labels",
            str(labels),
            "--steps",
            str(args.steps),
            "--batch-size",
            "32",
            "--max-length",
            "64",
            "--report-to",
            "none",
        ]
        plain, watched, shares = [], [], []
        for round_ in range(args.rounds):
            runs = [("plain", []), ("watched", ["--eval-every", str(args.eval_every), "--keep-best", "loo_3nn_auroc"])]
            for name, extra in runs if round_ % 2 == 0 else runs[::-1]:
                out = root / f"{name}-{round_}"
                seconds = timed_run([*common, *extra, "--out", str(out)])
                (plain if name == "plain" else watched).append(seconds)
                if name == "watched":
                    shares.append(json.loads((out / "result.json").read_text())["evaluation"])
    t_plain, t_watched = statistics.median(plain), statistics.median(watched)
    last = shares[-1]
    print(
        f"pretrain --init char, {args.n} samples, {args.steps} steps, batch 32, 64 tokens, "
        f"torch threads {args.threads}, median of {args.rounds} alternating rounds"
    )
    print(f"{'run':<44} {'seconds':>8} {'ratio':>6}")
    print(f"{'unwatched':<44} {t_plain:8.1f} {1.0:6.2f}")
    print(f"{f'watched: --eval-every {args.eval_every} --keep-best':<44} {t_watched:8.1f} {t_watched / t_plain:6.2f}")
    print(
        f"evaluations: {last['evaluations']} x {last['samples']} samples, {last['seconds']:.2f} s, "
        f"{statistics.median(s['share_of_training'] for s in shares):.1%} of the training time (median over rounds)"
    )


if __name__ == "__main__":
    main_bench()
