"""K same-shaped character encoders trained as one :class:`Step`: :class:`StackedStep`.

On a CPU tiny models are overhead-bound, so K of them (one per run: its own data, seed and
``λ_SI``) train as one :class:`~sipt_lab.models.stacked.StackedEncoders` (weights stacked on a
model axis, batched matmuls) under one AdamW (elementwise, so each model's slice moves exactly as
its own optimiser would move it). Each run keeps its own :class:`RunLoss` (masking, replacement
codes, objectives and their weights), so run ``k`` computes the numbers a :class:`ModelStep` of
its encoder computes, up to float rounding.

Per micro-batch, run ``k``'s encoded rows and masked positions are padded to the largest run's
(extra rows are one [PAD] token long; extra positions read some row's [CLS]) and dropped before
its objectives; the objectives of all runs are computed together (:meth:`StackedStep.compute`).
Supported objectives: the LM / SIPT ones (:class:`~sipt_lab.objectives.MaskedLM` with the
encoder's own decoder, :class:`~sipt_lab.objectives.StructureInducing`).

A step is two halves: :meth:`StackedStep.prepare` builds every array the micro-batch needs on the
host (:class:`StackBatch`: masked ids, packing, targets, pairs) and :meth:`StackedStep.compute`
runs on the device from those arrays alone, with no host work or synchronisation. With ``compile``
``cudagraphs`` or ``compile`` the host half also fixes the shapes (rows padded to the longest
sample, counts rounded up, one attention bucket), so that a whole training has a few shapes: the
training loop records a whole optimiser step once per shape as a CUDA graph and replays it
(:mod:`sipt_lab.training.recorded_steps`; a tiny model's step is hundreds of kernel launches, which
the replay issues as one), and ``torch.compile`` compiles the encoders once per shape. With the
rows' own lengths, each step would have its own attention buckets (their number and widths), and
the compiled encoders would meet new shapes until ``torch.compile``'s recompilation limit, after
which new ones run eagerly beside the compiled ones.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from sipt_lab.core.errors import SiptError
from sipt_lab.models.encoder import TransformerEncoder
from sipt_lab.models.packing import BucketShape, PackingSpec
from sipt_lab.models.stacked import StackedEncoders
from sipt_lab.models.transfer import DeviceArrays, to_device
from sipt_lab.objectives import MaskedLM, StructureInducing, linear_masked_lm_loss
from sipt_lab.training.names import COMPILE_MODES
from sipt_lab.training.sampler import PretrainBatch
from sipt_lab.training.step import RunLoss, Step, replace_masked

#: The objectives a stacked step computes, in the order of a run's terms (``build_objectives``').
_TERM_KINDS = (MaskedLM, StructureInducing)

#: ``torch.compile`` options of each way to run the stack that compiles it (``none``: eager;
#: ``cudagraphs``: recorded, not compiled; :data:`~sipt_lab.training.names.COMPILE_MODES`): the encoders'
#: device computation after the host-side packing (:meth:`StackedEncoders._encode`, forward and backward).
COMPILE_OPTIONS: dict[str, dict] = {"compile": {}}
#: The ways to run the stack that fix its shapes (:class:`StackPreparer`'s ``fixed``).
FIXED_SHAPE_MODES = ("compile", "cudagraphs")
#: A fixed-shape stack rounds its rows, masked positions and pairs up to multiples of these, so
#: that a few shapes (each compiled or recorded once) cover a whole training.
RECORDED_MULTIPLES = {"rows": 16, "reads": 64, "pairs": 64}


@dataclass(frozen=True)
class StackLayout:
    """The static part of one micro-batch of a stack: what shapes the device half's tensors have
    (hashable: a recorded step is keyed by it). ``counts`` are the MLM rows of each model (its real
    masked positions, or all padded to one count in a fixed-shape stack); ``pair_sizes`` each run's
    ``(positive, negative)`` pairs of ``L_SI`` (None when fixed: the grouped loss needs no sizes)."""

    counts: tuple[int, ...]
    buckets: tuple[BucketShape, ...]
    pair_sizes: tuple[tuple[int, int], ...] | None
    fixed: bool = False  # the fixed shapes of a recorded stack: padded MLM targets (-1) and their real counts
    shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()  # every array's name and shape


@dataclass
class StackBatch:
    """One micro-batch of every run of a stack, on the host: ``arrays`` by name (``ids`` ``(K, B, L)``
    masked inputs, the packing's arrays, ``targets``, the pairs) and their :class:`StackLayout`."""

    arrays: dict[str, np.ndarray]
    layout: StackLayout

    def to(self, device: torch.device) -> StackTensors:
        return StackTensors(DeviceArrays(self.arrays, device), self.layout)


@dataclass
class StackTensors:
    """A :class:`StackBatch` on the device (``tensors`` refillable in place)."""

    tensors: DeviceArrays
    layout: StackLayout


class StackedStep(Step):
    """K same-shaped character encoders (``encoders[k]`` trains run ``k``, whose loss is
    ``runs[k]``) stacked as one module; :meth:`unstack` copies the trained weights back.

    A run without ``L_M`` (``λ_SI = 1``) never reads its MLM head: trained alone, its head gets no
    gradient and AdamW skips it, while its stacked slices get zero gradients, which AdamW would
    still decay; :meth:`frozen` restores those slices around the optimiser step.

    ``records_steps`` (``compile`` ``cudagraphs``) is True when the loop records each step as a CUDA
    graph (:class:`~sipt_lab.training.recorded_steps.RecordedSteps`); ``compile`` ``compile`` fixes
    the shapes too, and compiles the encoders once per shape.
    """

    def __init__(self, encoders: Sequence[TransformerEncoder], runs: Sequence[RunLoss], compile: str = "none") -> None:
        super().__init__(runs)
        if compile not in COMPILE_MODES:
            raise SiptError(f"unknown compile mode {compile!r}; choose one of {', '.join(COMPILE_MODES)}")
        unrecordable = _unrecordable(runs, self.device)
        if compile == "auto":
            compile = "none" if unrecordable else "cudagraphs"
        if compile == "cudagraphs" and unrecordable:
            raise SiptError(f"compile mode cudagraphs {unrecordable}")
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
        self._terms = _term_table(runs, self.device)
        columns = [[0] + [1 + _TERM_KINDS.index(type(objective)) for _, objective in run.objectives] for run in runs]
        self._picks = to_device([np.array(run_columns, dtype=np.int64) for run_columns in columns], self.device)
        if compile in COMPILE_OPTIONS:
            self.stacked.encode = torch.compile(self.stacked.encode, **COMPILE_OPTIONS[compile])
        self.preparer = StackPreparer(list(runs), self.stacked.packing_spec, compile in FIXED_SHAPE_MODES)
        self.records_steps = compile == "cudagraphs"

    def forward(self, batches: Sequence[PretrainBatch] | StackTensors) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """One micro-batch of each run, or its :meth:`prepare`'d arrays already on the device."""
        inputs = batches if isinstance(batches, StackTensors) else self.prepare(batches).to(self.device)
        return self.compute(inputs)

    def prepare(self, batches: Sequence[PretrainBatch]) -> StackBatch:
        """The host half of a step (:class:`StackPreparer`): every array :meth:`compute` reads."""
        return self.preparer(batches)

    def compute(self, inputs: StackTensors) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The device half of a step, from :meth:`prepare`'s arrays: ``(sum of the runs' losses, per
        run (1 + terms,) detached values)``, as :meth:`RunLoss.combine` gives them run by run. A
        term computed for several runs is computed for all of them at once (``L_SI``:
        :meth:`StructureInducing.per_run`; ``L_M``: one fused decoder + cross-entropy per run, over
        its own vocabulary, :func:`linear_masked_lm_loss`), so the objectives cost a few ops, not a
        few per run."""
        tensors, layout = inputs.tensors, inputs.layout
        packing = self.stacked.packing(tensors, layout.buckets)
        with self.runs[0].autocast():
            embeddings, heads = self.stacked.encode(tensors["ids"], packing, list(layout.counts))
            if layout.fixed:
                targets = [(row, count) for row, count in zip(tensors["targets"], tensors["mlm_counts"])]
            else:
                targets = [(part, None) for part in tensors["targets"].split(list(layout.counts))]
            terms = torch.zeros((len(self.runs), len(_TERM_KINDS)), device=self.device)
            weights = torch.zeros_like(terms)
            total = terms.new_zeros(())
            for column, kind in enumerate(_TERM_KINDS):
                term = self._terms.get(kind)
                if term is None:
                    continue
                if kind is MaskedLM:
                    values = torch.stack(
                        [
                            linear_masked_lm_loss(*heads[k], targets[k][0], targets[k][1], padded=layout.fixed)
                            for k in term.runs
                        ]
                    )
                else:
                    values = term.objective.per_run(embeddings.index_select(0, term.rows), tensors, layout.pair_sizes)
                total = total + (term.weights * values).sum()
                terms[term.rows, column] = values.detach().float()
                weights[term.rows, column] = term.weights
        table = torch.cat([(weights * terms).sum(1, keepdim=True), terms], 1)  # a run's absent terms are 0 and not kept
        return total, [row.index_select(0, pick) for row, pick in zip(table, self._picks)]

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


@dataclass
class StackPreparer:
    """The host half of a :class:`StackedStep` (host data only): each run's :class:`RunLoss` (its
    rows, masking and objectives), how the encoders pack rows, and ``fixed``: the fixed shapes of a
    compiled or recorded stack (rows padded to ``full_width`` tokens, one attention bucket, counts
    rounded up by :data:`RECORDED_MULTIPLES`; each run's pair counts only for a structure loss
    without a grouped form, which only a compiled stack may have: they stay out of its encoders)."""

    runs: list[RunLoss]
    packing: PackingSpec
    fixed: bool = False

    def __post_init__(self) -> None:
        self.full_width = max(int(run.lengths.max()) for run in self.runs)
        self.sized_pairs = _ungrouped(self.runs) is not None
        # numpy views of the runs' token ids: the host half makes no torch CPU op (small tensors
        # spread over torch's intra-op threads cost more than they compute)
        self._ids = [run.inputs.ids.numpy() for run in self.runs]

    def __call__(self, batches: Sequence[PretrainBatch]) -> StackBatch:
        """Every array :meth:`StackedStep.compute` reads, for one micro-batch of each run."""
        runs, fixed = self.runs, self.fixed
        layouts = [run.layout(batch) for run, batch in zip(runs, batches)]
        n_rows = max(len(nodes) for _, _, nodes, _, _ in layouts)
        width = max(int(run.lengths[nodes].max()) for run, (_, _, nodes, _, _) in zip(runs, layouts))
        if fixed:
            n_rows, width = _round_up(n_rows, RECORDED_MULTIPLES["rows"]), self.full_width
        ids = np.zeros((len(runs), n_rows, width), dtype=np.int64)
        lengths = np.ones((len(runs), n_rows), dtype=np.int64)
        mask = np.zeros(ids.shape, dtype=bool)
        replacement = np.zeros(ids.shape, dtype=np.int64)
        for k, (run, (_, _, nodes, run_mask, run_replacement)) in enumerate(zip(runs, layouts)):
            own = int(run.lengths[nodes].max())
            ids[k, : len(nodes), :own] = self._ids[k][nodes, :own]
            lengths[k, : len(nodes)] = run.lengths[nodes]
            if run.needs_mlm:
                mask[k, : len(nodes), :own] = run_mask[:, :own]
                replacement[k, : len(nodes), :own] = run_replacement[:, :own]
        # every run's masking at once, in each run's own row-major order of its masked positions
        model, rows, columns = np.nonzero(mask)
        counts = np.bincount(model, minlength=len(runs))
        mask_ids = np.array([run.mask_id for run in runs])[model]
        within = rows * width + columns  # flat index into the run's (n_rows, width) grid
        targets = replace_masked(ids, model * n_rows * width + within, replacement[model, rows, columns], mask_ids)
        # the read grid's width rounded up: fewer distinct shapes to compile or record
        count = _round_up(int(counts.max(initial=0)), RECORDED_MULTIPLES["reads"] if fixed else 1)
        rank = np.arange(len(model)) - np.repeat(np.cumsum(counts) - counts, counts)  # within its model
        # padding reads other rows' [CLS], spread over the rows (keeps the last layer's query grid narrow)
        flat = np.tile(np.arange(count) % n_rows * width, (len(runs), 1))
        flat[model, rank] = within
        arrays, buckets = self.packing.pack(lengths, width, flat, fixed)
        arrays["ids"] = ids
        if fixed:  # each model's targets in its own row, padding -1; the real counts divide
            padded = np.full((len(runs), count), -1, np.int64)
            padded[model, rank] = targets
            arrays["targets"], arrays["mlm_counts"] = padded, np.maximum(counts, 1).astype(np.float32)
        else:
            arrays["targets"] = targets
        index = [k for k, run in enumerate(runs) if run.needs_pairs]
        if index:
            positives = [batches[k].positive_pairs for k in index]
            negatives = [batches[k].negative_pairs for k in index]
            pad = RECORDED_MULTIPLES["pairs"] if fixed else None
            arrays |= StructureInducing.pair_arrays(positives, negatives, n_rows, pad)
            sized = self.sized_pairs or not fixed
            sizes = tuple((len(p), len(n)) for p, n in zip(positives, negatives)) if sized else None
        else:
            sizes = None
        counts = (count,) * len(runs) if fixed else tuple(counts.tolist())
        return StackBatch(arrays, StackLayout(counts, buckets, sizes, fixed, _shapes(arrays)))


@dataclass(frozen=True)
class _Term:
    """One objective kind of a stack: the runs that compute it (host list and ``(n,)`` device rows),
    their ``(n,)`` float32 weights on the device and the first run's objective (which computes all)."""

    runs: list[int]
    rows: torch.Tensor
    weights: torch.Tensor
    objective: object


