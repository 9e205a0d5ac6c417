"""Golden tests: today's command line and today's results, pinned before the package is restructured.

The restructuring (modules moved into new packages, the CLI generated from the config dataclasses,
the training loops merged) is meant to change where code lives, not what ``sipt-lab`` accepts or
computes. These tests hold it to that:

* **Flags** (:func:`test_flags_and_defaults_are_unchanged`): every command and sub-command of
  ``sipt-lab``, and for each its arguments as data: option strings, action (a value, a switch, a
  repeatable flag), default, choices, nargs, required, and which of a fixed set of probe values
  the flag's type accepts (so a range check that moves into a config dataclass must keep its
  range). Golden file: ``golden/help/flags.json``.
* **Help text** (:func:`test_help_text_is_unchanged`): the full ``--help`` of every command at a
  fixed width of 100 columns, one file each (``golden/help/sipt-lab.txt``,
  ``golden/help/domain_run.txt`` for ``sipt-lab domain run``, ...). Kept apart from the flags so
  that "the flags changed" and "only the wording changed" fail different tests. (argparse's layout
  differs a little between Python versions: regenerate these files when moving to another one.)
* **Results** (``test_<command>_results``): tiny end-to-end runs through
  :func:`sipt_lab.cli.main.main` in a temporary directory (``simulate``, ``pretrain --init char``
  with and without the structure loss, ``finetune`` of the SIPT model against the LM-only one,
  ``domain run`` on a generated proteins directory, ``consistency``), with the files each writes
  normalised (volatile fields dropped, paths made relative, floats rounded: :mod:`golden_support`)
  and compared with ``golden/results/<run>.json``: the data-only parts exactly, the values of
  trained runs within their measured spread across math-library paths (``golden/tolerance.json``,
  ``golden/README.md``), which the tests of the comparison below hold to catching a real change.

The inputs are generated here from fixed seeds (the proteins directory by
:func:`domain_fixtures.write_proteins`), so that the golden files depend on the package alone.
Rewrite every golden file with ``SIPT_LAB_UPDATE_GOLDEN=1 python -m pytest tests/cli/test_golden.py``
when a change of behaviour is intended; a missing golden file fails with that hint.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import golden_support
import numpy as np
import pytest
import torch
from golden_support import (
    GOLDEN_DIR,
    TRAINED_VALUES,
    UPDATE_HINT,
    check_golden_json,
    differences,
    environment_differences,
    environment_note,
    kind_of,
    normalise,
    read_csv_rows,
    read_freeze,
    read_spread,
    run_golden_tests,
    text_mismatch,
    tolerance_rule,
    torch_threads,
    updating,
)

from sipt_lab.cli.main import build_parser, main

# ------------------------------------------------------------------------------------------ command line
#: Width of the terminal the help text is formatted for (argparse reads ``COLUMNS``).
HELP_COLUMNS = "100"
#: Values offered to every flag's type: what it accepts (and turns them into) is pinned, and a
#: rejected value shows as ``"<rejected>"``.
TYPE_PROBES = ("-1", "0", "0.5", "1", "2", "1e9", "99999999999999999999", "1e400", "nan", "", " ", "x")


def command_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """``(path, parser)`` for ``sipt-lab`` (path ``()``) and every command and sub-command below it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from command_parsers(sub, (*path, name))


def help_file(path: tuple[str, ...]) -> str:
    """``sipt-lab domain run`` -> ``domain_run.txt`` (no command name has an underscore)."""
    return "_".join(path or ("sipt-lab",)) + ".txt"


def describe_arguments(parser: argparse.ArgumentParser) -> dict:
    """The parser's arguments as data, keyed by the longest option string (a positional by the
    name its usage shows; the sub-command choice as ``<subcommands>``)."""
    action_names = {cls: name for name, cls in parser._registries["action"].items() if name is not None}
    described = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            described["<subcommands>"] = {"names": list(action.choices), "required": action.required}
            continue
        key = max(action.option_strings, key=len) if action.option_strings else f"<{action.metavar or action.dest}>"
        entry = {
            "option_strings": sorted(action.option_strings),
            "action": action_names.get(type(action), type(action).__name__),
            "default": normalise(action.default),
            "choices": normalise(list(action.choices)) if action.choices is not None else None,
            "nargs": action.nargs,
            "required": action.required,
        }
        if action.type is not None:
            entry["accepts"] = probe_type(action.type)
        described[key] = entry
    return described


