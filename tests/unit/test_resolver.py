"""The one resolver of a run's training defaults (:mod:`sipt_lab.training.defaults`): every command
builds its TrainConfig there, once; the table is the only place a default lives; a run's
``config.toml`` pins every resolved value, so a rerun from it survives a changed default."""

import ast
import dataclasses
import sys
from pathlib import Path

import pytest
import tomllib

from sipt_lab.cli.main import main
from sipt_lab.core.errors import ConfigError
from sipt_lab.training import defaults
from sipt_lab.training.defaults import TrainOverrides, resolve_train_config
from sipt_lab.training.train_config import TrainConfig

PACKAGE = Path(__file__).resolve().parents[2] / "sipt_lab"
TEXTS = ["red apple", "green apple", "ripe pear", "sour pear", "blue sky", "grey sky", "clear night", "dark night"]
#: Values no preset, method or flag default of any command sets: a table that changes them must
#: change what every command resolves.
CHANGED = {"weight_decay": 0.05, "mask_prob": 0.2, "head_lr": 0.02, "log_every": 7, "mask_unit": "word"}


@pytest.fixture
def run_files(tmp_path):
    (tmp_path / "s.tsv").write_text("".join(f"s{i}\t{text}\n" for i, text in enumerate(TEXTS)))
    (tmp_path / "e.tsv").write_text("s0\ts1\ns2\ts3\ns0\ts2\ns4\ts5\ns6\ts7\ns4\ts6\n")
    return ["--samples", str(tmp_path / "s.tsv"), "--edges", str(tmp_path / "e.tsv")]


TINY = ["--init", "char", "--encoder", "paper-small", "--batch-size", "4", "--device", "cpu", "--quiet"]


def _changed_table(monkeypatch, **values):
    """Every row of the defaults table with ``values`` over it."""
    for kind, row in list(defaults.INIT_DEFAULTS.items()):
        monkeypatch.setitem(defaults.INIT_DEFAULTS, kind, row | values)


def test_one_train_config_is_built_and_validated_per_pretrain_run(run_files, tmp_path, monkeypatch):
    built, validated = [], []
    post_init = TrainConfig.__post_init__
    validate = sys.modules["sipt_lab.training.train_config"].validate

    def counting_post_init(self):
        built.append(self)
        post_init(self)

    def counting_validate(config):
        if isinstance(config, TrainConfig):
            validated.append(config)
        validate(config)

    monkeypatch.setattr(TrainConfig, "__post_init__", counting_post_init)
    monkeypatch.setattr("sipt_lab.training.train_config.validate", counting_validate)
    assert main(["pretrain", *run_files, *TINY, "--epochs", "1", "--out", str(tmp_path / "run")]) == 0
    assert len(built) == 1 and len(validated) == 1
    assert built[0].steps == 2  # one pass of 8 samples in batches of 4: epochs became steps once


def test_only_the_resolver_builds_a_train_config():
    """No module but the config's own and the resolver's constructs a TrainConfig: every other
    default would be a copy of the table's."""
    allowed = {PACKAGE / "training" / "train_config.py", PACKAGE / "training" / "defaults.py"}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "TrainConfig"
            ):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, "TrainConfig built outside the resolver:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "command",
    [
        ["pretrain", "--init", "char"],
        ["pretrain"],
        ["lambda-sweep"],
        ["simulate", "--graph", "torus"],
        ["simulate", "--graph", "cliques", "--preset", "paper"],
        ["study", "lc-transfer", "--preset", "cpu"],
        ["study", "atlas", "--preset", "cpu"],
    ],
)
def test_every_command_resolves_from_the_table_and_prints_every_value(command, monkeypatch, capsys):
    def resolved():
        assert main([*command, "--print-config"]) == 0
        printed = tomllib.loads(capsys.readouterr().out)
        return {key.replace("-", "_"): value for key, value in printed.items()}

    before = resolved()
    shown = set(before) | set(before.get("train_config", {})) | {"loss_params"}
    flags = {
        "max_length": "max_len",
        "save_every": "checkpoint_every",
        "loss_param": "loss_params",
        "lambdas": "lambda_si",
    }
    shown |= {flags[key] for key in before if key in flags}
    missing = {field.name for field in dataclasses.fields(TrainConfig)} - shown - {"steps", "seed"}
    watch = {"eval_every", "keep_best", "patience", "pt_labels"}  # unset (None) unless asked for
    assert missing <= watch, f"{' '.join(command)} --print-config leaves out {sorted(missing - watch)}"

    _changed_table(monkeypatch, **CHANGED)
    after = resolved()
    table = after.get("train_config", {})
    assert {name: table.get(name, after.get(name)) for name in CHANGED} == CHANGED


def test_a_rerun_from_config_toml_survives_a_changed_default(run_files, tmp_path, monkeypatch):
    first = tmp_path / "first"
    assert main(["pretrain", *run_files, *TINY, "--steps", "3", "--out", str(first)]) == 0
    _changed_table(monkeypatch, lr=0.02, mask_prob=0.4, weight_decay=0.2, lambda_si=0.9)
    rerun, changed = tmp_path / "rerun", tmp_path / "changed"
    assert main(["pretrain", "--config", str(first / "config.toml"), "--out", str(rerun)]) == 0
    assert main(["pretrain", *run_files, *TINY, "--steps", "3", "--out", str(changed)]) == 0
    history = (first / "history.csv").read_bytes()
    assert (rerun / "history.csv").read_bytes() == history
    assert (rerun / "config.json").read_bytes() == (first / "config.json").read_bytes()
    assert (changed / "history.csv").read_bytes() != history  # the changed table does reach a fresh run


def test_layers_apply_in_order_and_loss_parameters_merge():
    config = resolve_train_config(
        "checkpoint", TrainOverrides(lr=1e-4, steps=7), {"lr": 2e-4, "loss_params": {"temperature": 0.1}}
    )
    assert (config.lr, config.steps, config.loss, config.loss_params) == (2e-4, 7, "infonce", {"temperature": 0.1})
    assert resolve_train_config("checkpoint", {"loss": "contrastive"}).loss_params == {}  # a new loss: its own
    assert resolve_train_config("char", {"loss_params": {}}).loss_params == {}  # empty: the loss's own
    assert resolve_train_config("char", method="linkbert").mask_replacement == "bert"
    assert resolve_train_config("char", {"steps": 5}, epochs=2, n_samples=100).steps == 6  # epochs win
    with pytest.raises(ConfigError, match=r"TrainConfig.lambda_si is 0, but method sipt"):
        resolve_train_config("char", {"lambda_si": 0.0}, method="sipt")


def test_presets_are_checked_where_they_are_declared():
    with pytest.raises(ConfigError, match=r"TrainConfig.learning_rate \(preset x\) is not a field"):
        TrainOverrides("preset x", learning_rate=0.1)
    with pytest.raises(ConfigError, match=r"TrainConfig.batch_size \(preset x\) must be >= 1"):
        TrainOverrides("preset x", batch_size=0)


@pytest.mark.parametrize(
    "table, message",
    [
        ("[train-config]\nweight_decay = -1.0\n", "TrainConfig.weight_decay (config file"),
        ("[train-config]\nwarmup_steps = 3\n", "warmup_steps (config file"),
        ("[train-config]\nlr = 0.1\n", "[train-config] lr has a flag of its own; set it outside the table"),
    ],
)
def test_a_bad_train_config_table_is_one_line(table, message, run_files, tmp_path, capsys):
    config = tmp_path / "c.toml"
    config.write_text(table)
    assert main(["pretrain", *run_files, "--config", str(config), "--out", str(tmp_path / "o")]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1


def test_a_command_that_trains_nothing_refuses_the_table(tmp_path, capsys):
    config = tmp_path / "c.toml"
    config.write_text("[train-config]\nlr = 0.1\n")
    assert main(["graph", "build", "--graph", "cliques", "--config", str(config), "--out", str(tmp_path / "g")]) == 2
    assert "trains nothing; remove its [train-config] table" in capsys.readouterr().err
