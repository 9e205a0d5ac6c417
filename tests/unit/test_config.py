"""Configs come resolved and validated from one factory; errors name fields, the CLI names flags."""

import dataclasses

import pytest

from sipt_lab.cli.main import main
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.models import ENCODER_PRESETS, EncoderConfig
from sipt_lab.studies.simulation.config import simulation_config
from sipt_lab.studies.simulation.presets import TRAINING_DEFAULTS
from sipt_lab.studies.simulation.simulate import SimulationConfig
from sipt_lab.synthetic import GraphSpec
from sipt_lab.synthetic.families import get_family
from sipt_lab.training import TrainConfig


def test_encoder_config_defaults_are_the_default_preset():
    assert EncoderConfig() == ENCODER_PRESETS["default"]


def test_simulation_config_is_fully_resolved():
    config = simulation_config("torus")
    family = get_family("torus")
    assert (config.graph.n_nodes, config.graph.n_topics) == (family.default_nodes, family.default_topics)
    assert config.train.steps == TRAINING_DEFAULTS["torus"].train["steps"]
    assert config.encoder == ENCODER_PRESETS["default"]


def test_simulation_config_has_no_second_set_of_defaults():
    with pytest.raises(TypeError):
        SimulationConfig(graph=GraphSpec("torus"))  # the factory is the way
    resolved = simulation_config("torus")
    with pytest.raises(ConfigError, match=r"SimulationConfig.graph has unresolved sizes .*simulation_config\(\)"):
        dataclasses.replace(resolved, graph=GraphSpec("torus"))


@pytest.mark.parametrize(
    "build, field",
    [
        (lambda: TrainConfig(batch_size=0), "TrainConfig.batch_size"),
        (lambda: TrainConfig(lambda_si=2.0), "TrainConfig.lambda_si"),
        (lambda: TrainConfig(steps=10, grad_accum=1_000_001), "TrainConfig.grad_accum"),  # 10M+ micro-batches
        (lambda: EncoderConfig(hidden=10, n_heads=4), "EncoderConfig.hidden"),
        (lambda: GraphSpec("torus", noise=-0.1), "GraphSpec.noise"),
        (lambda: simulation_config("torus", graph_options={"n_nodes": 3}), "GraphSpec.n_nodes"),
        (lambda: dataclasses.replace(simulation_config("torus"), train=TrainConfig(seed=1)), "TrainConfig.seed"),
    ],
)
def test_invalid_fields_raise_on_construction_naming_the_field(build, field):
    with pytest.raises(ConfigError) as caught:
        build()
    assert caught.value.field == field and str(caught.value).startswith(field) and "--" not in str(caught.value)


def test_cli_names_its_flag_for_a_bad_field(tmp_path, capsys):
    args = ["pretrain", "--samples", "S", "--edges", "E", "--out", str(tmp_path / "o"), "--batch-size", "0"]
    assert main(args) == 2
    assert (
        capsys.readouterr().err.strip()
        == "sipt-lab: error: --batch-size must be >= 1, got 0 (see sipt-lab pretrain --help)"
    )
    # a step of a hundred million micro-batches would never end: refused at once, not run
    assert main([*args[:-2], "--steps", "1", "--grad-accum", "99999999"]) == 2
    assert "--grad-accum makes 1 steps x 99,999,999" in capsys.readouterr().err


def test_changing_a_family_default_changes_the_hash(monkeypatch):
    from sipt_lab.core.config_io import config_hash
    from sipt_lab.synthetic import families

    before = config_hash(simulation_config("torus"))
    family = get_family("torus")
    monkeypatch.setitem(
        families.FAMILIES, "torus", dataclasses.replace(family, default_nodes=family.default_nodes + 10)
    )
    after = simulation_config("torus")
    assert after.graph.n_nodes == family.default_nodes + 10 and config_hash(after) != before


def test_a_nested_config_behind_an_optional_hint_round_trips():
    from sipt_lab.core.config_io import config_from_dict, config_to_dict
    from sipt_lab.jobs.pretrain import PretrainJob

    job = PretrainJob(samples="s.tsv", edges="e.tsv", init="char")  # train: TrainConfig | None, resolved from the init
    again = config_from_dict(PretrainJob, config_to_dict(job))
    assert again == job and type(again.train) is type(job.train)