def _term_table(runs: Sequence[RunLoss], device: torch.device) -> dict[type, _Term]:
    """Per objective kind that some run computes, its :class:`_Term`, moved to the device once."""
    table = {}
    for kind in _TERM_KINDS:
        found = [(k, w, o) for k, run in enumerate(runs) for w, o in run.objectives if isinstance(o, kind)]
        if found:
            rows, weights = to_device([np.array([k for k, _, _ in found], dtype=np.int64)], device) + to_device(
                [np.array([w for _, w, _ in found], dtype=np.float32)], device
            )
            table[kind] = _Term([k for k, _, _ in found], rows, weights, found[0][2])
    return table


def _unrecordable(runs: Sequence[RunLoss], device: torch.device) -> str | None:
    """Why the stack's steps cannot be recorded as CUDA graphs (``compile`` ``cudagraphs``), or None."""
    if device.type != "cuda":
        return "needs a CUDA GPU; use compile or none on a CPU"
    if runs[0].amp_dtype == torch.float16:
        return "needs precision fp32 or bf16 (fp16 loss scaling reads the GPU each step); set TrainConfig.precision to fp32"
    ungrouped = _ungrouped(runs)
    if ungrouped is not None:
        return (
            f"needs a structure loss with a grouped form (contrastive), not {ungrouped.loss.__name__}; use compile none"
        )
    return None


def _ungrouped(runs: Sequence[RunLoss]) -> StructureInducing | None:
    """A structure objective of the runs without a grouped form (its runs' terms computed one by
    one, from each run's pair counts), or None."""
    for run in runs:
        for _, objective in run.objectives:
            if isinstance(objective, StructureInducing) and objective.grouped_loss is None:
                return objective
    return None


def _shapes(arrays: dict[str, np.ndarray]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    return tuple((name, array.shape) for name, array in arrays.items())


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple
