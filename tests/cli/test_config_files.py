"""``--config FILE`` and ``--print-config`` on every command, and the ``config.toml`` a run saves."""

import json

import pytest

from sipt_lab.cli.main import build_parser, main
from sipt_lab.cli.option_files import command_parsers, tomllib  # tomli before Python 3.11

COMMANDS = [path for path, _ in command_parsers(build_parser())]


def _printed(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert main([*argv, "--print-config"]) == 0
    return capsys.readouterr().out


def _error(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 2
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    return lines[0]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_print_config_round_trips_for_every_command(command, capsys, tmp_path):
    printed = _printed(capsys, *command)
    assert printed.startswith(f"# sipt-lab {' '.join(command)}: resolved options")
    tomllib.loads(printed)  # valid TOML
    (tmp_path / "c.toml").write_text(printed)
    assert _printed(capsys, *command, "--config", str(tmp_path / "c.toml")) == printed


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_print_config_lists_every_option_of_the_command(command, capsys):
    """Every option a config file can set is in ``--print-config``: with its resolved value, or as
    a comment saying what an unset one becomes (a required one: that it is required)."""
    from sipt_lab.cli.option_files import _option_actions, option_name

    parser = dict(command_parsers(build_parser()))[command]
    printed = _printed(capsys, *command)
    keys = {line.lstrip("# ").split(" = ")[0] for line in printed.splitlines()[1:] if " = " in line}
    assert {option_name(action) for action in _option_actions(parser)} <= keys


def test_figures_print_config_shows_what_the_run_uses(capsys):
    options = tomllib.loads(_printed(capsys, "figures"))
    assert options["seeds"] == 3 and options["executor"] == "local" and len(options["families"]) == 8
    printed = _printed(capsys, "figures")
    assert "# steps = ...  (default: each family's; heldout_scale: 800 at every size)" in printed
    assert "# nodes = ...  (default: each family's)" in printed
    assert tomllib.loads(_printed(capsys, "figures", "--seeds", "1"))["seeds"] == 1


def test_print_config_with_flags_round_trips_through_toml_and_yaml(capsys, tmp_path):
    yaml = pytest.importorskip("yaml")
    argv = ["lambda-sweep", "--samples", "s.tsv", "--edges", "e.tsv", "--out", "o", "--lambdas", "0", "0.1"]
    argv += ["--loss-param", "pos_margin=2", "--lr", "1e-5", "--init", "char", "--device", 'a "b"\\c']
    printed = _printed(capsys, *argv)
    options = tomllib.loads(printed)
    assert options["lambdas"] == [0.0, 0.1] and options["loss-param"] == ["pos_margin=2"]
    assert options["lr"] == 1e-5 and options["device"] == 'a "b"\\c' and "samples" in options
    (tmp_path / "c.toml").write_text(printed)
    assert _printed(capsys, "lambda-sweep", "--config", str(tmp_path / "c.toml")) == printed
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({key.replace("-", "_"): v for key, v in options.items()}))
    assert _printed(capsys, "lambda-sweep", "--config", str(tmp_path / "c.yaml")) == printed


def test_required_options_are_commented_until_given(capsys, tmp_path):
    printed = _printed(capsys, "pretrain")
    assert "# samples = ...  (required)" in printed and "# out = ...  (required)" in printed
    (tmp_path / "c.toml").write_text('samples = "s.tsv"\nedges = "e.tsv"\nout = "o"\n')
    assert "(required)" not in _printed(capsys, "pretrain", "--config", str(tmp_path / "c.toml"))
    (tmp_path / "d.toml").write_text('domain = "proteins"\n')  # a positional argument
    assert 'domain = "proteins"' in _printed(capsys, "domain", "run", "--config", str(tmp_path / "d.toml"))


def test_flags_override_the_file_and_tables_read_flat(capsys, tmp_path):
    (tmp_path / "c.toml").write_text('samples = "s.tsv"\nedges = "e.tsv"\nout = "o"\n[train]\nsteps = 5\nlr = 0.5\n')
    options = tomllib.loads(_printed(capsys, "pretrain", "--config", str(tmp_path / "c.toml"), "--steps", "7"))
    assert options["steps"] == 7 and options["lr"] == 0.5 and options["samples"] == "s.tsv"
    options = tomllib.loads(_printed(capsys, "pretrain", "--out", "p", "--config", str(tmp_path / "c.toml")))
    assert options["out"] == "p" and options["steps"] == 5
    # a flag beats the file's value of an option it excludes (--epochs or --steps)
    options = tomllib.loads(_printed(capsys, "pretrain", "--config", str(tmp_path / "c.toml"), "--epochs", "2"))
    assert options["epochs"] == 2.0 and "steps" not in options


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("stpes = 3", "unknown key 'stpes' for sipt-lab pretrain; did you mean 'steps'?"),
        ("max_len = 64", "unknown key 'max_len' for sipt-lab pretrain; did you mean 'max-length'?"),
        ('steps = "ten"', 'steps = "ten" is not a whole number'),
        ("steps = 2.5", "steps = 2.5 is not a whole number"),
        ("lr = true", "lr = true is not a number"),
        ("quiet = 1", "quiet = 1 is not true or false"),
        ("steps = 0", "steps = 0 must be in [1, "),
        ('pairs = "all"', 'pairs = "all" is not one of '),
        ("samples = [1, 2]", "samples = [1, 2] is not a string"),
        ("steps = 3\nsteps_ = 1\n[x]\nsteps = 4", "key 'steps' is given twice"),
        ("steps = = 3", "is not valid TOML"),
        ("steps = 3\nepochs = 1.0", "epochs and steps exclude each other; keep one"),
    ],
)
def test_a_bad_file_is_one_line_exit_2_before_any_work(text, expected, capsys, tmp_path):
    (tmp_path / "c.toml").write_text(text + "\n")
    out = tmp_path / "run"
    argv = ["pretrain", "--samples", "s", "--edges", "e", "--out", str(out), "--config", str(tmp_path / "c.toml")]
    line = _error(capsys, *argv)
    assert line.startswith("sipt-lab: error: ") and expected in line, line
    assert not out.exists()


