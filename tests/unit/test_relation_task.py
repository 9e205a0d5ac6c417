"""SciERC relation extraction (SciBERT's ``sciie-relation-extraction``): the loader, its entity-marker
check, macro-F1, and ``domain run abstracts --task sciie-relation-extraction``."""

import json

import numpy as np
import pytest
from domain_fixtures import write_abstracts, write_relations

from sipt_lab.cli.main import main
from sipt_lab.core.errors import SiptError
from sipt_lab.data.tasks import get_task_kind
from sipt_lab.domains import get_domain
from sipt_lab.domains.datasets import get_dataset
from sipt_lab.domains.loaders import read_scibert_task

TASK = "sciie-relation-extraction"


@pytest.fixture(scope="module")
def abstracts(tmp_path_factory):
    return write_relations(write_abstracts(tmp_path_factory.mktemp("sre") / "abstracts"))


def test_the_abstracts_domain_reads_the_relation_task(abstracts):
    data = get_domain("abstracts").read(abstracts)
    task = data.tasks[TASK]
    assert task.kind == "classification-f1" and task.label_names == ("PART-OF", "USED-FOR")
    assert [len(part) for part in (data.splits[TASK].train, data.splits[TASK].validation)] == [16, 8]
    assert all("<< " in data.texts[i] and "[[ " in data.texts[i] for i in task.samples)
    assert get_dataset(f"scibert-{TASK}").files[0].url.endswith(f"/{TASK}/train.txt")


@pytest.mark.parametrize(
    ("text", "missing"),
    [("the << parser >> uses a model .", r"'\[\[ \.\.\. \]\]'"), ("the [[ parser ]] uses << a model .", "'<< ... >>'")],
)
def test_a_sentence_without_both_entity_markers_is_a_one_line_error(tmp_path, abstracts, text, missing):
    task = tmp_path / TASK
    task.mkdir()
    for name in ("train", "dev", "test"):
        (task / f"{name}.txt").write_text((abstracts / "tasks" / TASK / f"{name}.txt").read_text())
    lines = (task / "dev.txt").read_text().splitlines()
    lines[2] = json.dumps({"text": text, "label": "USED-FOR"})
    (task / "dev.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(SiptError, match=rf"dev.txt line 3: the sentence has no {missing} entity marker") as error:
        read_scibert_task(task)
    assert "\n" not in str(error.value)
    (tmp_path / "other").mkdir()
    for name in ("train", "dev", "test"):  # other SciBERT tasks have no markers to check
        (tmp_path / "other" / f"{name}.txt").write_text(json.dumps({"text": text, "label": "x"}) + "\n")
    assert read_scibert_task(tmp_path / "other").texts["validation"] == [text]


def test_macro_f1_is_the_primary_metric():
    kind = get_task_kind("classification-f1")
    truth, predicted = np.array([0, 0, 0, 1, 1, 2]), np.array([0, 0, 1, 1, 1, 1])
    # class 0: P 1, R 2/3 -> F1 0.8; class 1: P 2/4, R 1 -> 2/3; class 2: 0 -> macro (0.8 + 2/3 + 0) / 3
    assert kind.primary == "macro_f1"
    assert kind.metrics(truth, predicted)["macro_f1"] == pytest.approx((0.8 + 2 / 3) / 3)


@pytest.mark.slow
def test_domain_run_relation_extraction_end_to_end(abstracts, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["domain", "run", "abstracts", "--data", str(abstracts), "--task", TASK, "--seeds", "1", "--steps", "2"]
    argv += ["--init", "char", "--device", "cpu", "--executor", "serial", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kind"] == "classification-f1" and summary["primary"] == "macro_f1"
    for arm in ("off-the-shelf", "lm", "sipt[citations]"):
        for part in ("probe", "full"):
            assert 0.0 <= summary["arms"][arm][f"{part}.macro_f1"]["mean"] <= 1.0
    assert summary["arms"]["off-the-shelf"]["probe.macro_f1"]["mean"] > 0.6  # the verb marks the relation (80 %)


def test_domain_run_names_the_unmarked_sentence_and_exits_2(abstracts, tmp_path, capsys):
    import shutil

    data = shutil.copytree(abstracts, tmp_path / "abstracts")
    (data / "tasks" / TASK / "test.txt").write_text(json.dumps({"text": "no markers here", "label": "USED-FOR"}) + "\n")
    argv = ["domain", "run", "abstracts", "--data", str(data), "--task", TASK, "--init", "char", "--seeds", "1"]
    assert main([*argv, "--device", "cpu", "--executor", "serial", "--out", str(tmp_path / "run")]) == 2
    error = capsys.readouterr().err.strip().splitlines()[-1]  # each cell reads the data: the run reports the first
    assert error.startswith("sipt-lab: error:") and "test.txt line 1: the sentence has no '<< ... >>' entity" in error
