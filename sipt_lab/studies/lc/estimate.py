"""How long a study will take, from the throughput measured on its own data before it runs."""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from sipt_lab.studies.lc.config import LcTransferConfig

#: Optimiser steps the timing runs differ by (a 1-step run and a (1 + TIMED_STEPS)-step one).
TIMED_STEPS = 4
#: Samples the timing embeds.
TIMED_SAMPLES = 64


def arms_per_seed(config: LcTransferConfig) -> int:
    """Trained arms of one seed: LM-only, SIPT per level, the geometry arm, the natural graph's."""
    natural = config.edges is not None or config.natural_graph is not None
    return 1 + len(config.levels) + int(config.geometry_arm) + int(natural) + int(config.per_sample_arm is not None)


def estimated_seconds(config: LcTransferConfig, step_seconds: float, sample_seconds: float) -> float:
    """Wall seconds of ``config``'s study at ``step_seconds`` per training step (pre-training, head
    warm-up and fine-tuning steps alike) and ``sample_seconds`` per embedded sample: per replicate
    (seed x split seed), every trained arm's steps and the never-seen samples it embeds (the init's
    too), one head warm-up, the init's and LM-only's pre-training embeddings (the labels-direct
    arms), and the fine-tuning passes of every arm and the init."""
    never_seen = config.n_train + config.n_validation + config.n_test
    arms = arms_per_seed(config)
    finetune_steps = config.finetune_epochs * -(-config.n_train // config.train.batch_size)
    per_replicate = (
        arms * config.train.steps + config.train.head_warmup + (arms + 1) * finetune_steps
    ) * step_seconds + ((arms + 1) * never_seen + 2 * config.n_pretrain) * sample_seconds
    return config.seeds * len(config.split_seeds) * per_replicate


def measure_throughput(config: LcTransferConfig, texts: list[str], source) -> tuple[float, float]:
    """``(seconds per training step, seconds per embedded sample)`` of a short SIPT run of
    ``config.train`` on up to ``TIMED_SAMPLES`` of ``texts``, taken evenly through them (its dial
    graph at the top level)."""
    from sipt_lab.studies.lc.dial import dial_graph
    from sipt_lab.training import embed, pretrain

    n = max(TIMED_SAMPLES, config.train.batch_size)
    sample = texts[:: max(1, len(texts) // n)][:n]  # spread over the texts: they may come ordered by class
    labels = np.arange(len(sample)) % 2
    graph = dial_graph(labels, 1.0, np.random.default_rng(0))
    timing = []
    for steps in (1, 1, 1 + TIMED_STEPS):  # the first run pays one-off loading, the next two differ by the steps
        train = dataclasses.replace(config.train, steps=steps, head_warmup=0, eval_every=None, keep_best=None)
        start = time.perf_counter()
        result = pretrain(sample, graph, train, source)
        timing.append(time.perf_counter() - start)
    start = time.perf_counter()
    embed(result.encoder, result.tokenizer, sample, device=config.train.device)
    return (timing[2] - timing[1]) / TIMED_STEPS, (time.perf_counter() - start) / len(sample)


def estimate_line(config: LcTransferConfig, texts: list[str], source) -> str:
    """One line: the study's estimated wall time from :func:`measure_throughput` on ``texts``."""
    step, sample = measure_throughput(config, texts, source)
    seconds = estimated_seconds(config, max(step, 0.0), sample)
    return (
        f"estimated time: {seconds / 60:.1f} min ({config.seeds} seeds x {len(config.split_seeds)} split seeds x "
        f"{arms_per_seed(config)} trained arms of "
        f"{config.train.steps} steps; measured {step * 1e3:.0f} ms per training step and "
        f"{sample * 1e3:.1f} ms per embedded sample on device {config.train.device})"
    )
