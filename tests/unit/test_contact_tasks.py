"""Contact prediction (TAPE's ProteinNet task): contact maps, precision at L/5, the loader and its
bad input, pair features and their memory check, and ``domain run proteins --task contact_prediction``."""

import copy
import json

import numpy as np
import pytest
import torch
from domain_fixtures import hairpin, write_contacts, write_proteins

from sipt_lab.cli.main import main
from sipt_lab.core.errors import SiptError
from sipt_lab.data.contacts import (
    ContactMap,
    coordinate_contacts,
    flatten_pairs,
    pair_contacts,
    pair_count,
    pair_index,
    precision_at_l5,
)
from sipt_lab.domains.datasets import get_dataset
from sipt_lab.domains.loaders import read_tape_task
from sipt_lab.jobs.finetune import probe_encoder
from sipt_lab.models import encoder_source
from sipt_lab.studies.domain.view import domain_view
from sipt_lab.training.finetune import FinetuneConfig, finetune
from sipt_lab.training.pair_features import check_pair_memory, pair_features


def _map(length, contacts, invalid=()):
    valid = np.ones(length, dtype=bool)
    valid[list(invalid)] = False
    return ContactMap(valid, np.array(contacts, dtype=np.int64).reshape(-1, 2))


def _scores(maps, counts, chosen):
    """Scores of :func:`flatten_pairs`' rows: ``chosen[(protein, i, j)]``, 0 elsewhere."""
    keys = [(k, i, j) for k, count in enumerate(counts) for i, j in zip(*pair_index(count))]
    return np.array([chosen.get(key, 0.0) for key in keys])


def test_precision_at_l5_against_a_hand_computed_map():
    # protein 0: 25 residues (L/5 = 5), residue 5 unresolved; contacts (0,13) and (2,20) medium,
    # (0,24) long, (1,7) short (never scored)
    # protein 1: 13 residues (L/5 = 2), one scored medium pair, (0,12), a contact
    maps = np.empty(2, dtype=object)
    maps[:] = [_map(25, [(0, 13), (2, 20), (0, 24), (1, 7)], invalid=[5]), _map(13, [(0, 12)])]
    counts = [25, 13]
    pairs = flatten_pairs(maps, counts)
    assert len(pairs) == pair_count(25) + pair_count(13) == 190 + 28
    contacts = pair_contacts(maps, counts)  # what a head trains on: the contact column, one byte a pair
    assert contacts.dtype == np.int8 and contacts.tolist() == pairs[:, 3].tolist()
    # 4 + 1 contacts; residue 5 (protein 0) is in the 14 pairs (5, 11..24), all unscored
    assert contacts.tolist().count(1) == 5 and contacts.tolist().count(-1) == 14
    chosen = {(0, 1, 7): 0.99, (0, 5, 20): 0.95, (0, 0, 13): 0.9, (0, 3, 16): 0.8, (0, 2, 20): 0.7, (0, 0, 24): 0.6}
    # medium, protein 0: (0,13) (3,16) (2,20), then the first zero-score pairs (0,12) (0,14): 2 of 5;
    #   (5,20) is unresolved, (1,7) too close; protein 1: (0,12) then nothing: 1 of 2 -> 3 / 7
    # long: protein 0 has one long pair, (0,24), a contact: 1 of 5; protein 1 none: 0 of 2 -> 1 / 7
    # medium + long: (0,13) (3,16) (2,20) (0,24) (0,12): 3 of 5; protein 1: 1 of 2 -> 4 / 7
    scores = precision_at_l5(pairs, _scores(maps, counts, chosen))
    assert scores == pytest.approx({"p_at_l5_medium_long": 4 / 7, "p_at_l5_medium": 3 / 7, "p_at_l5_long": 1 / 7})
    # the residues an encoder read: protein 0 cut to 20 residues (L/5 = 4) loses (0,24) and (2,20)
    short = flatten_pairs(maps, [20, 13])
    assert short[:, 2].tolist() == [20] * pair_count(20) + [13] * pair_count(13)
    assert precision_at_l5(short, _scores(maps, [20, 13], chosen))["p_at_l5_long"] == 0.0


def test_coordinates_become_contacts_closer_than_8_angstrom():
    line = [[1.2 * i, 0.0, 0.0] for i in range(8)]  # (0,6) 7.2 A, (0,7) 8.4 A, (1,7) 7.2 A
    contacts = coordinate_contacts(line, np.ones(8, dtype=bool))
    assert contacts.contacts.tolist() == [[0, 6], [1, 7]] and contacts.length == 8
    assert coordinate_contacts(line, np.arange(8) != 7).contacts.tolist() == [[0, 6]]


@pytest.fixture(scope="module")
def proteins(tmp_path_factory):
    return write_contacts(write_proteins(tmp_path_factory.mktemp("cp") / "proteins"))


