"""``sipt-lab lambda-sweep``: λ_SI chosen by retrieving held-out samples' links, resumable, guarded."""

import csv
import json

import numpy as np
import pytest
from hf_fakes import WORDS

from sipt_lab.cli.main import main
from sipt_lab.data.samples import read_samples
from sipt_lab.data.splits import link_queries
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.jobs import lambda_sweep

N_GROUPS, GROUP_SIZE = 4, 10


@pytest.fixture()
def group_files(tmp_path):
    """40 samples in 4 label cliques; each group writes from its own quarter of the vocabulary."""
    rng = np.random.default_rng(0)
    pools = np.array_split(np.array(WORDS), N_GROUPS)
    ids = [f"s{i}" for i in range(N_GROUPS * GROUP_SIZE)]
    group = {i: k % N_GROUPS for k, i in enumerate(ids)}
    (tmp_path / "samples.tsv").write_text("".join(f"{i}\t{' '.join(rng.choice(pools[group[i]], 6))}\n" for i in ids))
    (tmp_path / "labels.tsv").write_text("".join(f"{i}\tg{group[i]}\n" for i in ids))
    (tmp_path / "edges.tsv").write_text(
        "".join(f"{a}\t{b}\n" for a in ids for b in ids if a < b and group[a] == group[b])
    )
    return tmp_path


def _args(files, out, *extra):
    return [
        "lambda-sweep",
        "--samples",
        str(files / "samples.tsv"),
        "--edges",
        str(files / "edges.tsv"),
        "--init",
        "char",
        "--encoder",
        "paper-small",
        "--steps",
        "12",
        "--batch-size",
        "16",
        "--lr",
        "1e-3",
        "--max-length",
        "48",
        "--device",
        "cpu",
        "--out",
        str(out),
        "--quiet",
        *extra,
    ]


