"""Every flag of every subcommand is generated from a config field (its dest is the field's name and
the parser recorded ``Class.field -> flag``), except the command-line-only flags listed here, each
with why it is not a config field."""

from __future__ import annotations

import argparse

import pytest

from sipt_lab.cli.main import build_parser

#: Flags that set no config field, per command: output place and format, run control, and values
#: the command turns into a field before building its config.
CLI_ONLY = {
    "sipt-lab": {"--version"},
    # NAME=VALUE pairs, parsed into TrainConfig.loss_params; where results go; how they print
    "sipt-lab simulate": {"--loss-param", "--out", "--json"},
    "sipt-lab pretrain": {"--loss-param", "--out", "--resume", "--overwrite"},
    "sipt-lab lambda-sweep": {"--loss-param", "--out"},
    "sipt-lab embed": {"--out", "--overwrite"},
    # --only picks the figures to make (make_figures' argument), not how they are made
    "sipt-lab figures": {"--only", "--out"},
    "sipt-lab finetune": {"--out", "--overwrite"},
    "sipt-lab domain run": {"--loss-param", "--out", "--time-limit"},
    "sipt-lab domain table": {"--out", "--overwrite"},
    "sipt-lab domain curves": {"--out", "--overwrite"},
    # --pilot (a summary file) and --target-effect resolve LcTransferConfig.pilot_sd and, for --seeds auto,
    # LcTransferConfig.seeds (--seeds itself sets that field, written by hand as it also takes "auto")
    "sipt-lab study lc-transfer": {
        "--preset",
        "--pilot",
        "--target-effect",
        "--out",
        "--resume",
        "--overwrite",
        "--time-limit",
    },
    # the atlas: a named scale and where its arms go
    "sipt-lab study atlas": {"--preset", "--out", "--resume", "--overwrite", "--time-limit"},
    # how the advice prints
    "sipt-lab advise": {"--json"},
    "sipt-lab graph build": {"--out"},
    "sipt-lab consistency": {"--json"},
    # a dataset name and where to put it: a download, not a run with a config
    "sipt-lab data fetch": {"NAME", "--to", "--allow-unpinned"},
    # input files and where the converted layout goes: a format conversion, not a run with a config
    "sipt-lab data convert string": {"--links", "--fasta", "--min-score", "--out", "--overwrite"},
    "sipt-lab data convert pyg-bio": {"FILE", "--out", "--overwrite"},
    "sipt-lab data convert wiki-descriptions": {"--min-count", "--out", "--overwrite"},
}
#: Flags of every command: the option files (``sipt_lab.cli.option_files``), which read or print the
#: others, and ``-v`` / ``-q`` after the command's name (``-q`` alone where it has a ``--quiet`` of its own).
CONFIG_FILE_FLAGS = {"--config", "--print-config", "--verbose", "--quiet", "-q"}


def command_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("sipt-lab",)):
    yield " ".join(path), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from command_parsers(sub, (*path, name))


def flag_name(action: argparse.Action) -> str:
    return max(action.option_strings, key=len) if action.option_strings else (action.metavar or action.dest.upper())


def hand_written_flags(command: str, parser: argparse.ArgumentParser) -> set[str]:
    recorded = parser.get_default("field_flags") or {}
    generated = {(field.split(".", 1)[1], flag) for field, flag in recorded.items()}
    return {
        flag_name(action)
        for action in parser._actions
        if not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
        and (action.dest, flag_name(action)) not in generated
        and flag_name(action) not in CONFIG_FILE_FLAGS
    }


COMMANDS = dict(command_parsers(build_parser()))


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_flag_is_generated_from_a_config_field(command):
    assert hand_written_flags(command, COMMANDS[command]) == CLI_ONLY.get(command, set())


def test_the_cli_only_list_names_existing_commands():
    assert set(CLI_ONLY) <= set(COMMANDS)