def test_loader_reads_proteinnet_json_and_jsonl(proteins, tmp_path):
    records = read_tape_task(proteins / "tape" / "proteinnet", "contact_prediction")
    first = json.loads((proteins / "tape" / "proteinnet" / "proteinnet_train.json").read_text())[0]
    label = records.labels["train"][0]
    assert records.texts["train"][0] == first["primary"] and label.length == len(first["primary"])
    assert (label.valid == np.array(first["valid_mask"])).all() and len(label.contacts) > 0
    assert get_dataset("tape-proteinnet").files[0].url.endswith("/proteinnet.tar.gz")
    # the small form: one record a line, a contact map in place of coordinates
    small = tmp_path / "jsonl"
    small.mkdir()
    matrix = np.zeros((8, 8), dtype=int)
    matrix[0, 7] = matrix[7, 0] = 1
    for suffix in ("train", "valid", "test"):
        (small / f"proteinnet_{suffix}.jsonl").write_text(
            json.dumps({"primary": "MKVLAAGW", "contact_map": matrix.tolist()}) + "\n"
        )
    assert read_tape_task(small, "contact_prediction").labels["test"][0].contacts.tolist() == [[0, 7]]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"tertiary": hairpin(9)}, r"record 0 \(id 'x'\): 'tertiary' has shape \(9, 3\) but 'primary' has 8 residues"),
        ({"valid_mask": [True] * 7}, r"record 0 \(id 'x'\): 'valid_mask' has shape \(7,\) but 'primary' has 8"),
        ({"tertiary": None, "contact_map": [[0] * 7] * 8}, r"'contact_map' has shape \(8, 7\)"),
        ({"tertiary": None}, r"record 0 needs a non-empty string 'primary' and coordinates 'tertiary'"),
    ],
)
def test_contact_maps_that_disagree_with_the_sequence_are_one_line_errors(tmp_path, change, match):
    record = {"id": "x", "primary": "MKVLAAGW", "tertiary": hairpin(8), "valid_mask": [True] * 8}
    record = {k: v for k, v in {**record, **change}.items() if v is not None}
    for suffix in ("train", "valid", "test"):
        (tmp_path / f"proteinnet_{suffix}.json").write_text(json.dumps([record]))
    with pytest.raises(SiptError, match=match) as error:
        read_tape_task(tmp_path, "contact_prediction")
    assert "\n" not in str(error.value) and "proteinnet_train.json" in str(error.value)


def test_pair_features_and_their_memory_check():
    states = torch.arange(15, dtype=torch.float32).reshape(-1, 1)  # H = 1: residue k of the batch is k
    features = pair_features(states, np.array([8, 7]))
    assert features.shape == (pair_count(8) + pair_count(7), 2)
    # protein 0: pairs (0,6) (0,7) (1,7); protein 1 (states 8..14): (0,6), i.e. states 8 and 14
    assert features.tolist() == [[0.0, 6.0], [0.0, 7.0], [7.0, 6.0], [112.0, 6.0]]
    check_pair_memory(np.array([100, 512]), 768, 1.0, "train")  # 0.73 GiB
    with pytest.raises(
        SiptError, match=r"sample 1 of the test split has 1024 residues: 518,671 residue pairs, 2.97 GiB"
    ):
        check_pair_memory(np.array([100, 1024]), 768, 2.0, "test")


@pytest.mark.slow
def test_domain_run_contact_prediction_end_to_end(proteins, tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["domain", "run", "proteins", "--data", str(proteins), "--task", "contact_prediction", "--seeds", "1"]
    argv += ["--steps", "2", "--init", "char", "--device", "cpu", "--executor", "serial", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["kind"] == "contact-prediction" and summary["primary"] == "p_at_l5_medium_long"
    for arm in ("off-the-shelf", "lm", "sipt[interactions]"):
        for part in ("probe", "full"):
            for metric in ("p_at_l5_medium_long", "p_at_l5_medium", "p_at_l5_long"):
                assert 0.0 <= summary["arms"][arm][f"{part}.{metric}"]["mean"] <= 1.0


@pytest.mark.slow
def test_finetuning_and_probe_find_the_planted_contacts(proteins):
    view = domain_view("proteins", "contact_prediction", None, 0, str(proteins))
    texts = list(view.data.samples)
    source = encoder_source("char")
    tokenizer = source.tokenizer([texts[i] for i in view.pretraining_samples], 64)
    torch.manual_seed(0)
    encoder = source.encoder(tokenizer)[0]
    test = view.task.labels_of(view.splits.test)
    pairs = flatten_pairs(test, [label.length for label in test])
    scored = (pairs[:, 1] >= 12) & (pairs[:, 3] >= 0)
    assert pairs[scored, 3].mean() < 0.1  # cysteine pairs only: a random ranking scores about this
    config = FinetuneConfig(lrs=(1e-3,), epochs=4, patience=4, batch_size=4, device="cpu")
    result = finetune(lambda: (copy.deepcopy(encoder).train(), tokenizer), texts, view.task, view.splits, config)
    probe = probe_encoder(encoder, tokenizer, texts, view.task, view.splits, "cpu")
    assert result.test["p_at_l5_medium_long"] > 0.5 and probe["p_at_l5_medium_long"] > 0.5
    assert set(probe) == {"p_at_l5_medium_long", "p_at_l5_medium", "p_at_l5_long"}


def test_a_sequence_past_the_pair_memory_budget_is_a_one_line_error(proteins):
    view = domain_view("proteins", "contact_prediction", None, 0, str(proteins))
    texts = list(view.data.samples)
    source = encoder_source("char")
    tokenizer = source.tokenizer(texts, 64)
    encoder = source.encoder(tokenizer)[0]
    config = FinetuneConfig(lrs=(1e-3,), epochs=1, batch_size=8, device="cpu", pair_memory_gib=1e-4)
    with pytest.raises(SiptError, match=r"of the train split has \d+ residues: [\d,]+ residue pairs") as error:
        finetune(lambda: (encoder, tokenizer), texts, view.task, view.splits, config)
    assert "\n" not in str(error.value) and "FinetuneConfig.max_len" in str(error.value)
