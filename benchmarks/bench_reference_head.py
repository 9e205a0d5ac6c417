"""The MLM head ``pretrain`` ships for MiniLM (fitted on the reference corpus) against one fitted on a
run's own samples, as ``pretrain`` fitted it before: the MLM loss each gives on those samples.

Data: ``--samples`` (default 1,000) sentences of whole random default-corpus articles, drawn as
``bench_first_run.py`` draws them (seed 0); most of them are not in the reference corpus. Heads, each
on MiniLM with the encoder frozen, at the ``pretrain`` defaults:

* ``shipped``: the package's head (:mod:`sipt_lab.training.reference_head`);
* ``own samples``: the warm-up ``pretrain`` ran before, 100 steps over batches of the samples
  themselves (seed 0), so it is scored on the sentences it was fitted on;
* ``unfitted``: the head as loaded (random dense layer), for scale.

Score: the mean masked-LM cross-entropy (nats per masked token) over one pass of the samples in
batches of 32, with masks drawn from another seed (the defaults' 15 % BERT masking), in eval mode.
Run: ``python benchmarks/bench_reference_head.py [--samples N]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import torch
from bench_first_run import write_articles

from sipt_lab.data.samples import read_samples
from sipt_lab.models import encoder_source
from sipt_lab.objectives import build_objectives
from sipt_lab.training.defaults import init_kind, train_config
from sipt_lab.training.head_warmups import HeadWarmups
from sipt_lab.training.inputs import encoder_inputs
from sipt_lab.training.loop import fit_heads
from sipt_lab.training.reference_head import masking_sampler, reference_head_key
from sipt_lab.training.step import ModelStep, RunLoss

#: The seed of the scoring masks (the warm-ups use seed 0).
SCORE_SEED = 12345


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        texts = list(read_samples(write_articles(args.samples, Path(tmp))[0]).texts)
    config = train_config(init_kind("minilm"), device="cpu")
    source = encoder_source("minilm")
    tokenizer = source.tokenizer(texts, config.max_len)
    inputs = encoder_inputs(tokenizer, texts, torch.device("cpu"))
    mlm = [(1.0, objective) for _, objective in build_objectives(0.0, config.loss, config.loss_params)]

    def sampler(seed: int):
        return masking_sampler(tokenizer, texts, inputs.lengths, config.batch_size, config, seed)

    def model_and_step():
        torch.manual_seed(config.seed)
        model, _ = source.encoder(tokenizer)
        return model, ModelStep(model, RunLoss(inputs, None, mlm, torch.device("cpu")))

    def score(step: ModelStep) -> float:
        step.eval()
        batches = sampler(SCORE_SEED)
        with torch.no_grad():
            losses = [float(step([batches.batch(k)])[1][0][0]) for k in range(-(-len(texts) // config.batch_size))]
        return sum(losses) / len(losses)

    rows = []
    model, step = model_and_step()
    rows.append(("unfitted", score(step), 0.0))
    model, step = model_and_step()
    key = reference_head_key(config, source.describe())
    HeadWarmups(reference=True).warm_up(key, model.new_head_parameters(), _refuse, [], draws_run_rng=False)
    rows.append(("shipped (reference corpus)", score(step), 0.0))
    model, step = model_and_step()
    began = time.perf_counter()
    fit_heads(model.new_head_parameters(), step, sampler(config.seed), config, "new MLM head")
    rows.append(("own samples (as pretrain fitted it before)", score(step), time.perf_counter() - began))
    print(f"{len(texts):,} samples, MiniLM, encoder frozen; load average {os.getloadavg()[0]:.1f}")
    print(f"{'head':<44} {'MLM loss':>9} {'fit s':>7}")
    for name, loss, seconds in rows:
        print(f"{name:<44} {loss:>9.3f} {seconds:>7.1f}")


def _refuse() -> str:
    raise SystemExit("the shipped head is missing: run benchmarks/ship_default_head.py")


if __name__ == "__main__":
    main()