@pytest.mark.slow
def test_sweep_holds_out_validation_samples_and_chooses_the_best_validation_lambda(
    group_files, tmp_path, capsys, monkeypatch
):
    out = tmp_path / "sweep"
    assert (
        main(
            _args(
                group_files,
                out,
                "--lambdas",
                "0",
                "0.5",
                "--validation",
                "0.2",
                "--labels",
                str(group_files / "labels.tsv"),
            )
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "chosen λ_SI" in printed

    validation = (out / "split" / "validation_ids.txt").read_text().split()
    assert len(validation) == 8  # 0.2 of the 40 linked samples
    pretraining_ids = set(read_samples(out / "split" / "samples.jsonl").ids)
    assert len(pretraining_ids) == 32 and not pretraining_ids & set(validation)
    split_edges = [line.split("\t") for line in (out / "split" / "edges.tsv").read_text().splitlines()]
    assert split_edges and all(u in pretraining_ids and v in pretraining_ids for u, v in split_edges)
    assert len(split_edges) == sum(
        1 for a in pretraining_ids for b in pretraining_ids if a < b and int(a[1:]) % 4 == int(b[1:]) % 4
    )

    with open(out / "lambda_sweep.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["embedder"] for row in rows] == ["random", "initial", "lm", "sipt"]
    for row in rows:
        assert all(
            0.0 < float(row[f"{split}_{metric}"]) <= 1.0
            for split in ("validation", "pt")
            for metric in ("mrr", "lrap", "ndcg", "ap")
        )
    trained = rows[2:]
    best = max(trained, key=lambda row: float(row["validation_mrr"]))
    assert [row["chosen"] == "True" for row in rows] == [row is best for row in rows]
    result = json.loads((out / "result.json").read_text())
    assert result["chosen_lambda_si"] == float(best["lambda_si"]) and result["n_validation"] == 8
    assert result["model"].endswith(f"lambda-{float(best['lambda_si']):g}/model")
    for value in ("0", "0.5"):  # each λ is an ordinary pretrain run, with its own report
        run = json.loads((out / f"lambda-{value}" / "result.json").read_text())
        assert run["n_samples"] == 32 and "after" in run

    # the same command again trains nothing and writes the same table
    table = (out / "lambda_sweep.csv").read_text()
    monkeypatch.setattr(lambda_sweep, "run_pretraining", lambda *a, **k: pytest.fail("a finished λ was retrained"))
    assert (
        main(
            _args(
                group_files,
                out,
                "--lambdas",
                "0",
                "0.5",
                "--validation",
                "0.2",
                "--labels",
                str(group_files / "labels.tsv"),
            )
        )
        == 0
    )
    assert (out / "lambda_sweep.csv").read_text() == table


@pytest.mark.slow
def test_sweep_passes_on_labels_for_some_samples(group_files, tmp_path):
    """Labels for 30 of the 40 samples: each λ's run gets those of its pre-training samples and
    reports on them."""
    lines = (group_files / "labels.tsv").read_text().splitlines()
    (group_files / "some.tsv").write_text("".join(f"{line}\n" for line in lines[:30]))
    out = tmp_path / "sweep"
    argv = _args(group_files, out, "--lambdas", "0", "0.5", "--labels", str(group_files / "some.tsv"))
    assert main([a if a != "12" else "2" for a in argv]) == 0
    pretraining_ids = set(read_samples(out / "split" / "samples.jsonl").ids)
    written = [line.split("\t")[0] for line in (out / "split" / "labels.tsv").read_text().splitlines()]
    assert set(written) == pretraining_ids & {line.split("\t")[0] for line in lines[:30]}
    run = json.loads((out / "lambda-0.5" / "result.json").read_text())
    assert run["labelled_samples"] == len(written) < run["n_samples"]


def test_link_queries_are_linked_seeded_and_leave_enough_behind():
    graph = PretrainingGraph.from_edges(np.array([0, 1, 2, 4]), np.array([1, 2, 3, 5]), 8)  # 6, 7 isolated
    a = link_queries(graph, 0.5, seed=3)
    assert len(a) == 3 and set(a) <= {0, 1, 2, 3, 4, 5}
    np.testing.assert_array_equal(a, link_queries(graph, 0.5, seed=3))
    assert set(link_queries(graph, 0.3, seed=3, among=np.array([0, 1, 2, 6, 7]))) <= {0, 1, 2}
    with pytest.raises(lambda_sweep.SiptError, match="LambdaSweep.validation"):
        link_queries(PretrainingGraph.from_edges(np.array([0]), np.array([1]), 3), 0.5, seed=0)


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--lambdas", "0.1"), "--lambdas needs at least two distinct values"),
        (("--lambdas", "0.1", "1.5"), "--lambdas must be a finite number in [0, 1], got '1.5'"),
        (("--lambdas", "0", "0.1", "--validation", "0.9"), "--validation must be a finite number in (0, 0.5]"),
    ],
)
def test_bad_sweeps_are_one_line_errors(group_files, tmp_path, capsys, extra, message):
    assert main(_args(group_files, tmp_path / "out", *extra)) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "out").exists()


def test_another_sweep_or_foreign_files_in_out_are_refused(group_files, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(_args(group_files, out, "--lambdas", "0", "0.1")) == 2
    assert "holds no λ sweep" in capsys.readouterr().err
    other = tmp_path / "other"
    lambda_sweep._claim(lambda_sweep.LambdaSweep(lambda_sweep.PretrainJob(samples="x", edges="y"), (0.0, 0.2)), other)
    assert main(_args(group_files, other, "--lambdas", "0", "0.1")) == 2
    assert "holds another λ sweep" in capsys.readouterr().err


@pytest.mark.parametrize("where, message", [("empty", "--out is empty"), ("file", "is a file")])
def test_unusable_out_is_one_line(group_files, tmp_path, capsys, where, message):
    blocker = tmp_path / "blocker"
    blocker.write_text("keep me\n")
    out = {"empty": "", "file": blocker}[where]
    assert main(_args(group_files, out, "--lambdas", "0", "0.1")) == 2
    assert message in capsys.readouterr().err and blocker.read_text() == "keep me\n"