def test_missing_or_unreadable_files_are_one_line(capsys, tmp_path):
    assert "does not exist" in _error(capsys, "pretrain", "--config", str(tmp_path / "none.toml"))
    assert "--config expected one argument" in _error(capsys, "pretrain", "--config")
    (tmp_path / "c.yaml").write_text("- a list\n")
    assert "must hold a mapping" in _error(capsys, "pretrain", "--config", str(tmp_path / "c.yaml"))


def test_a_run_saves_its_options_and_the_file_reproduces_it(clique_files, tmp_path, capsys):
    """A tiny ``pretrain --init char`` run re-run from its ``config.toml`` gives the same history and
    the same result (its wall time aside); ``--print-config`` of the re-run shows the same options."""
    first, second = tmp_path / "run1", tmp_path / "run2"
    argv = ["pretrain", "--samples", str(clique_files / "samples.tsv"), "--edges", str(clique_files / "edges.tsv")]
    argv += ["--labels", str(clique_files / "labels.tsv"), "--init", "char", "--encoder", "paper-small"]
    argv += ["--steps", "3", "--batch-size", "8", "--device", "cpu", "--quiet", "--out", str(first)]
    assert main(argv) == 0
    saved = (first / "config.toml").read_text()
    assert tomllib.loads(saved)["steps"] == 3 and "overwrite" not in tomllib.loads(saved)
    assert "config.toml" in json.loads((first / ".sipt-lab-files.json").read_text())["files"]
    assert main(["pretrain", "--config", str(first / "config.toml"), "--out", str(second)]) == 0
    assert (second / "history.csv").read_bytes() == (first / "history.csv").read_bytes()
    results = [json.loads((run / "result.json").read_text()) for run in (first, second)]
    assert results[1] | {"seconds": None} == results[0] | {"seconds": None}  # the wall time aside
    assert (second / "config.toml").read_text() == saved.replace(str(first), str(second))
    assert (second / "config.json").read_bytes() == (first / "config.json").read_bytes()
    # the run's directory stays the run's: --overwrite replaces it, config.toml included
    assert main([*argv, "--overwrite"]) == 0 and (first / "config.toml").read_text() == saved
