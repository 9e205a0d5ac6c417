"""Configs come resolved and validated from one factory; errors name fields, the CLI names flags."""

import dataclasses

import pytest

from sipt_lab.cli.main import main
from sipt_lab.core.errors import ConfigError
from sipt_lab.experiments.presets import TRAINING_DEFAULTS
from sipt_lab.experiments.simulation.config import SimulationConfig, simulation_config
from sipt_lab.models import ENCODER_PRESETS, EncoderConfig
from sipt_lab.synthetic import GraphSpec
from sipt_lab.synthetic.registry import get_family
from sipt_lab.training import TrainConfig


def test_encoder_config_defaults_are_the_default_preset():
    assert EncoderConfig() == ENCODER_PRESETS["default"]


def test_simulation_config_is_fully_resolved():
    config = simulation_config("torus")
    family = get_family("torus")
    assert (config.graph.n_nodes, config.graph.n_topics) == (family.default_nodes, family.default_topics)
    assert config.train.steps == TRAINING_DEFAULTS["torus"].steps
    assert config.encoder == ENCODER_PRESETS["default"]


def test_simulation_config_has_no_second_set_of_defaults():
    with pytest.raises(TypeError):
        SimulationConfig(graph=GraphSpec("torus"))  # noqa: the factory is the way
    resolved = simulation_config("torus")
    with pytest.raises(ConfigError, match=r"SimulationConfig.graph has unresolved sizes .*simulation_config\(\)"):
        dataclasses.replace(resolved, graph=GraphSpec("torus"))


@pytest.mark.parametrize("build, field", [
    (lambda: TrainConfig(batch_size=0), "TrainConfig.batch_size"),
    (lambda: TrainConfig(lambda_si=2.0), "TrainConfig.lambda_si"),
    (lambda: EncoderConfig(hidden=10, n_heads=4), "EncoderConfig.hidden"),
    (lambda: GraphSpec("torus", noise=-0.1), "GraphSpec.noise"),
    (lambda: simulation_config("torus", graph_options={"n_nodes": 3}), "GraphSpec.n_nodes"),
    (lambda: dataclasses.replace(simulation_config("torus"), train=TrainConfig(seed=1)), "TrainConfig.seed"),
])
def test_invalid_fields_raise_on_construction_naming_the_field(build, field):
    with pytest.raises(ConfigError) as caught:
        build()
    assert caught.value.field == field and str(caught.value).startswith(field) and "--" not in str(caught.value)


def test_cli_names_its_flag_for_a_bad_field(tmp_path, capsys):
    args = ["pretrain", "--samples", "S", "--edges", "E", "--out", str(tmp_path / "o"), "--batch-size", "0"]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == "sipt-lab: error: --batch-size must be >= 1, got 0 (see sipt-lab pretrain --help)"


def test_changing_a_family_default_changes_the_hash(monkeypatch):
    from sipt_lab.core.config import config_hash
    from sipt_lab.synthetic import registry

    before = config_hash(simulation_config("torus"))
    family = get_family("torus")
    monkeypatch.setitem(registry.FAMILIES, "torus", dataclasses.replace(family, default_nodes=family.default_nodes + 10))
    after = simulation_config("torus")
    assert after.graph.n_nodes == family.default_nodes + 10 and config_hash(after) != before


def test_a_nested_config_behind_an_optional_hint_round_trips():
    from sipt_lab.core.config import config_from_dict, config_to_dict
    from sipt_lab.experiments.pretrain_job import PretrainJob

    job = PretrainJob(samples="s.tsv", edges="e.tsv", init="char")  # train: TrainConfig | None, resolved from the init
    again = config_from_dict(PretrainJob, config_to_dict(job))
    assert again == job and type(again.train) is type(job.train)