# ---------------------------------------------------------------- fields make flags
def test_option_fields_validate_and_make_flags():
    import argparse
    from dataclasses import dataclass

    from sipt_lab.core.options import add_config_arguments, config_from_args, option, validate

    @dataclass(frozen=True)
    class Toy:
        steps: int = option(10, help="steps", range=(1, 100), metavar="N")
        rate: float = option(0.5, help="a rate", range=(0.0, 1.0), open="high")
        kind: str = option("a", help="a kind", choices=("a", "b"))
        grid: tuple[float, ...] = option((1.0, 2.0), help="a grid", range=(0.0, None), open="low", flag="--value")
        path: str | None = option(None, help="a path", nonempty=True, default_help="none")

        def __post_init__(self) -> None:
            validate(self)

    for bad, field in (
        ({"steps": 0}, "Toy.steps"),
        ({"rate": 1.0}, "Toy.rate"),
        ({"kind": "c"}, "Toy.kind"),
        ({"grid": (1.0, -1.0)}, "Toy.grid"),
        ({"path": " "}, "Toy.path"),
    ):
        with pytest.raises(ConfigError) as caught:
            Toy(**bad)
        assert caught.value.field == field
    parser = argparse.ArgumentParser()
    flags = add_config_arguments(parser, Toy, ("steps", "rate", "kind", "grid", "path"))
    assert flags == {"steps": "--steps", "rate": "--rate", "kind": "--kind", "grid": "--value", "path": "--path"}
    assert parser.get_default("field_flags")["Toy.grid"] == "--value"
    args = parser.parse_args(["--steps", "5", "--value", "3", "4"])
    assert config_from_args(args, Toy) == Toy(steps=5, grid=(3.0, 4.0))
    help_text = " ".join(parser.format_help().split())
    assert "steps (default: 10)" in help_text and "a path (default: none)" in help_text
    with pytest.raises(SystemExit):
        parser.parse_args(["--steps", "101"])


def test_pretrain_flags_come_from_train_config():
    from sipt_lab.cli.main import build_parser
    from sipt_lab.training.train_config import TrainConfig

    pretrain = next(
        a for a in build_parser()._subparsers._group_actions[0].choices.values() if a.prog.endswith("pretrain")
    )
    by_flag = {action.option_strings[0]: action for action in pretrain._actions if action.option_strings}
    # every training flag defaults to None, the resolver's value, which --help names
    assert (
        by_flag["--batch-size"].default is None
        and f"(default: {TrainConfig.batch_size})" in by_flag["--batch-size"].help
    )
    assert by_flag["--precision"].default is None and by_flag["--save-every"].dest == "checkpoint_every"
    assert by_flag["--lr"].default is None and "for a checkpoint" in by_flag["--lr"].help
    assert pretrain.get_default("field_flags")["TrainConfig.max_len"] == "--max-length"


def test_train_config_defaults_are_the_char_row_and_margins_live_once():
    import inspect

    from sipt_lab.objectives.names import LOSS_PARAMETERS
    from sipt_lab.objectives.structure import contrastive_loss, loss_parameters
    from sipt_lab.training.defaults import INIT_DEFAULTS, kind_default, train_config

    assert train_config("char") == TrainConfig()
    assert TrainConfig(loss="multisim").loss_params == {}
    assert loss_parameters("contrastive") == LOSS_PARAMETERS["contrastive"]
    defaults = {
        k: v.default
        for k, v in inspect.signature(contrastive_loss).parameters.items()
        if v.default is not inspect.Parameter.empty
    }
    assert defaults == LOSS_PARAMETERS["contrastive"]
    assert dict(INIT_DEFAULTS["char"]) == {}  # the char row is TrainConfig's own defaults
    assert kind_default("char", "loss_params") == TrainConfig().loss_params


#: Flags that set no config field (where a run writes, whether it may replace or resume one, where a
#: download goes): library messages may name them as they are.
COMMAND_LINE_ONLY_FLAGS = {"--out", "--overwrite", "--resume", "--to", "--allow-unpinned", "--time-limit"}
#: Progress and warning lines (printed while a run goes, never through the CLI's error path) that
#: name a flag, by module.
LOGGED_FLAGS = {
    "training/diagnostics.py": {"--loss"},
    "training/watch.py": {"--report-to"},
    "jobs/advise.py": {"--init", "--pooling", "--max-length", "--k"},
}


def _library_strings(tree):
    """Every string literal of a module's code (f-string parts included), less its docstrings and
    its help text, which is written for ``--help``: that of its ``option(...)`` fields, of its
    ``*_HELP`` constants and of its functions named ``*help*``."""
    import ast

    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                skipped.add(id(first.value))
        help_text = (
            (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "option")
            or (isinstance(node, ast.Assign) and any(getattr(t, "id", "").endswith("_HELP") for t in node.targets))
            or (isinstance(node, ast.FunctionDef) and "help" in node.name)
        )
        if help_text:
            skipped.update(id(inner) for inner in ast.walk(node))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped:
            yield node.lineno, node.value


