"""Nothing lost, nothing silently wrong: the output rule (manifest, lock, --overwrite, --resume,
cleanup), the shared readers, range-checked flags and the messages of pretrain / embed /
finetune / domain, one test per defect."""

import errno
import json
import os
import stat
import subprocess
import sys

import numpy as np
import pytest
from hf_fakes import WORDS

from sipt_lab.cli.main import main
from sipt_lab.core import fileio, outputs
from sipt_lab.core.errors import SiptError
from sipt_lab.data.samples import read_samples
from sipt_lab.jobs.finetune import FinetuneJob, load_task

CHAR = ["--init", "char", "--encoder", "paper-small", "--steps", "2", "--batch-size", "8", "--device", "cpu", "--quiet"]


@pytest.fixture()
def files(tmp_path):
    """20 samples in 2 label cliques, with a labels file that has a header line."""
    rng = np.random.default_rng(0)
    ids = [f"s{i}" for i in range(20)]
    (tmp_path / "samples.tsv").write_text("".join(f"{i}\t{' '.join(rng.choice(WORDS, 6))}\n" for i in ids))
    (tmp_path / "edges.tsv").write_text(
        "".join(f"{a}\t{b}\n" for a in ids for b in ids if a < b and int(a[1:]) % 2 == int(b[1:]) % 2)
    )
    (tmp_path / "labels.tsv").write_text("id\tlabel\n" + "".join(f"{i}\tg{int(i[1:]) % 2}\n" for i in ids))
    return tmp_path


def pretrain(files, out, *extra) -> list[str]:
    return [
        "pretrain",
        "--samples",
        str(files / "samples.tsv"),
        "--edges",
        str(files / "edges.tsv"),
        "--out",
        str(out),
        *CHAR,
        *extra,
    ]


