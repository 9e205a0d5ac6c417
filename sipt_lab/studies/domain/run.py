"""``sipt-lab domain run``: LM-only vs SIPT on a real domain, judged by fine-tuning on held-out samples.

Per seed, the domain's samples (all, or a ``n_samples`` slice taken by snowball sampling over the
domain's first graph, which keeps its local density) are split 80/10/10 over the task's labelled
samples. Validation and test samples are dropped from pre-training altogether: neither their text
nor their links are seen. A task with published splits (TAPE's, SciBERT's: samples outside the
pre-training corpus) keeps them: pre-training then reads the corpus only, less a random 10 % of its
linked samples whose links choose ``λ`` (the slice keeps up to ``n_samples`` of the task's samples
besides the corpus snowball). From one warm start (``init``, default the domain's) the arms are

* ``off-the-shelf``: the warm start as it is;
* ``lm``: continued LM pre-training on the pre-training samples (``λ = 0``);
* ``sipt``: LM + ``λ·L_SI`` over each named graph, for every ``λ`` of a small grid, reported at
  the paper's ``λ = 0.1`` (arm ``sipt[graph]``) and, for a grid of several values, at the ``λ``
  whose embeddings best retrieve the validation samples' links (MRR), which pre-training never
  saw, so that ``λ`` is chosen without the fine-tuning labels as the paper chose it (arm
  ``sipt[graph, chosen λ]``);
* further methods (``methods``): ``linkbert`` once per graph (arm ``linkbert[graph]``: it reads
  ``G_PT``'s links), and the MLSM family ``mlsm``, ``lsm15``, ``lsm`` once per seed (arms named
  by the method: they never read ``G_PT``), each learning from a teacher.

The MLSM family's teacher is the same seed's ``lm`` arm, or one ``teacher`` model directory for
every seed. The ``lm`` arms are trained first, as cells of a model store in ``out/teachers``
(:mod:`~sipt_lab.grid.model_store`: one run_grid cell per lm configuration, the encoder
saved beside its result with a digest of its files); then the grid runs, and the ``lm`` cells
load their encoder from the store instead of training it while the MLSM cells load it as their
teacher. So a teacher is trained once, whichever executor runs the cells (serial, local processes,
slurm), before any cell that reads it; a resumed run skips it; and every arm of a seed reads the
same files (a store entry whose files changed is rebuilt, a changed ``teacher`` directory is an
error). Runs without the MLSM family train the ``lm`` arm inside its cell and store nothing.

Each arm is scored by a linear probe on frozen embeddings and/or full fine-tuning on the train
split, evaluated on the test split; SIPT is compared with LM-only (and off-the-shelf) as relative
error reduction with a paired t-test over seeds, next to the local consistency of the task over
each graph, Theorem 1's prediction of where SIPT can help. Every (arm, graph, λ, seed) is one
resumable :func:`~sipt_lab.grid.run_grid` cell. The rooms: :mod:`~sipt_lab.studies.domain.cells`
(the cells), :mod:`~sipt_lab.studies.domain.view` (a seed's slice), ``arms`` (one cell's work),
``teachers`` (the teacher store), ``report`` (the summary); budgets are in
:mod:`sipt_lab.studies.domain.presets`.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

import torch.distributed as dist

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import write_json_atomic, write_text_atomic
from sipt_lab.evaluation.comparison import Comparison, write_comparison_csv
from sipt_lab.grid import as_cells, deadline_options, run_grid, unfinished
from sipt_lab.grid.model_store import STORE_KEYS, drop_damaged, stored_digest
from sipt_lab.jobs.finetune import HISTORY_CSV, history_csv
from sipt_lab.studies.domain.arms import domain_cell, pretrain_arm, train_teacher
from sipt_lab.studies.domain.cells import RESULT_KEYS, ConceptCell, DomainCell
from sipt_lab.studies.domain.report import arms_csv, finetune_history, plot_rre_vs_lc, summarize_domain
from sipt_lab.studies.domain.teachers import TEACHERS_DIR, is_stored, load_teacher, stored_teachers
from sipt_lab.training.methods import Teacher
from sipt_lab.training.trainer import resolve_device

#: The per-arm table of a domain run, in its output directory.
ARMS_CSV = "arms.csv"


def run_domain(
    cells: list[DomainCell],
    out: str | Path,
    *,
    executor: str = "local",
    preset: str | None = None,
    time_limit: float | None = None,
) -> dict | None:
    """Run the cells (resumable, in ``out/cells``; when they include MLSM arms taught by their
    seed's lm arm, those lm arms first, into the store ``out/teachers``) and write ``summary.json``
    (``preset``: the name of the budget the cells were made from, recorded for ``domain table``),
    ``comparison.csv``, ``arms.csv`` (one row per arm, :func:`~sipt_lab.studies.domain.report.arms_csv`)
    and, when arms were fine-tuned, ``history.csv`` (their fine-tuning
    histories, :func:`~sipt_lab.studies.domain.report.finetune_history`); returns the summary.
    Every cell is hashed once. With ``time_limit`` (seconds from this call; the serial executor, not
    under ``torchrun``) no cell starts that would likely end past it, and the run stops with
    :class:`~sipt_lab.grid.GridStopped`, its finished cells kept for the next call.

    Under ``torchrun`` (``WORLD_SIZE`` > 1) every process takes part in each cell's data-parallel
    pre-training, one cell after another (``executor`` is ignored): rank 0 runs the grid and writes
    everything, the other ranks pre-train the same cells with it and return None.
    """
    out = Path(out)
    grid_cells = as_cells(cells)
    lm_teachers = stored_teachers(cells)
    teachers = str((out / TEACHERS_DIR).resolve()) if lm_teachers else None
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed and time_limit is not None:
        raise SiptError("a time limit cannot stop a run under torchrun (its ranks share each cell); drop it")
    stop = deadline_options(executor, time_limit, "DomainRunConfig.executor")
    if distributed:
        from sipt_lab.training.runtime import distributed_context

        place = distributed_context(resolve_device(cells[0].pretrain.device, "DomainRunConfig.device").type)
        if place.is_main and teachers:
            drop_damaged(teachers, lm_teachers)
        dist.barrier()
        pending_teachers = [c.config for c in lm_teachers if stored_digest(teachers, c) is None]
        pending = [c.config for c in unfinished(grid_cells, out / "cells", RESULT_KEYS)]
        dist.barrier()  # every rank has read which cells are finished before rank 0 writes more
        if not place.is_main:
            for cell in pending_teachers:
                pretrain_arm(cell)
            dist.barrier()  # rank 0 has stored the teachers
            for cell in pending:
                if cell.arm != "off-the-shelf" and not is_stored(cell, teachers):
                    teacher = load_teacher(cell, teachers) if isinstance(cell, ConceptCell) else None
                    pretrain_arm(cell, None if teacher is None else Teacher(*teacher))
            return None
        executor = "serial"
    if teachers:
        if not distributed:
            drop_damaged(teachers, lm_teachers)
        run_grid(
            functools.partial(train_teacher, teachers=teachers),
            lm_teachers,
            teachers,
            executor=executor,
            required_keys=STORE_KEYS,
            **stop,
        )
    if distributed:
        dist.barrier()
    results = run_grid(
        functools.partial(domain_cell, teachers=teachers),
        grid_cells,
        out / "cells",
        executor=executor,
        required_keys=RESULT_KEYS,
        **stop,
    )
    rows = [r.result for r in results]
    summary = summarize_domain(rows, cells[0], preset)
    write_json_atomic(out / "summary.json", summary)
    history = finetune_history(rows)
    if history:
        write_text_atomic(out / HISTORY_CSV, history_csv(history))
    write_comparison_csv(out / "comparison.csv", [Comparison(**c) for c in summary["comparisons"]])
    write_text_atomic(out / ARMS_CSV, arms_csv(summary))
    plot_rre_vs_lc(summary, out / "rre_vs_lc")
    return summary