def test_library_messages_name_config_fields_not_flags():
    """Outside the CLI a message names the config field (``TrainConfig.precision``); the CLI shows the
    flag that sets it. Only flags that set no field may appear as flags."""
    import ast
    import re
    from pathlib import Path

    import sipt_lab

    root = Path(sipt_lab.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root).as_posix()
        if module.startswith("cli/"):
            continue
        allowed = COMMAND_LINE_ONLY_FLAGS | LOGGED_FLAGS.get(module, set())
        for line, text in _library_strings(ast.parse(path.read_text(encoding="utf-8"))):
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text):
                if flag not in allowed:
                    found.append(f"{module}:{line}: {flag}")
    assert not found, "library messages name flags; name the config field instead:\n" + "\n".join(found)


def test_a_library_config_error_names_the_field_and_the_cli_its_flag(tmp_path, capsys):
    from sipt_lab.jobs.configs import PretrainJob

    with pytest.raises(ConfigError) as caught:
        PretrainJob(samples="S", edges="E", method="mlsm")
    assert caught.value.field == "PretrainJob.teacher"
    assert str(caught.value) == "PretrainJob.teacher method mlsm needs PretrainJob.teacher DIR"
    args = ["pretrain", "--samples", "S", "--edges", "E", "--method", "mlsm", "--out", str(tmp_path / "o")]
    assert main(args) == 2
    assert capsys.readouterr().err.strip() == "sipt-lab: error: --teacher method mlsm needs --teacher DIR"


def test_any_library_error_names_fields_and_the_cli_shows_their_flags(tmp_path, capsys):
    import torch

    from sipt_lab.core.errors import SiptError
    from sipt_lab.training.runtime import autocast_dtype

    with pytest.raises(SiptError, match=r"^fp16 autocast needs a CUDA GPU; use TrainConfig.precision bf16 or fp32"):
        autocast_dtype("fp16", torch.device("cpu"))
    (tmp_path / "s.tsv").write_text("a\thello world\nb\tgood day\nc\tnice one\n", encoding="utf-8")
    (tmp_path / "e.tsv").write_text("a\tb\nb\tc\n", encoding="utf-8")
    args = ["pretrain", "--samples", str(tmp_path / "s.tsv"), "--edges", str(tmp_path / "e.tsv"), "--init", "char"]
    assert main([*args, "--precision", "fp16", "--device", "cpu", "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip() == (
        "sipt-lab: error: fp16 autocast needs a CUDA GPU; use --precision bf16 or fp32 on CPU"
    )
    assert not (tmp_path / "o").exists()


def test_fields_a_command_sets_by_no_flag_stay_fields():
    from sipt_lab.core.errors import with_flags

    flags = {"TrainConfig.steps": "--steps"}
    assert with_flags("use TrainConfig.steps 10 or GraphSpec.n_topics 5 (model.pt)", flags) == (
        "use --steps 10 or GraphSpec.n_topics 5 (model.pt)"
    )


def test_precision_auto_is_fp32_on_cpu_and_bf16_only_where_cuda_supports_it(monkeypatch):
    import torch

    from sipt_lab.training.runtime import autocast_dtype

    assert autocast_dtype("auto", torch.device("cpu")) is None
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: True)
    assert autocast_dtype("auto", torch.device("cuda")) is torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *args, **kwargs: False)
    assert autocast_dtype("auto", torch.device("cuda")) is torch.float16


def test_steps_for_epochs_rounds_up_and_refuses_a_step_longer_than_the_epochs():
    from sipt_lab.training.train_config import steps_for_epochs

    assert steps_for_epochs(1, 40, 8) == 5 and steps_for_epochs(1, 40, 8, grad_accum=2) == 3
    assert steps_for_epochs(0.5, 40, 8, grad_accum=2) == 2 and steps_for_epochs(1, 5, 8) == 1
    with pytest.raises(SiptError, match=r"are 5 micro-batches of 8, fewer than one step's TrainConfig.grad_accum=8"):
        steps_for_epochs(1, 40, 8, grad_accum=8)


def test_cli_refuses_epochs_shorter_than_one_accumulated_step(tmp_path, capsys):
    samples, edges = tmp_path / "s.tsv", tmp_path / "e.tsv"
    samples.write_text("id\ttext\n" + "".join(f"s{k}\tword {k}\n" for k in range(12)))
    edges.write_text("".join(f"s{k}\ts{k + 1}\n" for k in range(11)))
    args = ["pretrain", "--samples", str(samples), "--edges", str(edges), "--init", "char", "--batch-size", "4"]
    assert main([*args, "--epochs", "1", "--grad-accum", "4", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "fewer than one step's --grad-accum=4; lower --grad-accum" in err, err
    assert not (tmp_path / "o").exists()