def error(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("sipt-lab: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def tree(path) -> dict:
    return {p.relative_to(path).as_posix(): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------- data loss
def test_overwrite_removes_only_the_files_sipt_lab_wrote_and_says_which(files, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(pretrain(files, out)) == 0
    (out / "notes.txt").write_text("mine")
    owned = outputs.owned_files(out)
    assert {"config.json", "checkpoint.pt", "history.csv", "result.json"} <= set(owned) and any(
        n.startswith("model/") for n in owned
    )
    capsys.readouterr()
    assert main(pretrain(files, out, "--overwrite")) == 0
    said = capsys.readouterr().out
    assert f"--overwrite: replacing {len(owned)} file(s) sipt-lab wrote" in said
    assert (out / "notes.txt").read_text() == "mine" and (out / "result.json").is_file()


def test_a_file_of_the_user_inside_model_is_never_deleted(files, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(pretrain(files, out)) == 0
    (out / "model" / "my_notes.txt").write_text("my notes on this model")
    before = tree(out)
    for flag in ("--overwrite", "--resume"):
        assert "model/my_notes.txt" in error(capsys, pretrain(files, out, flag))
    assert tree(out) == before


def test_resume_and_overwrite_together_are_refused(files, tmp_path, capsys):
    assert "--resume and --overwrite contradict" in error(
        capsys, pretrain(files, tmp_path / "run", "--resume", "--overwrite")
    )
    assert not (tmp_path / "run").exists()


def test_a_live_lock_refuses_a_second_run_and_a_stale_one_is_taken_over(files, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (out / outputs.RUN_LOCK).write_text(json.dumps({"pid": sleeper.pid, "host": os.uname().nodename}))
        assert f"is in use by process {sleeper.pid}" in error(capsys, pretrain(files, out))
    finally:
        sleeper.kill()
        sleeper.wait()
    assert main(pretrain(files, out)) == 0  # the lock's process is dead: stale, taken over
    assert not (out / outputs.RUN_LOCK).exists()


def test_a_run_that_fails_before_its_first_checkpoint_leaves_nothing(files, tmp_path, capsys, monkeypatch):
    import sipt_lab.jobs.pretrain as pretraining

    def broken(*args, **kwargs):
        raise SiptError("training broke")

    monkeypatch.setattr(pretraining, "pretrain", broken)
    assert "training broke" in error(capsys, pretrain(files, tmp_path / "run"))
    assert not (tmp_path / "run").exists()
    (tmp_path / "kept").mkdir()
    assert "training broke" in error(capsys, pretrain(files, tmp_path / "kept"))
    assert list((tmp_path / "kept").iterdir()) == []  # an existing directory stays, empty


def test_embed_refuses_to_replace_its_outputs_without_overwrite(files, tmp_path, capsys):
    assert main(pretrain(files, tmp_path / "run")) == 0
    emb = tmp_path / "emb.npy"
    embed = [
        "embed",
        "--model",
        str(tmp_path / "run"),
        "--samples",
        str(files / "samples.tsv"),
        "--out",
        str(emb),
        "--device",
        "cpu",
    ]
    assert main(embed) == 0  # a run directory is taken as its model/
    vectors = np.load(emb)
    assert vectors.shape[0] == 20 and (tmp_path / "emb.ids.tsv").read_text().splitlines()[0] == "s0"
    emb.write_bytes(b"precious")
    assert "emb.npy exists; pass --overwrite" in error(capsys, embed)
    assert emb.read_bytes() == b"precious"
    emb.unlink()
    assert "emb.ids.tsv exists; pass --overwrite" in error(capsys, embed)
    assert not emb.exists()
    assert main([*embed, "--overwrite"]) == 0
    np.testing.assert_array_equal(np.load(emb), vectors)
    (tmp_path / "emb.ids.tsv").unlink()
    (tmp_path / "emb.ids.tsv").mkdir()
    assert "emb.ids.tsv is a directory" in error(capsys, [*embed, "--overwrite"])


def test_embed_takes_an_init_name_as_finetune_does(files, tmp_path):
    embed = [
        "embed",
        "--model",
        "char",
        "--samples",
        str(files / "samples.tsv"),
        "--out",
        str(tmp_path / "e"),
        "--device",
        "cpu",
    ]
    assert main(embed) == 0 and np.load(tmp_path / "e.npy").shape[0] == 20


# ---------------------------------------------------------------- finetune
def finetune_files(tmp_path, labels: list[str]) -> list[str]:
    rng = np.random.default_rng(1)
    ids = [f"t{i}" for i in range(len(labels))]
    (tmp_path / "ft.tsv").write_text("".join(f"{i}\t{' '.join(rng.choice(WORDS, 5))}\n" for i in ids))
    (tmp_path / "ft_labels.tsv").write_text("".join(f"{i}\t{y}\n" for i, y in zip(ids, labels)))
    return [
        "finetune",
        "--model",
        "char",
        "--samples",
        str(tmp_path / "ft.tsv"),
        "--labels",
        str(tmp_path / "ft_labels.tsv"),
        "--mode",
        "probe",
        "--device",
        "cpu",
    ]


@pytest.mark.slow
def test_finetune_refuses_an_earlier_run_and_overwrite_drops_its_stale_comparison(tmp_path, capsys):
    argv = [*finetune_files(tmp_path, [f"c{i % 2}" for i in range(30)]), "--out", str(tmp_path / "out")]
    assert main([*argv, "--baseline", "char"]) == 0
    assert (tmp_path / "out" / "comparison.csv").is_file()
    results = (tmp_path / "out" / "results.json").read_bytes()
    assert "holds a finished run; pass --overwrite" in error(capsys, argv)
    assert (tmp_path / "out" / "results.json").read_bytes() == results
    assert main([*argv, "--overwrite"]) == 0
    assert not (tmp_path / "out" / "comparison.csv").exists()  # no stale comparison beside the new results
    assert json.loads((tmp_path / "out" / "results.json").read_text())["comparisons"] == []


def test_regression_labels_are_numbers_not_strings(tmp_path):
    values = ["10.0", "2.0", "3.5", "-1e-3"] * 5
    finetune_files(tmp_path, values)
    job = FinetuneJob(
        model="char", samples=str(tmp_path / "ft.tsv"), labels=str(tmp_path / "ft_labels.tsv"), kind="regression"
    )
    _, _, task = load_task(job)
    assert task.labels.dtype == np.float64 and task.labels[:4].tolist() == [10.0, 2.0, 3.5, -1e-3]
    for bad in ("abc", "nan", "inf"):
        finetune_files(tmp_path, [*values[:-1], bad])
        with pytest.raises(SiptError, match=f"regression target '{bad}' .* is not a finite number"):
            load_task(job)


def test_multilabel_labels_are_comma_separated_names_and_documented(tmp_path, capsys):
    finetune_files(tmp_path, ["a,b", "b", "c, a", "a"] * 4)
    job = FinetuneJob(
        model="char", samples=str(tmp_path / "ft.tsv"), labels=str(tmp_path / "ft_labels.tsv"), kind="multilabel"
    )
    _, _, task = load_task(job)
    assert task.label_names == ("a", "b", "c") and task.labels[:4].tolist() == [
        [1, 1, 0],
        [0, 1, 0],
        [1, 0, 1],
        [1, 0, 0],
    ]
    with pytest.raises(SystemExit):
        main(["finetune", "--help"])
    assert "id<TAB>a,b,c" in " ".join(capsys.readouterr().out.split())


def test_a_single_class_message_names_the_label_not_a_numpy_code(tmp_path, capsys):
    argv = finetune_files(tmp_path, ["only"] * 27 + ["other"] * 3)
    ids = [f"t{i}" for i in range(30)]
    (tmp_path / "splits.tsv").write_text(
        "".join(f"{i}\t{'train' if k < 20 else 'validation' if k < 25 else 'test'}\n" for k, i in enumerate(ids))
    )
    err = error(capsys, [*argv, "--splits", str(tmp_path / "splits.tsv"), "--out", str(tmp_path / "o")])
    assert "has one class only ('only')" in err and "np." not in err
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------- readers
def test_consistency_and_pretrain_read_the_same_header_line_alike(files, tmp_path, capsys):
    assert (
        main(["consistency", "--edges", str(files / "edges.tsv"), "--labels", str(files / "labels.tsv"), "--json"]) == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["n_nodes"] == 20 and report["n_classes"] == 2  # the header is no node
    assert main(pretrain(files, tmp_path / "run", "--labels", str(files / "labels.tsv"))) == 0


def test_jsonl_ids_with_a_tab_or_a_line_break_are_refused(tmp_path):
    for bad in ("a\tb", "a\nb"):
        (tmp_path / "s.jsonl").write_text(
            json.dumps({"id": "x", "text": "t"}) + "\n" + json.dumps({"id": bad, "text": "u"}) + "\n"
        )
        with pytest.raises(SiptError, match="line 2: id .* holds a tab or line break"):
            read_samples(tmp_path / "s.jsonl")


def test_a_huge_id_is_cut_in_messages(tmp_path):
    huge = "x" * 10_000_000
    (tmp_path / "s.tsv").write_text(f"{huge}\tone\n{huge}\ttwo\n")
    with pytest.raises(SiptError, match="repeats line 1") as caught:
        read_samples(tmp_path / "s.tsv")
    assert len(str(caught.value)) < 300 and "10,000,002 characters" in str(caught.value)


def test_json_files_hold_null_where_python_would_write_nan(tmp_path):
    fileio.write_json_atomic(
        tmp_path / "r.json", {"a": float("nan"), "b": [np.float32("inf"), 1.5], "c": np.float64(2)}
    )
    assert json.loads((tmp_path / "r.json").read_text(), parse_constant=lambda name: pytest.fail(name)) == {
        "a": None,
        "b": [None, 1.5],
        "c": 2.0,
    }


# ---------------------------------------------------------------- flags and messages
@pytest.mark.parametrize(
    "extra, message",
    [
        (["--lr", "nan"], "--lr must be a finite number > 0, got 'nan'"),
        (["--epochs", "nan"], "--epochs must be a finite number > 0"),
        (
            ["--seed", "99999999999999999999"],
            "--seed must be <= 9,223,372,036,854,775,807 (a 64-bit integer), got 99999999999999999999",
        ),
        (["--init", ""], "--init is empty"),
        (["--epochs", "1e9"], "--epochs 1e+09 gives"),
    ],
)
def test_pretrain_flags_are_parsed_with_their_ranges(files, tmp_path, capsys, extra, message):
    args = [a for a in pretrain(files, tmp_path / "run", *extra)]
    if "--epochs" in extra:  # --epochs and --steps exclude each other
        i = args.index("--steps")
        del args[i : i + 2]
    assert message in error(capsys, args)
    assert not (tmp_path / "run").exists()


def test_domain_run_refuses_bad_values_before_any_arm_trains(tmp_path, capsys, monkeypatch):
    import sipt_lab.studies.domain.run as domain_run

    monkeypatch.setattr(domain_run, "run_domain", lambda *a, **k: pytest.fail("trained anyway"))
    base = [
        "domain",
        "run",
        "wiki",
        "--init",
        "char",
        "--seeds",
        "1",
        "--executor",
        "serial",
        "--out",
        str(tmp_path / "o"),
    ]
    assert "--lambdas must be a finite number in [0, 1], got '1.5'" in error(capsys, [*base, "--lambdas", "1.5"])
    for samples in ("0", "-5"):
        assert "--samples must be >= 1" in error(capsys, [*base, "--samples", samples])
    assert "--lr must be a finite number > 0, got 'nan'" in error(
        capsys, ["finetune", "--model", "char", "--lr", "nan", "--out", "x"]
    )
    assert not (tmp_path / "o").exists()


def test_data_fetch_refuses_an_empty_target(capsys):
    assert "--to is empty" in error(capsys, ["data", "fetch", "tape-fluorescence", "--to", ""])


def test_ctrl_c_in_pretrain_says_resume(files, tmp_path, capsys, monkeypatch):
    import sipt_lab.jobs.pretrain as pretraining

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pretraining, "run_pretraining", interrupted)
    assert main(pretrain(files, tmp_path / "run")) == 130
    assert "pass --resume to the same command" in capsys.readouterr().err


def test_resuming_with_more_steps_is_refused_when_it_would_splice_schedules(files, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(pretrain(files, out, "--schedule", "linear")) == 0
    more = [a if a != "2" else "4" for a in pretrain(files, out, "--schedule", "linear", "--resume")]
    before = tree(out)
    assert "planned for 2 steps; resuming it with 4 would splice two learning-rate schedules" in error(capsys, more)
    assert tree(out) == before  # config.json included: a refused command changes nothing
    assert "another configuration" in error(
        capsys, [*pretrain(files, out, "--schedule", "linear", "--resume"), "--lr", "0.5"]
    )
    assert tree(out) == before
    constant = tmp_path / "constant"
    assert main(pretrain(files, constant, "--schedule", "constant", "--warmup", "0")) == 0
    longer = [
        a if a != "2" else "4" for a in pretrain(files, constant, "--schedule", "constant", "--warmup", "0", "--resume")
    ]
    assert main(longer) == 0
    assert json.loads((constant / "result.json").read_text())["extended_from_steps"] == 2
    assert len((constant / "history.csv").read_text().splitlines()) == 5


def test_an_exported_hugging_face_model_respects_the_umask(tiny_bert, files, tmp_path):
    old = os.umask(0o022)
    try:
        assert main(pretrain(files, tmp_path / "run", "--init", str(tiny_bert))) == 0
    finally:
        os.umask(old)
    model = tmp_path / "run" / "model"
    assert stat.S_IMODE(model.stat().st_mode) == 0o755
    assert {stat.S_IMODE(p.stat().st_mode) for p in model.rglob("*") if p.is_file()} == {0o644}


def test_finetune_never_overwrites_a_pretrain_run(files, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(pretrain(files, run)) == 0
    before = tree(run)
    argv = [*finetune_files(tmp_path, [f"c{i % 2}" for i in range(30)]), "--out", str(run), "--overwrite"]
    assert "holds the output of pretrain, not of a finetune run" in error(capsys, argv)
    assert tree(run) == before


def test_overwrite_never_replaces_an_input_of_the_same_command(files, tmp_path, capsys):
    samples = tmp_path / "s.npy"  # a samples file whatever its name
    samples.write_bytes((files / "samples.tsv").read_bytes())
    embed = ["embed", "--model", "char", "--samples", str(samples), "--device", "cpu", "--overwrite"]
    assert "is also an input of this command" in error(capsys, [*embed, "--out", str(samples)])
    assert samples.read_bytes() == (files / "samples.tsv").read_bytes()
    out = tmp_path / "run"
    assert main(pretrain(files, out)) == 0
    before = tree(out)
    with pytest.raises(SiptError, match="an input of this command, which --overwrite would remove"):
        with outputs.run_output(out, "pretrain", finished="result.json", overwrite=True, inputs=[out / "model"]):
            pass  # a pretrain --init RUN/model --out RUN --overwrite: its init would be removed
    assert tree(out) == before


@pytest.mark.parametrize("command", ["pretrain", "embed"])
def test_a_full_disk_is_one_line_naming_the_file_and_leaves_no_output_that_looks_complete(
    files, tmp_path, capsys, monkeypatch, command
):
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)  # every atomic write fails as on a full disk
    out = tmp_path / "out"
    argv = (
        pretrain(files, out)
        if command == "pretrain"
        else [
            "embed",
            "--model",
            "char",
            "--samples",
            str(files / "samples.tsv"),
            "--device",
            "cpu",
            "--out",
            str(out / "e.npy"),
        ]
    )
    out.mkdir()
    err = error(capsys, argv)
    assert "the disk is full: cannot write " + str(out) in err
    assert sorted(p.name for p in out.iterdir()) == []
