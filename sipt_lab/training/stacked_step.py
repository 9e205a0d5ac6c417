"""K same-shaped character encoders trained as one :class:`Step`: :class:`StackedStep`.

On a CPU tiny models are overhead-bound, so K of them (one per run: its own data, seed and
``λ_SI``) train as one :class:`~sipt_lab.models.stacked.StackedEncoders` (weights stacked on a
model axis, batched matmuls) under one AdamW (elementwise, so each model's slice moves exactly as
its own optimiser would move it). Each run keeps its own :class:`RunLoss` (masking, replacement
codes, objectives and their weights), so run ``k`` computes the numbers a :class:`ModelStep` of
its encoder computes, up to float rounding.

Per micro-batch, run ``k``'s encoded rows and masked positions are padded to the largest run's
(extra rows are one [PAD] token long; extra positions read some row's [CLS]) and dropped before
its objectives; the objectives of all runs are computed together (:func:`_objective_terms`).
Supported objectives: the LM / SIPT ones (:class:`~sipt_lab.objectives.MaskedLM` with the
encoder's own decoder, :class:`~sipt_lab.objectives.StructureInducing`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import numpy as np
import torch

from sipt_lab.core.errors import SiptError
from sipt_lab.models.encoder import TransformerEncoder
from sipt_lab.models.stacked import MaskedHead, StackedEncoders
from sipt_lab.models.transfer import to_device
from sipt_lab.objectives import MaskedLM, StructureInducing, linear_masked_lm_loss
from sipt_lab.training.sampler import PretrainBatch
from sipt_lab.training.step import RunLoss, Step, replace_masked

#: The objectives a stacked step computes, in the order of a run's terms (``build_objectives``').
_TERM_KINDS = (MaskedLM, StructureInducing)

#: ``torch.compile`` options of each compiled way to run the stack (:data:`~sipt_lab.core.names.COMPILE_MODES`;
#: ``none``: eager): the encoders' device computation after the host-side packing
#: (:meth:`StackedEncoders._encode`, forward and backward) compiled, with CUDA graphs for
#: ``cudagraphs`` (a graph per input shape, replayed with one launch).
COMPILE_OPTIONS: dict[str, dict] = {"compile": {}, "cudagraphs": {"mode": "reduce-overhead"}}
#: A compiled stack pads each step's masked positions to a multiple of this, and gives every
#: attention bucket one query-grid width, a multiple of this too: fewer distinct shapes to compile
#: (and, with CUDA graphs, to record); the padding reads a row's [CLS] and is dropped.
COMPILED_READ_MULTIPLE = 16


class StackedStep(Step):
    """K same-shaped character encoders (``encoders[k]`` trains run ``k``, whose loss is
    ``runs[k]``) stacked as one module; :meth:`unstack` copies the trained weights back.

    A run without ``L_M`` (``λ_SI = 1``) never reads its MLM head: trained alone, its head gets no
    gradient and AdamW skips it, while its stacked slices get zero gradients, which AdamW would
    still decay; :meth:`frozen` restores those slices around the optimiser step.
    """

    def __init__(self, encoders: Sequence[TransformerEncoder], runs: Sequence[RunLoss], compile: str = "none") -> None:
        super().__init__(runs)
        if compile != "none" and compile not in COMPILE_OPTIONS:
            raise SiptError(f"unknown compile mode {compile!r}; choose one of none, {', '.join(COMPILE_OPTIONS)}")
        if compile == "cudagraphs" and self.device.type != "cuda":
            raise SiptError("compile mode cudagraphs needs a CUDA GPU; use compile or none on a CPU")
        for run in runs:
            if not all(
                isinstance(objective, StructureInducing)
                or (isinstance(objective, MaskedLM) and objective.vocab_size is None)
                for _, objective in run.objectives
            ):
                raise SiptError(
                    "batched training supports the LM and SIPT objectives (MLM, L_SI) only; train separately"
                )
        self.stacked = StackedEncoders.stack(encoders)
        headless = [k for k, run in enumerate(runs) if not run.needs_mlm]
        self._headless = torch.as_tensor(headless, dtype=torch.int64, device=self.device)
        self._idle = self.stacked.mlm_head_parameters() if headless else []
        self._cudagraphs = compile == "cudagraphs"
        if compile != "none":
            self.stacked.encode = torch.compile(self.stacked.encode, **COMPILE_OPTIONS[compile])
            self.stacked.read_multiple = self.stacked.query_multiple = COMPILED_READ_MULTIPLE

    def forward(self, batches: Sequence[PretrainBatch]) -> tuple[torch.Tensor, list[torch.Tensor]]:
        if self._cudagraphs:  # a new step: the graphs' previous outputs may be overwritten
            torch.compiler.cudagraph_mark_step_begin()
        return _losses(self.stacked, self.runs, batches, self.device)

    @contextlib.contextmanager
    def frozen(self) -> Iterator[None]:
        with torch.no_grad():
            kept = [parameter[self._headless] for parameter in self._idle]  # advanced indexing: a copy
        yield
        with torch.no_grad():
            for parameter, values in zip(self._idle, kept):
                parameter[self._headless] = values

    def unstack(self, encoders: Sequence[TransformerEncoder]) -> None:
        """Copy each model's trained weights into ``encoders[k]``."""
        self.stacked.unstack(encoders)


def _losses(
    stacked: StackedEncoders, steps: Sequence[RunLoss], batches: Sequence[PretrainBatch], device: torch.device
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """One micro-batch of every run through one stacked forward pass: ``(sum of the runs' losses,
    per run (1 + terms,) detached values)`` (:func:`_objective_terms`)."""
    layouts = [step.layout(batch) for step, batch in zip(steps, batches)]
    n_rows = max(len(nodes) for _, _, nodes, _, _ in layouts)
    width = max(int(step.lengths[nodes].max()) for step, (_, _, nodes, _, _) in zip(steps, layouts))
    ids = torch.zeros((len(steps), n_rows, width), dtype=torch.int64)  # built on the host, moved once
    lengths = np.ones((len(steps), n_rows), dtype=np.int64)
    mask = np.zeros(ids.shape, dtype=bool)
    replacement = np.zeros(ids.shape, dtype=np.int64)
    for k, (step, (_, _, nodes, run_mask, run_replacement)) in enumerate(zip(steps, layouts)):
        own = int(step.lengths[nodes].max())
        ids[k, : len(nodes), :own] = step.inputs.ids[torch.as_tensor(nodes), :own].cpu()
        lengths[k, : len(nodes)] = step.lengths[nodes]
        if step.needs_mlm:
            mask[k, : len(nodes), :own] = run_mask[:, :own]
            replacement[k, : len(nodes), :own] = run_replacement[:, :own]
    # every run's masking at once, in each run's own row-major order of its masked positions
    model, rows, columns = np.nonzero(mask)
    counts = np.bincount(model, minlength=len(steps))
    mask_ids = torch.as_tensor(np.array([step.mask_id for step in steps])[model])
    within = rows * width + columns  # flat index into the run's (n_rows, width) grid
    targets = replace_masked(
        ids,
        torch.as_tensor(model * n_rows * width + within),
        torch.as_tensor(replacement[model, rows, columns]),
        mask_ids,
    )
    ids, targets = to_device([ids, targets], device)
    targets = targets.split(counts.tolist())
    # the read grid's width rounded up to stacked.read_multiple: fewer distinct shapes to compile
    count = -(-int(counts.max(initial=0)) // stacked.read_multiple) * stacked.read_multiple
    # padding reads other rows' [CLS], spread over the rows (keeps the last layer's query grid narrow)
    flat = np.tile(np.arange(count) % n_rows * width, (len(steps), 1))
    flat[model, np.arange(len(model)) - np.repeat(np.cumsum(counts) - counts, counts)] = within
    with steps[0].autocast():
        embeddings, heads = stacked(ids, flat, lengths, counts.tolist())
        return _objective_terms(steps, batches, embeddings, heads, targets)


def _objective_terms(
    steps: Sequence[RunLoss],
    batches: Sequence[PretrainBatch],
    embeddings: torch.Tensor,
    heads: Sequence[MaskedHead],
    targets: Sequence[torch.Tensor],
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Every run's objectives on the stacked pass: ``(sum of the runs' losses, per run (1 + terms,)
    detached values)``, as :meth:`RunLoss.combine` gives them run by run. A term computed for several
    runs is computed for all of them at once (``L_SI``: :meth:`StructureInducing.per_run`; ``L_M``:
    one fused decoder + cross-entropy per run, over its own vocabulary, :func:`linear_masked_lm_loss`),
    so the objectives cost a few ops, not a few per run."""
    device = embeddings.device
    terms = torch.zeros((len(steps), len(_TERM_KINDS)), device=device)
    weights = torch.zeros_like(terms)
    total = terms.new_zeros(())
    for column, kind in enumerate(_TERM_KINDS):
        runs = [
            (k, weight, objective)
            for k, step in enumerate(steps)
            for weight, objective in step.objectives
            if isinstance(objective, kind)
        ]
        if not runs:
            continue
        index = [k for k, _, _ in runs]
        # host-made indices and weights moved in one asynchronous copy each (no wait for the GPU)
        (rows,) = to_device([np.array(index, dtype=np.int64)], device)
        (run_weights,) = to_device([np.array([weight for _, weight, _ in runs], dtype=np.float32)], device)
        if kind is MaskedLM:
            values = torch.stack([linear_masked_lm_loss(*heads[k], targets[k]) for k in index])
        else:
            values = runs[0][2].per_run(
                embeddings.index_select(0, rows),
                [batches[k].positive_pairs for k in index],
                [batches[k].negative_pairs for k in index],
            )
        total = total + (run_weights * values).sum()
        terms[rows, column] = values.detach().float()
        weights[rows, column] = run_weights
    table = torch.cat([(weights * terms).sum(1, keepdim=True), terms], 1)  # a run's absent terms are 0 and not kept
    columns = [[0] + [1 + _TERM_KINDS.index(type(objective)) for _, objective in step.objectives] for step in steps]
    picks = to_device([np.array(run_columns, dtype=np.int64) for run_columns in columns], device)
    return total, [row.index_select(0, pick) for row, pick in zip(table, picks)]
