"""Checks on a run's loss history that catch a structure loss which does not train.

``L_SI`` that stays flat means the encoder's embedding never moves in the way the loss asks: the
usual causes are margins that do not fit the embeddings' scale (a contrastive negative margin the
vectors cannot reach keeps every hinge active with a gradient that changes nothing the loss
measures) and a learning rate too low for the init. The trainer logs :func:`stalled_structure_loss`
at :func:`guard_step`, and the pretrain report repeats it next to the before/after numbers.
"""

from __future__ import annotations

import numpy as np

from sipt_lab.objectives.structure import loss_parameters
from sipt_lab.training.train_config import TrainConfig

#: ``L_SI`` must fall by at least this fraction of its first window's mean by the guard step.
MIN_RELATIVE_DROP = 0.05
#: The guard looks at the first ``GUARD_STEPS`` steps (or all of a shorter run).
GUARD_STEPS = 200
#: Steps a run needs for the guard to compare two windows.
MIN_GUARD_STEPS = 20


def guard_step(steps: int) -> int:
    """The step count after which the guard checks a run of ``steps`` steps (0: never)."""
    return min(steps, GUARD_STEPS) if steps >= MIN_GUARD_STEPS else 0


def stalled_structure_loss(si: np.ndarray, config: TrainConfig) -> str | None:
    """A warning when ``L_SI`` has not fallen, else None.

    Args:
        si: ``(t,)`` per-step ``L_SI`` of the first ``t`` steps (``t >= MIN_GUARD_STEPS``).
        config: the run's settings (named in the likely causes).

    The first and last tenth of the ``t`` steps are compared by their means (batches differ from
    step to step, so single steps are noisy).
    """
    if len(si) < MIN_GUARD_STEPS:
        return None
    window = max(len(si) // 10, 1)
    first, last = float(np.mean(si[:window])), float(np.mean(si[-window:]))
    if not np.isfinite(first) or first <= 0 or last <= first * (1.0 - MIN_RELATIVE_DROP):
        return None
    causes = (
        f"the {config.loss} loss's margins may not fit the embeddings' scale ({_params(config)}): "
        "use margins the vectors can reach, or --loss infonce, which compares directions"
        if config.loss == "contrastive"
        else f"{config.loss} ({_params(config)}) may need other parameters"
    )
    return (
        f"L_SI did not fall over the first {len(si)} steps ({first:.4g} -> {last:.4g}, less than "
        f"{MIN_RELATIVE_DROP:.0%} lower): {causes}; or lr {config.lr:g} is too low for this init"
    )


def _params(config: TrainConfig) -> str:
    params = {**loss_parameters(config.loss), **config.loss_params}
    return ", ".join(f"{name}={value:g}" for name, value in params.items()) or "no parameters"