def probe_type(convert) -> dict:
    """What ``convert`` (an argparse ``type=``) makes of each of :data:`TYPE_PROBES`."""
    accepted = {}
    for text in TYPE_PROBES:
        try:
            accepted[text] = normalise(convert(text))
        except (argparse.ArgumentTypeError, ValueError, TypeError, OverflowError):
            accepted[text] = "<rejected>"
    return accepted


@pytest.fixture()
def parser(monkeypatch):
    monkeypatch.setenv("COLUMNS", HELP_COLUMNS)
    return build_parser()


def test_flags_and_defaults_are_unchanged(parser):
    """The set of commands, and each one's flags with their defaults, choices, nargs, whether
    required, and what their types accept."""
    flags = {" ".join(("sipt-lab", *path)): describe_arguments(sub) for path, sub in command_parsers(parser)}
    check_golden_json("help/flags.json", flags)


def test_help_text_is_unchanged(parser):
    """The full ``--help`` of every command (wording, order, wrapping at 100 columns)."""
    expected_files = set()
    problems = []
    for path, sub in command_parsers(parser):
        name = help_file(path)
        expected_files.add(name)
        problem = text_mismatch(f"help/{name}", sub.format_help())
        if problem:
            problems.append(problem)
    stale = {p.name for p in (GOLDEN_DIR / "help").glob("*.txt")} - expected_files
    if updating():
        for name in stale:
            (GOLDEN_DIR / "help" / name).unlink()
    elif stale:
        problems.append(f"golden help files of commands that no longer exist: {', '.join(sorted(stale))}")
    if problems:
        pytest.fail(
            "--help text differs from its golden files:\n"
            + "\n".join(problems)[:12000]
            + f"\n{environment_note()}\n{UPDATE_HINT}",
            pytrace=False,
        )


# ------------------------------------------------------------------------------------------ inputs
#: Words of each label group; every golden sample mixes its group's words with shared filler.
GROUP_WORDS = (
    ("red", "blue", "green", "pink", "gold"),
    ("cat", "dog", "cow", "owl", "fox"),
    ("oak", "elm", "ash", "fir", "yew"),
    ("sun", "moon", "star", "sky", "rain"),
)
FILLER = ("the", "a", "of", "and", "to", "in", "is", "was", "on", "with")
N_SAMPLES = 48


def write_inputs(root: Path) -> Path:
    """48 samples in 4 label groups: samples.tsv (half group words, half filler), labels.tsv,
    edges.tsv (mostly within a group, a few across, so LC is below 1) and splits.tsv (24/8/16)."""
    rng = np.random.default_rng(0)
    root.mkdir(parents=True, exist_ok=True)
    ids = [f"s{k}" for k in range(N_SAMPLES)]
    group = [k % len(GROUP_WORDS) for k in range(N_SAMPLES)]
    texts = [" ".join([*rng.choice(GROUP_WORDS[g], 4), *rng.choice(FILLER, 4)]) for g in group]
    (root / "samples.tsv").write_text("id\ttext\n" + "".join(f"{i}\t{t}\n" for i, t in zip(ids, texts)))
    (root / "labels.tsv").write_text("".join(f"{i}\tg{g}\n" for i, g in zip(ids, group)))
    edges = [
        (a, b)
        for a in range(N_SAMPLES)
        for b in range(a + 1, N_SAMPLES)
        if rng.random() < (0.5 if group[a] == group[b] else 0.03)
    ]
    (root / "edges.tsv").write_text("".join(f"{ids[a]}\t{ids[b]}\n" for a, b in edges))
    split = ["train"] * 24 + ["validation"] * 8 + ["test"] * 16
    (root / "splits.tsv").write_text("".join(f"{i}\t{s}\n" for i, s in zip(ids, split)))
    return root


def read_json(path: Path):
    return json.loads(path.read_text())


