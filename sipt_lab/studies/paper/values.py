"""The SIPT paper's semi-synthetic numbers (3-NN LOO AUROC, from the original notebooks), so that
benchmarks, figures and the README compare against one copy of them."""

from __future__ import annotations

#: graph family -> (LM AUROC, SIPT AUROC) at noise 0.
FAMILY_AUROC: dict[str, tuple[float, float]] = {
    "cliques": (0.620, 0.941),
    "plane": (0.532, 0.954),
    "mobius": (0.535, 0.826),
    "sphere": (0.531, 0.822),
    "torus": (0.538, 0.804),
}

#: CLIQUES with added-edge noise: rate -> (LM AUROC, SIPT AUROC).
CLIQUES_NOISE_AUROC: dict[float, tuple[float, float]] = {
    0.0: FAMILY_AUROC["cliques"],
    0.05: (0.631, 0.829),
    0.10: (0.617, 0.817),
    0.15: (0.609, 0.741),
    0.50: (0.648, 0.647),
}

#: STRUCTURAL with structure-following features: (LM, SIPT); SIPT is worse there.
STRUCTURAL_AUROC: tuple[float, float] = (0.905, 0.790)
