"""Training throughput: sipt-lab's trainer step vs a plain Hugging Face ``BertForMaskedLM`` loop.

Both models are configured alike: the same sizes (hidden, layers, heads, FFN, vocabulary, 512
positions), the same dropout (``hidden_dropout_prob`` = our ``dropout``,
``attention_probs_dropout_prob`` = our ``attention_dropout``), HF's fastest attention
(``attn_implementation="sdpa"``) and the same AdamW settings. They train on the same batches of
real sentences from the default corpus (:func:`sipt_lab.data.corpus.load_corpus`, truncated at 512
tokens): the seeds of :class:`GraphBatchSampler` with the same MLM masks. The HF loop gets its
masked, padded tensors ready-made (prepared before timing); ours gets the sampler's
:class:`PretrainBatch` and does its own gathering, masking and length bucketing inside the step.

Rows: "LM" is our λ=0 step (the same work as the HF loop); "SIPT" is our λ=0.1 step, which also
encodes each seed's positive and negative (the distinct samples of the batch, up to 3B) and
computes the contrastive loss, so it is compared with HF's LM step only for scale. Each figure is
the median over several rounds, the runners interleaved round by round so that background load
hits them alike. ``--ablation`` times our LM step with one optimisation turned off at a time.

Needs ``pip install transformers`` (benchmark-only dependency). Run:
``python benchmarks/bench_training.py [--quick] [--ablation] [--threads N]``.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from sipt_lab.data.corpus import load_corpus
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models import PAD_ID, CharTokenizer, encoder_preset
from sipt_lab.models.encoder import TransformerEncoder
from sipt_lab.objectives import build_objectives
from sipt_lab.training.sampler import GraphBatchSampler
from sipt_lab.training.step import ModelStep, RunLoss, make_optimizer, train_step

N_SAMPLES = 4000
MAX_LEN = 512
LR, WEIGHT_DECAY = 3e-4, 0.01


class UntrimmedEncoder(TransformerEncoder):
    """Ablation: the last layer computed at every position, logits then read at the masked ones."""

    def embed(self, input_ids):
        return self.hidden_states(input_ids)[:, 0]

    def embed_and_masked_logits(self, input_ids, positions):
        states = self.hidden_states(input_ids)
        return states[:, 0], self.mlm_decoder(self.mlm_transform(states.reshape(-1, states.shape[-1])[positions]))


class Ours:
    """Our trainer's step (``RunLoss`` in a ``ModelStep`` + the trainer's optimiser) on precomputed sampler batches."""

    # fused=True is what RESULTS.md's rows measured; the trainer itself fuses on CUDA only (the
    # "for-loop AdamW" ablation row is its CPU step).
    def __init__(self, setup, preset, lambda_si, dropouts, *, fused=True, max_buckets=None, trim_last_layer=True):
        config = encoder_preset(preset, vocab_size=setup.tokenizer.vocab_size, max_len=MAX_LEN, **dropouts)
        torch.manual_seed(0)
        model = (TransformerEncoder if trim_last_layer else UntrimmedEncoder)(config)
        buckets = {} if max_buckets is None else {"max_buckets": max_buckets}
        step_fn = RunLoss(
            torch.as_tensor(setup.ids), setup.lengths, build_objectives(lambda_si), torch.device("cpu"), **buckets
        )
        self.replica = ModelStep(model, step_fn).train()
        self.optimizer = make_optimizer(self.replica.parameters(), LR, WEIGHT_DECAY, fused=fused)
        self.scaler = torch.amp.GradScaler("cpu", enabled=False)
        self.batches = setup.batches

    def run(self, steps: range) -> None:
        for step in steps:
            train_step(self.replica, self.optimizer, self.scaler, [[self.batches[step]]])


class HuggingFace:
    """A plain loop over ``BertForMaskedLM``: forward with labels, backward, ``AdamW.step``."""

    def __init__(self, setup, preset, dropouts, fused=False):
        from transformers import BertConfig, BertForMaskedLM

        size = encoder_preset(preset, **dropouts)
        config = BertConfig(
            vocab_size=setup.tokenizer.vocab_size,
            hidden_size=size.hidden,
            num_hidden_layers=size.n_layers,
            num_attention_heads=size.n_heads,
            intermediate_size=size.ffn,
            max_position_embeddings=MAX_LEN,
            hidden_dropout_prob=size.dropout,
            attention_probs_dropout_prob=size.attention_dropout,
            pad_token_id=PAD_ID,
            attn_implementation="sdpa",
        )
        torch.manual_seed(0)
        self.model = BertForMaskedLM(config).train()
        assert self.model.config._attn_implementation == "sdpa"
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY, fused=fused)
        self.tensors = [self.prepare(setup, batch) for batch in setup.batches]

    @staticmethod
    def prepare(setup, batch):
        """The same seeds and masked inputs as ours, padded to the longest seed."""
        seeds = batch.nodes[: batch.n_seeds]
        inputs = torch.as_tensor(setup.ids[seeds, : setup.lengths[seeds].max()])
        mask = torch.as_tensor(batch.mask)
        labels = torch.where(mask, inputs, torch.full_like(inputs, -100))
        return inputs.masked_fill(mask, setup.tokenizer.mask_id), (inputs != setup.tokenizer.pad_id).long(), labels

    def run(self, steps: range) -> None:
        for step in steps:
            input_ids, attention_mask, labels = self.tensors[step]
            loss = self.model(input_ids=input_ids, attention_mask=attention_mask, labels=labels).loss
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            self.optimizer.step()


class Setup:
    """Real corpus sentences, a random label-clique graph over them, and the sampler's batches."""

    def __init__(self, batch_size: int, n_steps: int, seed: int = 0):
        rng = np.random.default_rng(seed)
        corpus = load_corpus().sentences
        sentences = [corpus[i] for i in rng.choice(len(corpus), N_SAMPLES, replace=False)]
        self.tokenizer = CharTokenizer.build(corpus, max_len=MAX_LEN)
        self.ids, self.lengths = self.tokenizer.encode(sentences)
        graph = PretrainingGraph.from_groups(rng.integers(0, 20, N_SAMPLES))
        sampler = GraphBatchSampler(graph, self.lengths, batch_size, seed=seed)
        self.batches = [sampler.batch(step) for step in range(n_steps)]
        seeds = [b.nodes[: b.n_seeds] for b in self.batches]
        self.real_fraction = np.mean([self.lengths[s].sum() / (len(s) * self.lengths[s].max()) for s in seeds])