def file_listing(root: Path) -> list[str]:
    """Every file under ``root``, relative, sorted: which files a run writes is pinned too (a
    TensorBoard event file by its kind: its name holds the time, host and process)."""
    return sorted(
        re.sub(r"events\.out\.tfevents\..*$", "events.out.tfevents.<time.host.pid>", p.relative_to(root).as_posix())
        for p in root.rglob("*")
        if p.is_file()
    )


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    return write_inputs(tmp_path_factory.mktemp("golden-inputs"))


#: The two tiny ``pretrain --init char`` runs: SIPT (the char init's default lambda) and LM-only.
PRETRAIN_ARMS = {"sipt": [], "lm": ["--lambda-si", "0"]}


@pytest.fixture(scope="module")
def pretrained(inputs, tmp_path_factory) -> dict[str, Path]:
    """Arm -> run directory of :data:`PRETRAIN_ARMS`, shared by the pretrain and finetune tests (run
    with the settings of the function-scoped conftest fixtures: torch's threads, an isolated cache)."""
    root = tmp_path_factory.mktemp("golden-pretrain")
    threads = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SIPT_LAB_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
        torch.set_num_threads(torch_threads())
        try:
            for arm, extra in PRETRAIN_ARMS.items():
                assert (
                    main(
                        [
                            "pretrain",
                            "--samples",
                            str(inputs / "samples.tsv"),
                            "--edges",
                            str(inputs / "edges.tsv"),
                            "--labels",
                            str(inputs / "labels.tsv"),
                            "--init",
                            "char",
                            "--encoder",
                            "paper-small",
                            "--steps",
                            "6",
                            "--batch-size",
                            "8",
                            "--device",
                            "cpu",
                            "--quiet",
                            *extra,
                            "--out",
                            str(root / arm),
                        ]
                    )
                    == 0
                )
        finally:
            torch.set_num_threads(threads)
    return {arm: root / arm for arm in PRETRAIN_ARMS}


@pytest.fixture()
def fake_corpus(monkeypatch):
    """The semi-synthetic families' corpus and topic model replaced by 240 random strings in 12
    planted topics (fitting LDA on the embedded corpus takes longer than all of these tests)."""
    from sipt_lab.data.corpus import Corpus
    from sipt_lab.data.topics import TopicAssignment
    from sipt_lab.synthetic import builder

    rng = np.random.default_rng(0)
    alphabet = np.array(list("abcdefgh "))
    sentences = ["".join(rng.choice(alphabet, 24)) for _ in range(240)]
    doc_topic = np.full((240, 12), 0.05 / 11)
    doc_topic[np.arange(240), np.arange(240) % 12] = 0.95
    corpus, topics = Corpus(sentences, None, None, "fake"), TopicAssignment.from_doc_topic(doc_topic)
    monkeypatch.setattr(builder, "load_corpus", lambda path=None: corpus)
    monkeypatch.setattr(builder, "fit_topics", lambda corpus, config: topics)


