"""A new user's first ``sipt-lab pretrain`` from MiniLM, beside ``SentenceTransformer.fit`` on the same pairs.

Each row is one command as a user runs it, in a fresh process, timed from start to exit (imports,
loading the checkpoint, tokenising, the head warm-up when it runs, training, writing the model), in
wall seconds and in CPU seconds (its threads summed: on a shared machine the steadier figure; on an
idle one with both cores busy, the wall time is about half of it):

* ``sipt-lab pretrain --samples S --edges E --out DIR`` with every default (MiniLM, one pass over
  the samples, batch 32) and an empty cache: a user's first run. Its new MLM head is fitted on the
  frozen token states of its samples, encoded once (:mod:`sipt_lab.training.own_head`);
* with ``--fit-head``, also the next run on the same samples, which loads that head from the cache;
* a script that loads the same checkpoint with ``SentenceTransformer(path)``, calls ``fit`` with
  ``MultipleNegativesRankingLoss`` for one epoch at batch 32 over one ``(sample, neighbour)`` pair
  per sample that has a neighbour (the pairs of one pass of ours: each of its seeds has one
  positive), and saves the model.

Data: ``--sizes`` (default 40 and 1,000) sentences of random default-corpus articles
(:func:`sipt_lab.data.corpus.load_corpus`, seed 0) with at least 2 sentences, whole articles
until the size is reached; the graph links the sentences of an article (same-article cliques).
Goals: 40 sentences in at most 30 s and 1,000 in at most 3 minutes (wall, 2 cores); the load
average is printed before and after, since other work on the machine stretches every wall time.

Needs ``sentence-transformers`` with ``datasets`` and ``accelerate`` (``fit`` runs its trainer;
``pip install -e ".[bench]"``); only the ``fit`` process imports them, so they may come on its
``PYTHONPATH`` alone (``--st-path DIR``). Run: ``python benchmarks/bench_first_run.py [--sizes 40 1000]
[--fit-head] [--st-path DIR]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sipt_lab.core.fileio import CACHE_ENV
from sipt_lab.data.corpus import load_corpus
from sipt_lab.models.hf_checkpoints import named_checkpoint

ST_FIT = r"""
import sys
from sentence_transformers import InputExample, SentenceTransformer, losses
from torch.utils.data import DataLoader

path, pairs_file, out = sys.argv[1:]
lines = open(pairs_file, encoding="utf-8").read().splitlines()
model = SentenceTransformer(path, device="cpu")
loader = DataLoader([InputExample(texts=line.split("\t")) for line in lines], batch_size=32, shuffle=True)
model.fit(train_objectives=[(loader, losses.MultipleNegativesRankingLoss(model))], epochs=1, show_progress_bar=False)
model.save(out)
"""


def write_articles(n: int, directory: Path, seed: int = 0) -> tuple[Path, Path, Path]:
    """``n`` sentences of whole random articles as ``samples.tsv``, their same-article edges as
    ``edges.tsv``, and one ``(sentence, neighbour's sentence)`` pair per sentence as ``pairs.tsv``."""
    corpus = load_corpus()
    _, article, sizes = np.unique(np.asarray(corpus.titles), return_inverse=True, return_counts=True)
    rng = np.random.default_rng(seed)
    rows: list[int] = []
    for chosen in rng.permutation(np.flatnonzero(sizes >= 2)):
        rows += np.flatnonzero(article == chosen).tolist()
        if len(rows) >= n:
            break
    rows = rows[:n]
    groups: dict[int, list[int]] = {}
    for row in rows:
        groups.setdefault(int(article[row]), []).append(row)
    directory.mkdir(parents=True, exist_ok=True)
    samples, edges, pairs = directory / "samples.tsv", directory / "edges.tsv", directory / "pairs.tsv"
    samples.write_text("".join(f"s{row}\t{corpus.sentences[row]}\n" for row in rows), encoding="utf-8")
    edges.write_text(
        "".join(f"s{a}\ts{b}\n" for group in groups.values() for i, a in enumerate(group) for b in group[i + 1 :])
    )
    linked = [(row, groups[int(article[row])]) for row in rows if len(groups[int(article[row])]) > 1]
    partners = [(row, rng.choice([other for other in group if other != row])) for row, group in linked]
    pairs.write_text("".join(f"{corpus.sentences[a]}\t{corpus.sentences[b]}\n" for a, b in partners), encoding="utf-8")
    return samples, edges, pairs


def timed(command: list[str], env: dict) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, its threads summed) of ``command`` in a fresh
    process (it must succeed). On a shared machine the CPU seconds are the steadier figure: other
    tenants stretch the wall time, not the work."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


#: Wall-second goals of a default first run, by samples.
GOALS = {40: 30.0, 1000: 180.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[40, 1000])
    parser.add_argument("--fit-head", action="store_true", help="also time a second run, which loads the head")
    parser.add_argument("--st-path", help="a folder with datasets and accelerate, on the fit process's path alone")
    args = parser.parse_args()
    minilm = str(named_checkpoint("minilm"))
    rows = []
    path = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    started = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, CACHE_ENV: str(Path(tmp) / "cache"), "TOKENIZERS_PARALLELISM": "false"}
        for index, n in enumerate(args.sizes):
            samples, edges, pairs = write_articles(n, Path(tmp) / f"data{n}")
            n_edges, n_pairs = len(edges.read_text().splitlines()), len(pairs.read_text().splitlines())
            pretrain = [sys.executable, "-m", "sipt_lab.cli.main", "pretrain", "--samples", str(samples)]
            pretrain += ["--edges", str(edges), "--overwrite"]
            seconds = timed([*pretrain, "--out", str(Path(tmp) / f"first{n}")], env)
            rows.append(("sipt-lab pretrain, first run (fits its head)", n, n_edges, *seconds))
            if args.fit_head and index == 0:
                seconds = timed([*pretrain, "--out", str(Path(tmp) / f"cached{n}")], env)
                rows.append(("  next run (head cached)", n, n_edges, *seconds))
            st = [sys.executable, "-c", ST_FIT, minilm, str(pairs), str(Path(tmp) / f"st{n}")]
            st_env = env if args.st_path is None else {**env, "PYTHONPATH": os.pathsep.join([args.st_path, *path])}
            rows.append((f"SentenceTransformer.fit, MNRL, {n_pairs:,} pairs", n, n_edges, *timed(st, st_env)))
    load = os.getloadavg()[0]
    print(
        f"{os.cpu_count()} CPU cores, load average {started:.1f} at the start and {load:.1f} at the end; every row a fresh process"
    )
    print(f"{'command':<48} {'samples':>8} {'edges':>7} {'wall s':>8} {'CPU s':>8}  goal")
    for name, n, n_edges, wall, cpu in rows:
        goal = GOALS.get(n) if name.startswith("sipt-lab") else None
        verdict = "" if goal is None else f"  <= {goal:.0f} s: {'met' if wall <= goal else 'missed'}"
        print(f"{name:<48} {n:>8,} {n_edges:>7,} {wall:>8.1f} {cpu:>8.1f}{verdict}")


if __name__ == "__main__":
    main()