def time_interleaved(runners: dict, steps_per_round: int, rounds: int, warmup: int = 2) -> dict[str, float]:
    """Median seconds per step of each runner; runners alternate round by round (each on the same steps)."""
    for runner in runners.values():
        runner.run(range(warmup))
    times = {name: [] for name in runners}
    for r in range(rounds):
        steps = range(warmup + r * steps_per_round, warmup + (r + 1) * steps_per_round)
        for name, runner in runners.items():
            start = time.perf_counter()
            runner.run(steps)
            times[name].append((time.perf_counter() - start) / steps_per_round)
    return {name: float(np.median(t)) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds, no dropout-0.1 rows")
    parser.add_argument("--ablation", action="store_true", help="also time our LM step with each optimisation off")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads (default 2)")
    parser.add_argument(
        "--rounds", type=int, default=None, help="interleaved rounds per case (default 5, 3 with --quick)"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rounds = args.rounds or (3 if args.quick else 5)
    steps_per_round = {"paper-small": 10, "default": 5, "paper-manifolds": 2}
    dropout_settings = [{"dropout": 0.0, "attention_dropout": 0.0}]
    if not args.quick:
        dropout_settings.append({"dropout": 0.0, "attention_dropout": 0.1})

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} intra-op threads, CPU, load average {load:.1f}, "
        f"median of {rounds} interleaved rounds"
    )
    header = f"{'preset':<24}{'B':>4}{'drop/attn':>10}{'real tok':>9} | {'ours LM':>8} {'HF LM':>8} {'LM/HF':>6} | {'ours SIPT':>9} {'SIPT/HF':>7}"
    print(header)
    print("-" * len(header))
    ablation_rows = []
    for preset in steps_per_round:
        size = encoder_preset(preset)
        for batch_size in (32, 64):
            n = steps_per_round[preset]
            setup = Setup(batch_size, 2 + rounds * n)
            for dropouts in dropout_settings:
                runners = {
                    "ours LM": Ours(setup, preset, 0.0, dropouts),
                    "HF LM": HuggingFace(setup, preset, dropouts),
                    "ours SIPT": Ours(setup, preset, 0.1, dropouts),
                }
                if args.ablation and dropouts["attention_dropout"] == 0.0:
                    runners |= {
                        "no bucketing": Ours(setup, preset, 0.0, dropouts, max_buckets=1),
                        "no last-layer trim": Ours(setup, preset, 0.0, dropouts, trim_last_layer=False),
                        "for-loop AdamW": Ours(setup, preset, 0.0, dropouts, fused=False),
                        "none of them": Ours(
                            setup, preset, 0.0, dropouts, fused=False, max_buckets=1, trim_last_layer=False
                        ),
                        "HF + fused AdamW": HuggingFace(setup, preset, dropouts, fused=True),
                    }
                t = time_interleaved(runners, n, rounds)
                name = f"{preset} {size.n_layers}L/{size.hidden}H"
                drop = f"{dropouts['dropout']:g}/{dropouts['attention_dropout']:g}"
                print(
                    f"{name:<24}{batch_size:>4}{drop:>10}{setup.real_fraction:>9.0%} | {1 / t['ours LM']:8.2f} {1 / t['HF LM']:8.2f} "
                    f"{t['HF LM'] / t['ours LM']:5.2f}x | {1 / t['ours SIPT']:9.2f} {t['HF LM'] / t['ours SIPT']:6.2f}x",
                    flush=True,
                )
                if len(t) > 3:
                    ablation_rows.append((name, batch_size, t))
    print(
        "figures: steps/s (B seeds per step); ratio = HF seconds per step / ours (>1: ours faster); "
        "real tok = share of real (non-padding) tokens when padding every seed to the batch's longest"
    )
    if ablation_rows:
        names = list(ablation_rows[0][2])[3:]
        print(
            "\nablation, our LM step (dropout 0/0) with one optimisation off, and HF with fused AdamW: "
            "steps/s (its time per step / our all-on step's; >1: slower than ours)"
        )
        print(f"{'preset':<24}{'B':>4} | {'all on':>8} | " + " | ".join(f"{n:>22}" for n in names))
        for name, batch_size, t in ablation_rows:
            cells = " | ".join(f"{1 / t[n]:8.2f} ({t[n] / t['ours LM']:5.2f}x)      " for n in names)
            print(f"{name:<24}{batch_size:>4} | {1 / t['ours LM']:8.2f} | {cells}")


if __name__ == "__main__":
    main()
