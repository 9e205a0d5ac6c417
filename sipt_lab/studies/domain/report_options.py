"""The configs of ``domain table`` and ``domain curves``, the reports over finished ``domain run``
directories (flags generated from the fields; this module imports no torch)."""

from __future__ import annotations

from dataclasses import dataclass

from sipt_lab.core.options import option, validate

#: ``runs``: the positional run directories of both reports.
_RUNS_HELP = "output directories of `sipt-lab domain run` (one or more; runs of one task are merged by seed)"


@dataclass(frozen=True)
class DomainTableConfig:
    """``sipt-lab domain table``: the paper's Table 2 over finished domain runs.

    Attributes:
        runs: the runs' output directories.
        significance: a paired t-test's p below this marks a comparison ↑ or ↓ (else ∼); the
            paper's 0.1.
    """

    runs: tuple[str, ...] = option(help=_RUNS_HELP, flag="runs", metavar="RUN_DIR", nonempty=True)
    significance: float = option(
        0.1, range=(0.0, 1.0), open="both", metavar="P", help="p-value below which a change is marked ↑ or ↓"
    )

    def __post_init__(self) -> None:
        validate(self)


@dataclass(frozen=True)
class DomainCurvesConfig:
    """``sipt-lab domain curves``: fine-tuning score against fine-tuning step (the paper's Figure 3).

    Attributes:
        runs: the runs' output directories.
        split: the split whose scores are drawn.
        metric: the metric drawn; None: each task's primary metric (macro-AUROC for ``networks``).
    """

    runs: tuple[str, ...] = option(help=_RUNS_HELP, flag="runs", metavar="RUN_DIR", nonempty=True)
    split: str = option("validation", choices=("validation", "test"), help="split whose scores are drawn")
    metric: str | None = option(None, nonempty=True, help="metric drawn", default_help="each task's primary metric")

    def __post_init__(self) -> None:
        validate(self)
