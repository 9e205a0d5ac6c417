"""Logging: library code logs through ``logging`` and prints nothing; the CLI's ``-v`` / ``-q`` (and a
command's own ``--quiet``) choose what reaches stderr, bars included; under ``torchrun`` only rank 0
logs INFO and shows bars."""

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_simulate import SMALL
from test_sweep import Toy, toy_cell

from sipt_lab.cli.main import main
from sipt_lab.core.progress import ROOT, configure_logging, progress_bar
from sipt_lab.grid import grid, run_grid

RUN = ["simulate", *SMALL, "--steps", "2"]


def test_a_library_call_logs_through_logging_and_prints_nothing(tmp_path, capsys, caplog):
    caplog.set_level(logging.INFO, logger="sipt_lab")
    configs = grid(Toy(log_dir=str(tmp_path)), a=[1, 2])
    run_grid(toy_cell, configs, tmp_path / "cells")
    assert ("sipt_lab.grid.runner", logging.INFO, "2 cells: 2 done, 0 skipped, 0 failed") in caplog.record_tuples
    assert capsys.readouterr().out == ""


def test_an_unconfigured_library_call_shows_no_bar_and_no_info(tmp_path, capsys):
    run_grid(toy_cell, grid(Toy(log_dir=str(tmp_path)), a=[1]), tmp_path / "cells")
    assert capsys.readouterr() == ("", "")  # Python's defaults: WARNING and above only


def test_bars_follow_the_logger_and_log_lines_do_not_break_them(capsys):
    configure_logging(logging.WARNING)
    list(progress_bar(range(3), desc="hidden"))
    assert "hidden" not in capsys.readouterr().err
    configure_logging(logging.INFO)
    for _ in progress_bar(range(3), desc="shown"):
        logging.getLogger("sipt_lab.test").info("a line")
    err = capsys.readouterr().err
    assert "shown" in err and "sipt-lab: a line\n" in err
    configure_logging(logging.INFO)  # again: one handler, not two
    assert len(ROOT.handlers) == 1


@pytest.mark.parametrize("flags, info, debug", [([], True, False), (["-q"], False, False), (["-v"], True, True)])
def test_q_silences_info_and_bars_and_v_shows_debug(tmp_path, capsys, signal_free_corpus, flags, info, debug):
    assert main([*flags, *RUN, "--out", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert "seeds" in out  # the command's own output is the same at every level
    assert ("sipt-lab: 1 seed(s) x 2 methods on cliques" in err) == info
    assert ("cells: 100%" in err) == info  # the grid's bar
    assert ("sipt-lab: debug: sipt_lab.grid.runner: cell " in err) == debug


def test_a_commands_own_quiet_is_the_global_one(tmp_path):
    from sipt_lab.cli.arguments import setup_logging
    from sipt_lab.cli.main import build_parser

    parser = build_parser()
    for argv, level in [
        (["embed", "--model", "m", "--samples", "s", "--out", "o"], logging.INFO),
        (["-q", "embed", "--model", "m", "--samples", "s", "--out", "o"], logging.WARNING),
        (["-v", "embed", "--model", "m", "--samples", "s", "--out", "o"], logging.DEBUG),
        (["graph", "build", "--graph", "cliques", "--quiet", "--out", "o"], logging.WARNING),
        (["-v", "graph", "build", "--graph", "cliques", "--quiet", "--out", "o"], logging.WARNING),
        (["embed", "-v", "--model", "m", "--samples", "s", "--out", "o"], logging.DEBUG),  # after the command too
        (["embed", "--model", "m", "--samples", "s", "--out", "o", "--quiet"], logging.WARNING),
        (["-v", "embed", "--model", "m", "--samples", "s", "--out", "o"], logging.DEBUG),
        (["-v", "consistency", "-q", "--example"], logging.WARNING),
        (["pretrain", "-q", "--samples", "s", "--edges", "e", "--out", "o"], logging.WARNING),
    ]:
        setup_logging(parser.parse_args(argv))
        assert ROOT.level == level, argv


RANKED = textwrap.dedent(
    """
    import logging, sys
    from pathlib import Path
    import torch.distributed as dist
    from sipt_lab.cli.arguments import setup_logging
    from sipt_lab.cli.main import build_parser
    from sipt_lab.core.progress import progress_bar

    setup_logging(build_parser().parse_args(["data", "list"]))  # as main() does: INFO
    dist.init_process_group("gloo")
    logger = logging.getLogger("sipt_lab.ranked")
    for _ in progress_bar(range(3), desc="ranked-bar"):
        logger.info("info of rank %d", dist.get_rank())
    logger.error("error of rank %d", dist.get_rank())
    dist.barrier()
    dist.destroy_process_group()
    """
)


@pytest.mark.slow
def test_only_rank_0_logs_info_and_shows_bars_under_two_gloo_processes(tmp_path):
    script = tmp_path / "ranked.py"
    script.write_text(RANKED)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    logs = tmp_path / "logs"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            "2",
            "--master_port",
            "29519",
            "--log-dir",
            str(logs),
            "--redirects",
            "3",
            str(script),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    err = {rank: next(logs.rglob(f"{rank}/stderr.log")).read_text() for rank in (0, 1)}
    assert "sipt-lab: info of rank 0" in err[0] and "ranked-bar" in err[0]
    assert "sipt-lab: error: error of rank 0" in err[0]
    assert "info of rank 1" not in err[1] and "ranked-bar" not in err[1]
    assert "sipt-lab: error: error of rank 1" in err[1]  # errors: every rank


def test_v_after_the_command_runs_it_with_debug_logs(capsys):
    assert main(["consistency", "-v", "--example"]) == 0
    assert ROOT.level == logging.DEBUG
    assert "local consistency" in capsys.readouterr().out


def test_tensorboard_steps_are_history_steps_and_the_head_warmup_is_logged(
    clique_files, tiny_st, tmp_path, monkeypatch
):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    monkeypatch.setenv("SIPT_LAB_CACHE", str(tmp_path / "cache"))
    argv = [
        "pretrain",
        "--init",
        str(tiny_st),
        "--steps",
        "4",
        "--batch-size",
        "8",
        "--head-warmup",
        "3",
        "--device",
        "cpu",
    ]
    files = ["--samples", str(clique_files / "samples.tsv"), "--edges", str(clique_files / "edges.tsv")]
    assert main([*argv, *files, "--out", str(tmp_path / "run")]) == 0
    history = (tmp_path / "run" / "history.csv").read_text().splitlines()[1:]
    events = EventAccumulator(str(tmp_path / "run" / "tensorboard"))
    events.Reload()
    assert [e.step for e in events.Scalars("loss/loss")] == [int(row.split(",")[0]) for row in history] == [1, 2, 3, 4]
    assert [e.step for e in events.Scalars("head_warmup/loss")] == [1, 2, 3]
