"""A battery of hostile inputs over every subcommand: numeric flags (nan, inf, negative, zero,
huge, not a number), paths (missing, file for directory, directory for file, empty, unwritable,
existing output) and input files (BOM, CRLF, header lines, tabs in ids, duplicate ids, empty
lines, unknown ids, non-UTF-8, corrupt gzip).

Every case must end in exit status 0 with a correct output, or in a one-line ``sipt-lab: error:``
with exit status 2; never a traceback, and never a changed byte in a file the command does not
own. Commands whose work is long (simulate, graph build, figures, lambda-sweep, domain run) stop
where the work would start (a stub raises :class:`Reached`): their cases check validation only.
pretrain, embed, finetune and consistency run for real on tiny inputs (a char encoder, one step).
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from sipt_lab.cli.main import main
from sipt_lab.core import outputs
from sipt_lab.graphs.tsv import read_labels_tsv

N = 12
IDS = [f"s{i}" for i in range(N)]
TEXTS = [f"w{i} alpha beta gamma delta" for i in range(N)]
BAD_NUMBERS = ["nan", "inf", "-inf", "-1", "0", "1e400", "99999999999999999999", "abc", "", "0x10"]
OUTCOMES: Counter = Counter()


class Reached(Exception):
    """Raised by a stub where a long command would start its work: validation passed."""


def _reached(*args, **kwargs):
    raise Reached


def good_files(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "samples.tsv").write_text("".join(f"{i}\t{t}\n" for i, t in zip(IDS, TEXTS)))
    (root / "edges.tsv").write_text(
        "".join(f"{a}\t{b}\n" for k, a in enumerate(IDS) for b in IDS[k + 1 :] if int(a[1:]) % 2 == int(b[1:]) % 2)
    )
    (root / "labels.tsv").write_text("".join(f"{i}\tg{int(i[1:]) % 2}\n" for i in IDS))
    (root / "values.tsv").write_text("".join(f"{i}\t{int(i[1:]) * 1.5}\n" for i in IDS))
    (root / "splits.tsv").write_text(
        "".join(f"{i}\t{'train' if k < 8 else 'validation' if k < 10 else 'test'}\n" for k, i in enumerate(IDS))
    )
    (root / "afile").write_text("not a directory\n")
    (root / "adir").mkdir(exist_ok=True)
    (root / "foreign").mkdir(exist_ok=True)
    (root / "foreign" / "notes.txt").write_text("the user's\n")


#: Variants of an input file: name -> (file name, bytes).
def input_variants() -> dict[str, tuple[str, bytes]]:
    samples = "".join(f"{i}\t{t}\n" for i, t in zip(IDS, TEXTS))
    edges = "".join(f"{a}\t{b}\n" for k, a in enumerate(IDS) for b in IDS[k + 1 :] if int(a[1:]) % 2 == int(b[1:]) % 2)
    labels = "".join(f"{i}\tg{int(i[1:]) % 2}\n" for i in IDS)
    jsonl = "".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(IDS, TEXTS))
    return {
        "samples-bom": ("samples.tsv", ("\ufeff" + samples).encode()),
        "samples-crlf": ("samples.tsv", samples.replace("\n", "\r\n").encode()),
        "samples-header": ("samples.tsv", ("id\ttext\n" + samples).encode()),
        "samples-empty-lines": ("samples.tsv", samples.replace("\n", "\n\n").encode()),
        "samples-duplicate-id": ("samples.tsv", (samples + "s0\tagain\n").encode()),
        "samples-no-tab": ("samples.tsv", (samples + "lonely line\n").encode()),
        "samples-latin1": ("samples.tsv", (samples + "s99\tcaf\xe9\n").encode("latin-1")),
        "samples-empty": ("samples.tsv", b""),
        "samples-jsonl-tab-id": ("samples.jsonl", (jsonl + json.dumps({"id": "x\ty", "text": "t"}) + "\n").encode()),
        "samples-jsonl-newline-id": (
            "samples.jsonl",
            (jsonl + json.dumps({"id": "x\ny", "text": "t"}) + "\n").encode(),
        ),
        "samples-jsonl-broken": ("samples.jsonl", (jsonl + "{not json\n").encode()),
        "samples-gz-corrupt": ("samples.tsv.gz", gzip.compress(samples.encode(), mtime=0)[:40]),
        "edges-bom-crlf": ("edges.tsv", ("\ufeff" + edges.replace("\n", "\r\n")).encode()),
        "edges-header": ("edges.tsv", ("source\ttarget\n" + edges).encode()),
        "edges-unknown-id": ("edges.tsv", (edges + "s0\tnobody\n").encode()),
        "edges-three-fields": ("edges.tsv", (edges + "s0\ts1\ts2\n").encode()),
        "edges-none": ("edges.tsv", b"# only a comment\n"),
        "edges-latin1": ("edges.tsv", (edges + "s0\t\xe9\n").encode("latin-1")),
        "labels-header": ("labels.tsv", ("id\tlabel\n" + labels).encode()),
        "labels-bom-crlf": ("labels.tsv", ("\ufeff" + labels.replace("\n", "\r\n")).encode()),
        "labels-unknown-id": ("labels.tsv", (labels + "nobody\tg0\n").encode()),
        "labels-conflict": ("labels.tsv", (labels + "s0\tg1\n").encode()),
        "labels-missing-one": ("labels.tsv", "".join(labels.splitlines(True)[1:]).encode()),
        "labels-huge-id": ("labels.tsv", (labels + "x" * 100_000 + "\tg0\n").encode()),
        "labels-one-class": ("labels.tsv", "".join(f"{i}\tsame\n" for i in IDS).encode()),
    }


# ------------------------------------------------------------------------------------------------ cases
def _argv(options: dict) -> list[str]:
    argv = []
    for key, value in options.items():
        if key.startswith("_"):
            argv.append(value)
        elif value is True:
            argv.append(key)
        elif value is not None:
            argv += [key, *([value] if isinstance(value, str) else value)]
    return argv


PRETRAIN = {
    "_cmd": "pretrain",
    "--samples": "{d}/samples.tsv",
    "--edges": "{d}/edges.tsv",
    "--init": "char",
    "--encoder": "paper-small",
    "--steps": "1",
    "--batch-size": "4",
    "--device": "cpu",
    "--quiet": True,
    "--out": "{d}/out",
}
EMBED = {"_cmd": "embed", "--model": "char", "--samples": "{d}/samples.tsv", "--out": "{d}/emb.npy", "--device": "cpu"}
FINETUNE = {
    "_cmd": "finetune",
    "--model": "char",
    "--samples": "{d}/samples.tsv",
    "--labels": "{d}/labels.tsv",
    "--splits": "{d}/splits.tsv",
    "--mode": "probe",
    "--device": "cpu",
    "--out": "{d}/ft",
}
CONSISTENCY = {"_cmd": "consistency", "--edges": "{d}/edges.tsv", "--labels": "{d}/labels.tsv", "--json": True}
SWEEP = {**PRETRAIN, "_cmd": "lambda-sweep", "--lambdas": ["0", "0.1"]}
DOMAIN = {
    "_cmd": "domain",
    "_action": "run",
    "_name": "wiki",
    "--init": "char",
    "--seeds": "1",
    "--executor": "serial",
    "--out": "{d}/dom",
}
SIMULATE = {"_cmd": "simulate", "--graph": "cliques", "--seeds": "1", "--executor": "serial", "--out": "{d}/sim"}
GRAPH = {"_cmd": "graph", "_action": "build", "--graph": "cliques", "--quiet": True, "--out": "{d}/built"}
FIGURES = {"_cmd": "figures", "--only": "corollary1", "--out": "{d}/figs"}
DATA = {"_cmd": "data", "_action": "fetch", "_name": "tape-fluorescence", "--to": "{d}/data"}

#: Per command, its numeric flags with one cheap valid value each.
NUMERIC = {
    "pretrain": (
        PRETRAIN,
        {
            "--lambda-si": "0.5",
            "--epochs": "0.5",
            "--steps": "2",
            "--batch-size": "3",
            "--grad-accum": "2",
            "--lr": "1e-3",
            "--warmup": "0.5",
            "--max-length": "16",
            "--seed": "7",
            "--save-every": "1",
        },
    ),
    "lambda-sweep": (SWEEP, {"--lambdas": "0.3", "--validation": "0.2", "--lr": "1e-3", "--seed": "3"}),
    "embed": (EMBED, {"--batch-size": "5"}),
    "finetune": (
        FINETUNE,
        {"--seeds": "1", "--lr": "1e-3", "--epochs": "1", "--batch-size": "4", "--max-length": "16"},
    ),
    "domain": (
        DOMAIN,
        {
            "--seeds": "2",
            "--samples": "50",
            "--steps": "3",
            "--lambdas": "0.2",
            "--teacher-layer": "1",
            "--grad-accum": "2",
        },
    ),
    "simulate": (
        SIMULATE,
        {"--noise": "0.1", "--nodes": "60", "--seeds": "2", "--seed": "5", "--lambda-si": "0.3", "--steps": "3"},
    ),
    "graph": (GRAPH, {"--nodes": "60", "--noise": "0.1", "--seed": "4", "--topics": "5", "--heldout": "3"}),
    "figures": (FIGURES, {"--seeds": "2", "--steps": "3", "--nodes": "60", "--passes": "2", "--scale-nodes": "50"}),
}
#: Per command, its path flags and what each must be: a file to read, or an output ("out").
PATHS = {
    "pretrain": (
        PRETRAIN,
        {"--samples": "in", "--edges": "in", "--labels": "in", "--init": "model", "--teacher": "model", "--out": "out"},
    ),
    "embed": (EMBED, {"--model": "model", "--samples": "in", "--out": "outfile"}),
    "finetune": (
        FINETUNE,
        {
            "--model": "model",
            "--baseline": "model",
            "--samples": "in",
            "--labels": "in",
            "--splits": "in",
            "--out": "out",
        },
    ),
    "consistency": (CONSISTENCY, {"--edges": "in", "--labels": "in"}),
    "lambda-sweep": (SWEEP, {"--samples": "in", "--out": "out"}),
    "domain": (DOMAIN, {"--init": "model", "--data": "in", "--teacher": "model", "--out": "out"}),
    "simulate": (SIMULATE, {"--corpus": "in", "--out": "out"}),
    "graph": (GRAPH, {"--corpus": "in", "--out": "out"}),
    "figures": (FIGURES, {"--out": "out"}),
    "data": (DATA, {"--to": "out"}),
}
PATH_VALUES = {
    "in": {"missing": "{d}/missing.tsv", "directory": "{d}/adir", "empty": "", "blank": "  "},
    "model": {"missing": "{d}/missing", "file": "{d}/afile", "empty-dir": "{d}/adir", "empty": ""},
    "out": {
        "file": "{d}/afile",
        "under-file": "{d}/afile/sub",
        "empty": "",
        "foreign": "{d}/foreign",
        "unwritable": "/proc/sipt-lab-battery",
    },
    "outfile": {
        "directory": "{d}/adir",
        "under-file": "{d}/afile/e.npy",
        "empty": "",
        "unwritable": "/proc/sipt-lab-battery/e.npy",
    },
}
#: Which commands read which variant kinds.
READERS = {
    "pretrain": ("samples", "edges", "labels"),
    "embed": ("samples",),
    "finetune": ("samples", "labels"),
    "consistency": ("edges", "labels"),
}


def cases() -> list[tuple[str, dict, str | None, tuple[str, bytes] | None]]:
    """``(id, options, output key, input variant)`` of every battery case."""
    found = []
    for command, (base, flags) in NUMERIC.items():
        for flag, good in flags.items():
            for value in [good, *BAD_NUMBERS]:
                options = {**base, flag: value}
                if flag == "--epochs":
                    options["--steps"] = None
                found.append((f"{command} {flag} {value!r}", options, None, None))
    for command, (base, flags) in PATHS.items():
        for flag, kind in flags.items():
            for name, value in PATH_VALUES[kind].items():
                found.append((f"{command} {flag} {name}", {**base, flag: value}, None, None))
    variants = input_variants()
    for command, kinds in READERS.items():
        base = {"pretrain": PRETRAIN, "embed": EMBED, "finetune": FINETUNE, "consistency": CONSISTENCY}[command]
        for name, (file_name, data) in variants.items():
            kind = name.split("-")[0]
            if kind in kinds:
                options = {**base, f"--{kind}": "{d}/variant/" + file_name}
                found.append((f"{command} {name}", options, None, (file_name, data)))
    # existing outputs: each writing command run twice into the same place, then with --overwrite
    for command, base in (("pretrain", PRETRAIN), ("embed", EMBED), ("finetune", FINETUNE)):
        for second in ("again", "overwrite"):
            found.append((f"{command} existing output {second}", base, second, None))
    found.append(
        ("finetune regression labels", {**FINETUNE, "--labels": "{d}/values.tsv", "--kind": "regression"}, None, None)
    )
    found.append(("pretrain --resume --overwrite", {**PRETRAIN, "--resume": True, "--overwrite": True}, None, None))
    return found


CASES = cases()


@pytest.fixture(scope="module", autouse=True)
def _tally(request):
    """After the battery, one line with its outcomes (the figures the README's reliability section quotes)."""
    yield
    total = sum(OUTCOMES.values())
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    capture = request.config.pluginmanager.get_plugin("capturemanager")
    if total and reporter is not None and capture is not None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(
                f"\nCLI battery: {total} cases: {OUTCOMES[0]} exit 0 with a correct output, {OUTCOMES[2]} one-line "
                f"errors (exit 2), {OUTCOMES['reached']} valid up to the work of a long command"
            )


@pytest.fixture(autouse=True)
def _stubs(monkeypatch):
    """Long commands stop where their work would start."""
    import sipt_lab.domains.datasets as datasets
    import sipt_lab.jobs.lambda_sweep as lambda_sweep
    import sipt_lab.studies.domain.run as domain_run
    import sipt_lab.studies.paper.figures as figures
    import sipt_lab.studies.simulation.simulate as simulate
    import sipt_lab.synthetic.builder as builder

    monkeypatch.setattr(domain_run, "run_domain", _reached)
    monkeypatch.setattr(simulate, "run_grid", _reached)
    monkeypatch.setattr(builder, "build_dataset", _reached)
    monkeypatch.setattr(lambda_sweep, "run_grid", _reached)  # each λ is a grid cell
    monkeypatch.setitem(figures.FIGURES, "corollary1", _reached)
    monkeypatch.setattr(datasets, "fetch", _reached)  # never a download


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {p.relative_to(root).as_posix(): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def run(argv: list[str], capsys) -> tuple[int | str, str, str]:
    capsys.readouterr()
    try:
        status = main(argv)
    except Reached:
        status = "reached"
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def output_of(options: dict, d: Path) -> list[Path]:
    """The paths a case's command owns (it may write there)."""
    owned = []
    for key in ("--out", "--to"):
        if options.get(key):
            out = Path(options[key].format(d=d))
            owned.append(out)
            if options["_cmd"] == "embed":
                out = out if out.suffix == ".npy" else out.with_name(out.name + ".npy")
                owned += [out, out.with_name(out.name.removesuffix(".npy") + ".ids.tsv")]
    return owned


def check_output(options: dict, d: Path, out: str) -> None:
    """What a successful run of the case's command must have written or printed."""
    command = options["_cmd"]
    strict = {"parse_constant": lambda name: pytest.fail(f"bare {name} in JSON")}
    if command == "pretrain":
        run_dir = Path(options["--out"].format(d=d))
        assert json.loads((run_dir / "result.json").read_text(), **strict)["n_samples"] == N
        assert {"config.json", "history.csv", "result.json"} <= set(outputs.owned_files(run_dir))
    elif command == "embed":
        (vectors_path,) = [p for p in output_of(options, d) if p.suffix == ".npy"][:1]
        ids = vectors_path.with_name(vectors_path.name.removesuffix(".npy") + ".ids.tsv").read_text().splitlines()
        assert np.load(vectors_path).shape[0] == len(ids) == N and ids == IDS
    elif command == "finetune":
        report = json.loads((Path(options["--out"].format(d=d)) / "results.json").read_text(), **strict)
        assert sum(report["sizes"].values()) == N
    elif command == "consistency":
        report = json.loads(out)
        nodes, labels = read_labels_tsv(options["--labels"])
        assert report["n_nodes"] == len(nodes) and report["n_classes"] == len(set(labels))


@pytest.mark.parametrize("case", CASES, ids=[case[0] for case in CASES])
def test_battery(case, tmp_path, capsys):
    name, options, second, variant = case
    d = tmp_path / "d"
    good_files(d)
    if variant is not None:
        (d / "variant").mkdir()
        (d / "variant" / variant[0]).write_bytes(variant[1])
    options = {
        key: (
            [v.format(d=d) for v in value]
            if isinstance(value, list)
            else value.format(d=d)
            if isinstance(value, str)
            else value
        )
        for key, value in options.items()
    }
    argv = _argv(options)
    if second is not None:
        first, _, err = run(argv, capsys)
        assert first == 0, err
        argv = [*argv, "--overwrite"] if second == "overwrite" else argv
    before = snapshot(tmp_path)
    status, out, err = run(argv, capsys)
    OUTCOMES[status] += 1
    assert status in (0, 2, "reached"), (status, err)
    assert "Traceback" not in err
    if status == 2:
        assert err.startswith("sipt-lab: error: ") and err.count("\n") == 1, err
        assert snapshot(tmp_path) == before, "a refused command changed files"
        return
    owned = [p.relative_to(tmp_path).as_posix() for p in output_of(options, d) if tmp_path in p.parents]
    after = snapshot(tmp_path)
    changed = {path for path in set(before) | set(after) if before.get(path, b"?") != after.get(path, b"?")}
    foreign = [path for path in changed if not any(path == o or path.startswith(o + "/") for o in owned)]
    assert not foreign, f"changed files the command does not own: {foreign[:5]}"
    if status == 0:
        check_output(options, d, out)


#: Refusals that depend on more than one flag's range (the samples' count, another value): --print-config,
#: which reads no file, leaves them to the run.
NOT_RANGES = {("lambda-sweep", "--lambdas", "0")}
#: The long commands (stopped where their work starts), whose flags leave some ranges to their configs.
PRINT_CONFIG_CASES = [
    (command, flag, value)
    for command in ("lambda-sweep", "domain", "simulate", "graph", "figures")
    for flag in NUMERIC[command][1]
    for value in BAD_NUMBERS
    if (command, flag, value) not in NOT_RANGES
]


@pytest.mark.parametrize("command, flag, value", PRINT_CONFIG_CASES, ids=[" ".join(c) for c in PRINT_CONFIG_CASES])
def test_print_config_refuses_a_value_the_run_refuses_with_the_same_line(tmp_path, capsys, command, flag, value):
    base, _ = NUMERIC[command]
    d = tmp_path / "d"
    good_files(d)
    options = {**base, flag: value, **({"--steps": None} if flag == "--epochs" else {})}
    argv = [part.replace("{d}", str(d)) for part in _argv(options)]
    printed, _, printed_err = run([*argv, "--print-config"], capsys)
    OUTCOMES[printed] += 1
    assert printed in (0, 2) and "Traceback" not in printed_err
    status, _, err = run(argv, capsys)
    if printed == 0:
        assert status != 2, f"the run refuses what --print-config printed: {err}"
    else:
        assert (status, err) == (2, printed_err)
