"""Pre-training throughput of the real domains' ``full`` presets on one CUDA GPU, bf16 against fp32.

Run as ``python benchmarks/bench_gpu.py [--steps 10] [--domains proteins abstracts networks wiki]``
on a machine whose torch sees a GPU.

A step's cost does not depend on the weights' values, so each encoder is built at the paper's size
with random weights and saved as a Hugging Face directory (the checkpoints themselves cannot be
downloaded here), and the samples are random of the paper's lengths:

* ``proteins``: a 12-layer, 768-wide, 12-head ESM (TAPE's BERT has that shape) over ESM-2's 33
  tokens, sequences of 600 random residues (cut to 512 tokens);
* ``abstracts``: BERT-base (SciBERT's shape) with BERT's uncased vocabulary (all-MiniLM-L6-v2's),
  texts of 600 random vocabulary words (cut to 512 tokens);
* ``networks``: the paper's GIN (hidden 300, 5 layers) over ego-network-like graphs of 10 to 40
  nodes (``bench_gin.ego_graphs``);
* ``wiki``: the real all-MiniLM-L6-v2 (``--init minilm``) at its ``full`` preset (batch 64, 128 tokens, 2,000 steps).

``G_PT`` is random with mean degree ~5; the training config is the domain's preset (batch 64 at 512
tokens, 1024 graphs, 64 at 128 tokens) with λ = 0.1 and sampled pairs (each seed with a neighbour
and a non-neighbour: up to 3 x batch samples encoded per step). Where the preset's batch does not
fit in the GPU's memory it is split into the fewest micro-batches that fit (``grad_accum``; the
same gradient for sampled pairs, whose losses are per seed). Per domain and precision, in one process: the step time ``(time of a (1 + N)-step run - time of a 1-step run) / N``, seeds per
second, the peak GPU memory, and the hours one run of the paper's corpus would take at that rate
(proteins ~1.5M sequences x 1 epoch, abstracts ~650K x 4, networks ~70K x 100; wiki: 2,000 steps).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models import encoder_source
from sipt_lab.models.graph_encoder import GINConfig, GraphInit
from sipt_lab.studies.domain.presets import preset_for
from sipt_lab.training import pretrain

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from hf_fakes import write_esm  # noqa: E402  (the tests' random ESM, here at TAPE BERT's size)

#: Paper corpus sizes and epochs (Methods, "Real-world datasets") for the projected run time.
PAPER_RUNS = {"proteins": (1_500_000, 1.0), "abstracts": (650_000, 4.0), "networks": (70_000, 100.0)}


def bert_base_checkpoint(directory: Path, vocab_file: Path) -> Path:
    """A random BERT-base (12 x 768) with the vocabulary in ``vocab_file``."""
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    directory.mkdir(parents=True)
    BertTokenizerFast(str(vocab_file)).save_pretrained(directory)
    BertForMaskedLM(BertConfig(vocab_size=len(vocab_file.read_text().splitlines()))).save_pretrained(directory)
    return directory


def random_graph(n: int, seed: int = 0) -> PretrainingGraph:
    rng = np.random.default_rng(seed)
    return PretrainingGraph.from_edges(rng.integers(0, n, 5 * n // 2), rng.integers(0, n, 5 * n // 2), n)


def domain_inputs(domain: str, n: int, workdir: Path):
    """``(samples, encoder source, encoder name, preset name)`` of ``domain``: ``n`` random samples and its encoder."""
    from sipt_lab.models.hf_checkpoints import named_checkpoint

    rng = np.random.default_rng(0)
    if domain == "proteins":
        residues = np.array(list("LAGVSERTIDPKQNFYMHWC"))
        esm = write_esm(
            workdir / "esm", hidden=768, layers=12, heads=12, ffn=3072, positions=1026, dropout=0.1
        )  # TAPE BERT's
        return (
            ["".join(rng.choice(residues, 600)) for _ in range(n)],
            encoder_source(str(esm)),
            "ESM 12x768, random",
            "full",
        )
    if domain == "abstracts":
        vocab_file = named_checkpoint("minilm") / "vocab.txt"
        words = [w for w in vocab_file.read_text().splitlines() if w.isalpha()]
        texts = [" ".join(rng.choice(words, 600)) for _ in range(n)]
        return (
            texts,
            encoder_source(str(bert_base_checkpoint(workdir / "bert-base", vocab_file))),
            "BERT-base, random",
            "full",
        )
    if domain == "networks":
        from bench_gin import N_CODES, ego_graphs

        return ego_graphs(n), GraphInit(GINConfig(n_values=N_CODES)), "GIN 300x5", "full"
    words = [w for w in (named_checkpoint("minilm") / "vocab.txt").read_text().splitlines() if w.isalpha()]
    return [" ".join(rng.choice(words, 40)) for _ in range(n)], encoder_source("minilm"), "all-MiniLM-L6-v2", "full"


def timed_run(samples, graph, config, source) -> float:
    """Wall seconds of ``pretrain`` (it returns once its loss history is on the host: no pending GPU work)."""
    start = time.perf_counter()
    pretrain(samples, graph, config, source)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--domains",
        nargs="+",
        default=["proteins", "abstracts", "networks", "wiki"],
        choices=["proteins", "abstracts", "networks", "wiki"],
    )
    parser.add_argument("--steps", type=int, default=10, help="timed steps N per run (default 10)")
    parser.add_argument("--device", default="cuda", help="cuda (default), or cpu for a slow check of the script")
    parser.add_argument(
        "--rounds", type=int, default=2, help="interleaved rounds per precision; medians reported (default 2)"
    )
    args = parser.parse_args()
    on_gpu = args.device == "cuda"
    if on_gpu and not torch.cuda.is_available():
        parser.error("torch sees no CUDA GPU; run this on a GPU machine (or pass --device cpu for a slow check)")
    if args.steps < 1 or args.rounds < 1:
        parser.error("--steps and --rounds must be at least 1")
    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32 in the reference rows
    print(
        f"{torch.cuda.get_device_name() if on_gpu else 'CPU'}, torch {torch.__version__}, {args.steps} timed steps, median of {args.rounds} rounds"
    )
    print(
        "| domain | encoder | seeds per micro-batch x micro-batches x tokens | precision | step ms | seeds/s | peak GPU GiB | paper run (h) | bf16 speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for domain in args.domains:
            samples, source, encoder_name, preset_name = domain_inputs(domain, 4096, Path(tmp) / domain)
            preset = preset_for(domain, preset_name).pretrain
            graph = random_graph(len(samples))
            step_ms = {}
            for precision in ("fp32", "bf16"):
                config, step_ms[precision], peak = fitting_run(samples, graph, source, preset, args, precision)
                if config is None:
                    print(
                        f"| {domain} | {encoder_name} | {preset.batch_size} x {preset.max_len or 'graph'} | {precision} | "
                        f"out of memory at every micro-batch | | | | |",
                        flush=True,
                    )
                    continue
                corpus, epochs = PAPER_RUNS.get(domain, (2000 * preset.batch_size, 1.0))
                hours = corpus * epochs / preset.batch_size * step_ms[precision] / 1000 / 3600
                batch = (
                    f"{config.batch_size}" if config.grad_accum == 1 else f"{config.batch_size} x {config.grad_accum}"
                )
                speedup = (
                    f"{step_ms['fp32'] / step_ms[precision]:.2f}x" if precision == "bf16" and "fp32" in step_ms else ""
                )
                print(
                    f"| {domain} | {encoder_name} | {batch} x {config.max_len or 'graph'} | {precision} | {step_ms[precision]:.1f} | "
                    f"{preset.batch_size / step_ms[precision] * 1000:.0f} | {peak:.2f} | {hours:.1f} | {speedup} |",
                    flush=True,
                )


def fitting_run(samples, graph, source, preset, args, precision: str):
    """``(config, step ms, peak GPU GiB)`` at the preset's batch, split into the fewest
    micro-batches (``grad_accum``) that fit in memory; ``(None, None, None)`` if none does."""
    accum = 1
    while accum <= preset.batch_size:
        config = dataclasses.replace(
            preset,
            lambda_si=0.1,
            device=args.device,
            precision=precision,
            checkpoint_every=0,
            log_every=1000,
            batch_size=preset.batch_size // accum,
            grad_accum=accum,
        )
        try:
            pretrain(samples, graph, dataclasses.replace(config, steps=2), source)  # warm-up
            if args.device == "cuda":
                torch.cuda.reset_peak_memory_stats()
            times = []
            for _ in range(args.rounds):
                one = timed_run(samples, graph, dataclasses.replace(config, steps=1), source)
                many = timed_run(samples, graph, dataclasses.replace(config, steps=1 + args.steps), source)
                times.append((many - one) / args.steps)
        except torch.OutOfMemoryError:
            gc.collect()
            torch.cuda.empty_cache()
            accum *= 2
            continue
        peak = torch.cuda.max_memory_allocated() / 2**30 if args.device == "cuda" else float("nan")
        return config, 1000 * float(np.median(times)), peak
    return None, None, None


if __name__ == "__main__":
    main()
