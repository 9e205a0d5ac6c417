"""The store of teachers of a domain run: the ``lm`` arms whose encoders teach the MLSM family,
trained once as cells of a model store (:mod:`sipt_lab.grid.model_store`) in ``out/teachers``,
each saved beside its result with a digest of its files."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from sipt_lab.core.errors import SiptError
from sipt_lab.grid import Cell
from sipt_lab.grid.model_store import check_model, directory_digest, model_dir, stored_digest
from sipt_lab.studies.domain.cells import BASELINE_ARM, ConceptCell, DomainCell
from sipt_lab.training.trainer import resolve_device

#: Where :func:`~sipt_lab.studies.domain.run.run_domain` keeps the lm arms that teach the MLSM family (a model store).
TEACHERS_DIR = "teachers"


def teacher_cell(cell: DomainCell) -> DomainCell:
    """The ``lm`` cell of ``cell``'s seed (same data, warm start and budget): the MLSM family's default teacher."""
    common = {f.name: getattr(cell, f.name) for f in dataclasses.fields(DomainCell)}
    return DomainCell(**{**common, "arm": "lm", "graph": None, "lambda_si": 0.0})


def stored_teachers(cells: Sequence[DomainCell]) -> list[Cell]:
    """The lm cells (hashed once) whose encoders teach ``cells``' MLSM arms (those without an explicit teacher)."""
    teachers = {}
    for cell in cells:
        if isinstance(cell, ConceptCell) and cell.teacher is None:
            lm = Cell.of(teacher_cell(cell))
            teachers.setdefault(lm.hash, lm)
    return list(teachers.values())


def is_stored(cell: DomainCell, teachers: str | None) -> bool:
    """Whether ``cell`` is an lm arm whose encoder the run's teacher store holds (trained there)."""
    return (
        teachers is not None
        and cell.arm == BASELINE_ARM
        and type(cell) is DomainCell
        and stored_digest(teachers, cell) is not None
    )


def load_teacher(cell: DomainCell, teachers: str | None):
    """``(encoder, tokenizer)``: the stored lm arm ``cell`` is, or the teacher of the MLSM cell ``cell``,
    on the cell's device, its files checked against their digest."""
    device = resolve_device(cell.pretrain.device, "DomainRunConfig.device")
    if isinstance(cell, ConceptCell) and cell.teacher is not None:
        return load_model(cell.teacher, cell.teacher_digest, device)
    if teachers is None:
        raise SiptError(f"arm {cell.arm} needs the run's teacher store; run it through run_domain")
    lm = Cell.of(teacher_cell(cell))
    digest = stored_digest(teachers, lm)
    if digest is None:
        raise SiptError(
            f"the lm arm teaching {cell.arm} (seed {cell.seed}) is not in {teachers}; re-run the command to train it"
        )
    return load_model(model_dir(teachers, lm), digest, device)


def save_model(encoder, tokenizer, directory: str | Path) -> dict:
    """Save ``encoder`` and ``tokenizer`` into ``directory`` (replaced); returns ``{"digest": ...}``
    for the store cell's result."""
    from sipt_lab.models import save_encoder

    save_encoder(encoder, tokenizer, directory)
    return {"digest": directory_digest(directory)}


def load_model(directory: str | Path, digest: str | None, device="cpu"):
    """``(encoder, tokenizer)`` of a saved model, in eval mode on ``device``, after checking that its
    files still have ``digest`` (None: no check, :func:`~sipt_lab.grid.model_store.check_model`); a
    missing, changed or unreadable model is a one-line :class:`SiptError` naming the directory."""
    from sipt_lab.models import load_encoder

    directory = check_model(directory, digest)
    try:
        return load_encoder(directory, device)
    except SiptError:
        raise
    except Exception as error:  # a damaged file: torch / safetensors / json errors
        raise SiptError(
            f"model {directory} cannot be loaded ({type(error).__name__}); remove it to rebuild it"
        ) from None
