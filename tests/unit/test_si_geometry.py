"""The geometry ``L_SI`` trains on (``TrainConfig.si_geometry``) and the study's geometry arm config."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sipt_lab.core.config_io import config_to_dict
from sipt_lab.core.errors import SiptError
from sipt_lab.models import CharInit
from sipt_lab.objectives import build_objectives
from sipt_lab.studies.lc.arms import geometry_config
from sipt_lab.training import TrainConfig
from sipt_lab.training.defaults import train_config
from sipt_lab.training.sampler import PretrainBatch
from sipt_lab.training.step import RunLoss
from sipt_lab.training.train_config import check_structure_geometry, si_normalizes

EMBEDDINGS = torch.tensor([[3.0, 4.0], [0.0, 2.0], [1.0, -1.0]])


def structure_loss(geometry: str, output_normalizes: bool, embeddings: torch.Tensor) -> float:
    """The contrastive ``L_SI`` of one positive and one negative pair over ``embeddings``."""
    config = TrainConfig(si_geometry=geometry, lambda_si=1.0, loss_params={"pos_margin": 0.0, "neg_margin": 1.5})
    step = RunLoss(
        torch.zeros(3, 3, dtype=torch.long),
        np.array([3, 3, 3]),
        build_objectives(1.0, "contrastive", dict(config.loss_params)),
        torch.device("cpu"),
        normalize=si_normalizes(config, output_normalizes),
    )
    batch = PretrainBatch(
        np.arange(3),
        3,
        np.array([1, 0, -1]),
        np.array([2, -1, 0]),
        np.zeros((3, 1), bool),
        np.array([[0, 1]]),
        np.array([[0, 2]]),
        None,
    )
    loss, _ = step.combine(batch, embeddings, None, None)
    return float(loss)


@pytest.mark.parametrize("output_normalizes", [False, True])
def test_normalised_geometry_makes_the_structure_loss_blind_to_scale_and_raw_does_not(output_normalizes):
    def scaled(geometry: str) -> tuple[float, float]:
        return (
            structure_loss(geometry, output_normalizes, EMBEDDINGS),
            structure_loss(geometry, output_normalizes, 3 * EMBEDDINGS),
        )

    assert scaled("normalised")[0] == pytest.approx(scaled("normalised")[1], rel=1e-6)
    raw = scaled("raw")
    assert raw[0] != pytest.approx(raw[1])
    # the default follows the encoder's output
    assert scaled("output") == pytest.approx(scaled("normalised" if output_normalizes else "raw"))


def test_si_geometry_is_left_out_of_the_saved_config_at_its_default():
    assert "si_geometry" not in config_to_dict(TrainConfig())
    assert config_to_dict(TrainConfig(si_geometry="raw"))["si_geometry"] == "raw"
    assert [si_normalizes(TrainConfig(si_geometry=g), n) for g in ("output", "normalised", "raw") for n in (0, 1)] == [
        False,
        True,
        True,
        True,
        False,
        False,
    ]


def test_the_margin_check_uses_the_geometry_l_si_trains_on():
    char = train_config("char")  # contrastive, µ- = 10: out of reach on the unit sphere
    check_structure_geometry(char, CharInit())
    with pytest.raises(SiptError, match="neg_margin 10"):
        check_structure_geometry(TrainConfig(si_geometry="normalised"), CharInit())


def test_the_geometry_arm_trains_the_other_geometry_with_margins_that_fit_it():
    arm, config = geometry_config(train_config("char"), output_normalizes=False)
    assert arm == "sipt-normalised" and config.si_geometry == "normalised"
    assert config.loss_params == pytest.approx({"pos_margin": 1.0, "neg_margin": 2.0})
    check_structure_geometry(config, CharInit())
    arm, config = geometry_config(train_config("checkpoint"), output_normalizes=True)
    assert arm == "sipt-raw" and config.si_geometry == "raw"
    assert config.loss_params == train_config("checkpoint").loss_params