# ------------------------------------------------------------------------------------------ results
def test_simulate_results(tmp_path, fake_corpus):
    """``simulate``: LM vs SIPT on a 30-node cliques graph, 2 seeds, 20 steps. Pins results.json
    (config, per-seed metrics of each arm, LC) and the cell directories, whose names are the
    config hashes a re-run uses to skip finished seeds."""
    out = tmp_path / "sim"
    assert (
        main(
            [
                "simulate",
                "--graph",
                "cliques",
                "--nodes",
                "30",
                "--steps",
                "20",
                "--seeds",
                "2",
                "--lambda-si",
                "0.5",
                "--device",
                "cpu",
                "--executor",
                "serial",
                "--json",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    check_golden_json(
        "results/simulate.json",
        normalise(
            {
                "files": file_listing(out),
                "results.json": read_json(out / "results.json"),
            },
            tmp_path,
        ),
    )


def test_pretrain_results(pretrained, inputs):
    """``pretrain --init char`` with --labels, SIPT and LM-only (``--lambda-si 0``): the before/after
    report (LC, LOO 3-NN, radius, link retrieval), the final losses, the loss history, the saved
    config, tokenizer and encoder sizes, and which files a run writes."""
    runs = {}
    for arm, out in pretrained.items():
        runs[arm] = {
            "files": file_listing(out),
            "result.json": read_json(out / "result.json"),
            "config.json": read_json(out / "config.json"),
            "history.csv": read_csv_rows(out / "history.csv"),
            "model/encoder_config.json": read_json(out / "model" / "encoder_config.json"),
            "model/tokenizer.json": read_json(out / "model" / "tokenizer.json"),
        }
    check_golden_json("results/pretrain.json", normalise(runs, {out.parent: "<pretrain>", inputs: "<inputs>"}))


def test_finetune_results(pretrained, inputs, tmp_path):
    """``finetune`` of the SIPT run directory against the LM-only one (--baseline) on given splits,
    2 seeds, probe and full fine-tuning: scores, relative error reductions and paired t-tests.

    (Not ``--baseline char``: a named char init gets a vocabulary learnt from no texts, so every
    sample embeds alike and the probe's scores turn on float ties.)"""
    out = tmp_path / "ft"
    assert (
        main(
            [
                "finetune",
                "--model",
                str(pretrained["sipt"]),
                "--baseline",
                str(pretrained["lm"]),
                "--samples",
                str(inputs / "samples.tsv"),
                "--labels",
                str(inputs / "labels.tsv"),
                "--splits",
                str(inputs / "splits.tsv"),
                "--seeds",
                "2",
                "--lr",
                "1e-3",
                "--epochs",
                "2",
                "--batch-size",
                "8",
                "--device",
                "cpu",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    check_golden_json(
        "results/finetune.json",
        normalise(
            {
                "files": file_listing(out),
                "results.json": read_json(out / "results.json"),
                "config.json": read_json(out / "config.json"),
            },
            {tmp_path: "<tmp>", pretrained["sipt"].parent: "<pretrain>", inputs: "<inputs>"},
        ),
    )


def test_domain_run_results(tmp_path):
    """``domain run proteins --init char`` on a generated proteins directory: off-the-shelf, LM and
    SIPT arms, 2 seeds, 4 pre-training steps, probe and full fine-tuning. Pins summary.json,
    comparison.csv and every cell's config and result (cells keyed by arm, graph and seed: their
    directory names hash the absolute data path, which differs from run to run)."""
    from domain_fixtures import write_proteins

    data = write_proteins(tmp_path / "proteins")
    out = tmp_path / "dom"
    assert (
        main(
            [
                "domain",
                "run",
                "proteins",
                "--data",
                str(data),
                "--init",
                "char",
                "--seeds",
                "2",
                "--steps",
                "4",
                "--mode",
                "both",
                "--device",
                "cpu",
                "--executor",
                "serial",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    cells = {}
    for cell in sorted((out / "cells").iterdir()):
        config = read_json(cell / "config.json")
        cells[f"{config['arm']} graph={config['graph']} seed={config['seed']}"] = {
            "files": file_listing(cell),
            "config.json": config,
            "result.json": read_json(cell / "result.json"),
        }
    assert len(cells) == len(list((out / "cells").iterdir()))
    check_golden_json(
        "results/domain_run.json",
        normalise(
            {
                "files": [name for name in file_listing(out) if not name.startswith("cells/")],
                "summary.json": read_json(out / "summary.json"),
                "comparison.csv": read_csv_rows(out / "comparison.csv"),
                "cells": cells,
            },
            tmp_path,
        ),
    )


def test_consistency_results(inputs, capsys):
    """``consistency --json``: the packaged example with the in-memory and the streaming engine
    (the same numbers), and the golden inputs with --ties strict."""
    runs = {
        "example": ["--example"],
        "example --engine stream": ["--example", "--engine", "stream"],
        "inputs --ties strict": [
            "--edges",
            str(inputs / "edges.tsv"),
            "--labels",
            str(inputs / "labels.tsv"),
            "--ties",
            "strict",
        ],
    }
    printed = {}
    for name, argv in runs.items():
        assert main(["consistency", *argv, "--json"]) == 0
        printed[name] = json.loads(capsys.readouterr().out)
    check_golden_json("results/consistency.json", normalise(printed, {inputs: "<inputs>"}))


# ------------------------------------------------------------------------------------------ the comparison
def golden_simulate() -> dict:
    return json.loads((GOLDEN_DIR / "results" / "simulate.json").read_text())


def compare_simulate(computed: dict) -> list[str]:
    """How ``computed`` (a normalised simulate result) differs from the golden one, under the
    committed tolerance."""
    name = "results/simulate.json"
    return differences(computed, golden_simulate(), tolerance=tolerance_rule(name, read_spread()))


def with_lm_link_ap(first: float, second: float) -> dict:
    computed = golden_simulate()
    computed["results.json"]["methods"]["lm"]["link.ap"] = [first, second]
    return computed


@pytest.mark.parametrize(
    "first, second",
    [
        (0.0572816, 0.0602527),  # a 2-core AMD EPYC, PyPI's torch, nothing set
        (0.0579079, 0.0609312),  # the same with MKL_CBWR=COMPATIBLE
        (0.0573271, 0.0609312),  # MKL_CBWR=AVX2
        (0.0573591, 0.0609312),  # ONEDNN_MAX_CPU_ISA=AVX2 MKL_CBWR=AVX2
        (0.0573050, 0.0609312),  # MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2
    ],
)
def test_trained_values_of_another_math_library_path_pass(first, second):
    """The golden simulate run's LM link AP as other CPUs and math-library paths computed it (about
    1.3 % from the golden machine's) is within the measured tolerance."""
    assert compare_simulate(with_lm_link_ap(first, second)) == []


def test_a_trained_value_moved_by_several_tolerances_fails():
    name, place = "results/simulate.json", "/results.json/methods/lm/link.ap[0]"
    rel, _ = tolerance_rule(name, read_spread())(place)
    expected = golden_simulate()["results.json"]["methods"]["lm"]["link.ap"]
    found = compare_simulate(with_lm_link_ap(expected[0] * (1 + 3 * rel), expected[1]))
    assert len(found) == 1 and found[0].startswith(f"{place}: ") and "trained value: tolerance" in found[0]


def test_swapped_methods_or_seeds_fail_the_comparison():
    """The tolerance is tighter than what tells the arms, or one seed's run from the other's, apart."""
    swapped_methods = golden_simulate()
    methods = swapped_methods["results.json"]["methods"]
    methods["lm"], methods["sipt"] = methods["sipt"], methods["lm"]
    assert any("/methods/lm/link.ap[0]" in line for line in compare_simulate(swapped_methods))

    swapped_seeds = golden_simulate()
    for arm in swapped_seeds["results.json"]["methods"].values():
        for kind, values in arm.items():
            arm[kind] = values[::-1]
    found = compare_simulate(swapped_seeds)
    # (not the SIPT arm's link.ap: its two seeds differ by less than the link.ap tolerance, which
    # the LM arm's near-tied pooled ranking sets)
    for place in ("lm/link.ap[0]", "lm/final_loss[0]", "lm/radius[0]", "sipt/final_loss[0]", "sipt/final_terms.si[0]"):
        assert any(line.startswith(f"/results.json/methods/{place}: ") for line in found), place


def test_data_only_values_are_compared_exactly():
    """LC, configs and counts: one unit in the last kept digit fails, however small."""
    computed = golden_simulate()
    computed["results.json"]["local_consistency_per_seed"][0] = 0.999999
    computed["results.json"]["config"]["train"]["lr"] = 0.000500001
    computed["results.json"]["n_edges"][1] += 1
    found = compare_simulate(computed)
    assert [line.split(":")[0] for line in found] == [
        "/results.json/config/train/lr",
        "/results.json/local_consistency_per_seed[0]",
        "/results.json/n_edges[1]",
    ]
    assert all("compared exactly" in line for line in found[:2])


def trained_kinds(name: str) -> set[str]:
    rule = tolerance_rule(name, {})
    golden = json.loads((GOLDEN_DIR / name).read_text())
    return {kind_of(place) for place, value in float_places(golden) if rule(place) is not None}


def float_places(value, where: str = ""):
    """``(JSON place, number)`` of every non-integer number in ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from float_places(item, f"{where}/{key}")
    elif isinstance(value, list):
        for k, item in enumerate(value):
            yield from float_places(item, f"{where}[{k}]")
    elif isinstance(value, float):
        yield where, value


@pytest.mark.parametrize("name", sorted(TRAINED_VALUES))
def test_every_kind_of_trained_value_has_a_measured_spread(name):
    """tolerance.json was measured on today's golden files: rerun benchmarks/golden_spread.py when
    a golden file gains a kind of trained value. (A golden file it does not list yet gets the
    floors; the simulate run's must be there.)"""
    kinds = trained_kinds(name)
    assert kinds, f"{name}: TRAINED_VALUES matches no value"
    spread = read_spread()
    if name == "results/simulate.json" or name in spread:
        assert kinds <= set(spread.get(name, {})), sorted(kinds - set(spread.get(name, {})))


@pytest.mark.slow
def test_golden_simulate_passes_under_other_math_library_paths():
    """The golden simulate run, each in a fresh interpreter, under two math-library paths other than
    this process's."""
    for path in ("MKL_CBWR=COMPATIBLE", "2 threads"):
        finished = run_golden_tests(path, "test_simulate_results")
        assert finished.returncode == 0, f"under {path}:\n{finished.stdout[-6000:]}{finished.stderr[-2000:]}"
        assert "1 passed" in finished.stdout


# ------------------------------------------------------------------------------------------ environment
def test_environment_differences_name_exactly_the_versions_that_differ():
    """Recorded and installed versions built here, not read from this machine. A local label
    counts: PyPI's torch (``2.13.0``, or ``2.13.0+cu130`` as torch names itself) against
    ``2.13.0+cpu`` is another build of the same release, and the line says so."""
    recorded = {"numpy": "2.2.0", "torch": "2.13.0+cpu", "scipy": "1.16.0", "long-gone": "1.0"}
    installed = {"numpy": "2.3.1", "torch": "2.13.0+cu130", "scipy": "1.16.0", "brand-new": "0.1"}
    assert environment_differences(recorded, installed) == [
        "long-gone not installed, golden files made with 1.0",
        "numpy 2.3.1, golden files made with 2.2.0",
        "torch 2.13.0+cu130, golden files made with 2.13.0+cpu (same release 2.13.0, another build)",
        "not installed when the golden files were made: brand-new 0.1",
    ]
    assert environment_differences(recorded, {**recorded, "torch": "2.13.0"})[0] == (
        "torch 2.13.0, golden files made with 2.13.0+cpu (same release 2.13.0, another build)"
    )
    assert environment_differences(recorded, {**recorded, "torch": "2.12.1+cpu"}) == [
        "torch 2.12.1+cpu, golden files made with 2.13.0+cpu"
    ]
    assert environment_differences(recorded, dict(recorded)) == []


def test_the_recorded_environment_names_the_libraries_results_depend_on():
    recorded = read_freeze(golden_support.ENVIRONMENT_FILE.read_text())
    assert {"torch", "numpy", "scikit-learn", "transformers"} <= set(recorded)


def test_a_golden_failure_names_the_installed_versions_that_differ(tmp_path, monkeypatch):
    """The golden files' environment is committed beside them; a mismatch lists what differs from it
    (a fake environment file and fake installed versions: nothing read from this machine)."""
    (tmp_path / "environment.txt").write_text("numpy==2.2.0\nscipy==1.16.0\ntorch==2.13.0+cpu\n")
    (tmp_path / "result.json").write_text('{"ap": 0.058}\n')
    for variable in (golden_support.UPDATE_ENV, golden_support.RECORD_ENV):
        monkeypatch.delenv(variable, raising=False)  # compare even in a run that rewrites or records
    monkeypatch.setattr(golden_support, "GOLDEN_DIR", tmp_path)
    monkeypatch.setattr(golden_support, "ENVIRONMENT_FILE", tmp_path / "environment.txt")
    monkeypatch.setattr(
        golden_support, "installed_versions", lambda: {"numpy": "2.3.1", "scipy": "1.16.0", "torch": "2.13.0"}
    )
    with pytest.raises(pytest.fail.Exception) as failure:
        check_golden_json("result.json", {"ap": 0.057})
    message = str(failure.value)
    assert "/ap: 0.057, expected 0.058 (compared exactly)" in message
    assert "installed versions that differ from environment.txt (2):" in message
    assert "numpy 2.3.1, golden files made with 2.2.0" in message
    assert "torch 2.13.0, golden files made with 2.13.0+cpu (same release 2.13.0, another build)" in message
    assert "scipy" not in message
