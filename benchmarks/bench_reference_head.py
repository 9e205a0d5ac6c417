"""The MLM head a default ``pretrain`` from MiniLM uses, on each language's held-out sentences, beside
a head fitted on those sentences and a head fitted on another language.

Data, per language of the offline vital articles (``en``, ``fr``;
:func:`sipt_lab.data.corpus.wiki_articles`): the sentences (:func:`~sipt_lab.data.corpus.split_sentences`)
of random articles (seed 0) split by article into a run's samples and held-out sentences,
``--samples`` of each. Heads, each on MiniLM with the encoder frozen, at the ``pretrain`` defaults
(100 warm-up steps at 1e-2, batch 32), each fitted by
:func:`~sipt_lab.training.own_head.fit_head_on_states` (the warm-up a default ``pretrain`` runs):

* ``run's samples (the default)``: fitted on the run's samples of that language;
* ``held-out sentences themselves``: fitted on the held-out sentences it is scored on (the best a
  head of this fit does on them);
* ``English samples``: fitted on the English run's samples, what every run used when the head was
  fitted once on a fixed English corpus;
* ``unfitted``: the head as loaded (random dense layer), for scale.

Score: the mean masked-LM cross-entropy (nats per masked token) over one pass of the held-out
sentences in batches of 32, with masks from another seed (the defaults' 15 % BERT masking).
Run: ``python benchmarks/bench_reference_head.py [--samples N] [--languages en fr] [--max-length L]``;
``--json PATH`` also writes the table as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from sipt_lab.data.corpus import split_sentences, wiki_articles
from sipt_lab.models import encoder_source
from sipt_lab.objectives import build_objectives
from sipt_lab.objectives.mlm import masked_lm_loss
from sipt_lab.training.defaults import init_kind, train_config
from sipt_lab.training.inputs import encoder_inputs
from sipt_lab.training.own_head import fit_head_on_states, masked_states, masking_sampler
from sipt_lab.training.step import RunLoss

#: The seed of the scoring masks (the fits use seed 0).
SCORE_SEED = 12345
HEADS = ("run's samples (the default)", "held-out sentences themselves", "English samples", "unfitted")


def language_sentences(language: str, n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``n`` sentences of whole random articles of ``language`` and ``n`` held-out ones of other articles."""
    articles = wiki_articles(language)
    parts: list[list[str]] = [[], []]
    for index in np.random.default_rng(seed).permutation(len(articles)):
        part = parts[0] if len(parts[0]) < n else parts[1]
        part += [s for s in split_sentences(articles[index]["extract"] or "") if len(s.split()) >= 4]
        if len(parts[1]) >= n:
            break
    return parts[0][:n], parts[1][:n]


class Frozen:
    """MiniLM's frozen states of some sentences and the run's loss over them (one tokenizer per length)."""

    def __init__(self, texts: list[str], config) -> None:
        self.source = encoder_source("minilm")
        self.config = config
        self.texts = texts
        self.tokenizer = self.source.tokenizer(texts, config.max_len)
        mlm = [(1.0, objective) for _, objective in build_objectives(0.0, config.loss, config.loss_params)]
        self.loss = RunLoss(encoder_inputs(self.tokenizer, texts, torch.device("cpu")), None, mlm, torch.device("cpu"))

    def model(self):
        torch.manual_seed(self.config.seed)
        return self.source.encoder(self.tokenizer)[0]

    def sampler(self, seed: int):
        return masking_sampler(self.tokenizer, self.texts, self.loss.lengths, self.config.batch_size, self.config, seed)

    def fit(self) -> tuple[list[torch.Tensor], float]:
        """The head :func:`fit_head_on_states` fits on these sentences, and its seconds."""
        model = self.model()
        began = time.perf_counter()
        fit_head_on_states(model, model.new_head_parameters(), self.loss, self.sampler(self.config.seed), self.config)
        return [p.detach().clone() for p in model.new_head_parameters()], time.perf_counter() - began

    def score(self, head: list[torch.Tensor] | None) -> float:
        """The MLM loss of ``head`` (None: as loaded) on these sentences (their states encoded once)."""
        if not hasattr(self, "_scoring"):
            model = self.model()
            sampler = self.sampler(SCORE_SEED)
            loaded = [p.detach().clone() for p in model.new_head_parameters()]
            self._scoring = model, loaded, masked_states(model, self.loss, sampler, sampler.steps_per_epoch)
        model, loaded, pairs = self._scoring
        with torch.no_grad():
            for parameter, value in zip(model.new_head_parameters(), head or loaded, strict=True):
                parameter.copy_(value)
            return float(np.mean([float(masked_lm_loss(model.head_logits(s), t)) for s, t in pairs]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--languages", nargs="+", default=["en", "fr"])
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--json", type=Path, help="also write the table here")
    args = parser.parse_args()
    config = train_config(init_kind("minilm"), device="cpu", max_len=args.max_length)
    runs, held = {}, {}
    for language in dict.fromkeys(["en", *args.languages]):
        samples, heldout = language_sentences(language, args.samples)
        runs[language], held[language] = Frozen(samples, config), Frozen(heldout, config)
    fitted = {language: run.fit() for language, run in runs.items()}
    rows = []
    for language in args.languages:
        own, seconds = fitted[language]
        heads = {HEADS[0]: own, HEADS[1]: held[language].fit()[0], HEADS[2]: fitted["en"][0], HEADS[3]: None}
        for name, head in heads.items():
            rows.append({"language": language, "head": name, "mlm_loss": held[language].score(head)})
        rows[-4]["fit_seconds"] = seconds
    print(
        f"MiniLM, encoder frozen, {args.samples} run samples and {args.samples} held-out sentences per language, "
        f"max length {args.max_length}; load average {os.getloadavg()[0]:.1f}"
    )
    print("| language | head | MLM loss on held-out sentences | fit s |\n|---|---|---|---|")
    for row in rows:
        seconds = f"{row['fit_seconds']:.1f}" if "fit_seconds" in row else ""
        print(f"| {row['language']} | {row['head']} | {row['mlm_loss']:.3f} | {seconds} |")
    if args.json:
        args.json.write_text(
            json.dumps({"samples": args.samples, "max_length": args.max_length, "heads": HEADS, "rows": rows}, indent=1)
            + "\n"
        )


if __name__ == "__main__":
    main()
