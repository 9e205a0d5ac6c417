"""The MLSM family in domain runs: one arm per seed, taught by the seed's lm arm from the run's
model store (trained once, shared, resumed, rebuilt when damaged) or by an explicit teacher."""

import dataclasses
import json
from pathlib import Path

import pytest

import sipt_lab.studies.domain.arms as domain_run
from sipt_lab.cli.main import main
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.grid.model_store import directory_digest
from sipt_lab.studies.domain.cells import ConceptCell, domain_cells
from sipt_lab.studies.domain.presets import PRESETS
from sipt_lab.studies.domain.run import run_domain
from sipt_lab.studies.domain.teachers import TEACHERS_DIR, load_model
from sipt_lab.training.methods import ConceptOptions

PRESET = dataclasses.replace(
    PRESETS["cpu"],
    n_samples=60,
    lambdas=(0.1,),
    mode="probe",
    pretrain=dataclasses.replace(PRESETS["cpu"].pretrain, steps=2, batch_size=8, max_len=24),
    finetune=dataclasses.replace(PRESETS["cpu"].finetune, max_len=24, batch_size=8),
)


def _cells(out: Path) -> dict[tuple[str, int], dict]:
    rows = [json.loads(path.read_text()) for path in (out / "cells").glob("*/result.json")]
    return {(row["arm"], row["seed"]): row for row in rows}


@pytest.fixture
def count_pretraining(monkeypatch):
    """How many pre-training runs the domain run starts (serial executor: in this process)."""
    calls = []
    original = domain_run.pretrain

    def counted(*args, **kwargs):
        calls.append(kwargs.get("method"))
        return original(*args, **kwargs)

    monkeypatch.setattr(domain_run, "pretrain", counted)
    return calls


@pytest.mark.slow
def test_mlsm_arms_share_the_lm_arm_as_teacher_and_resume(tmp_path, count_pretraining):
    cells = domain_cells("wiki", ["mentions"], 2, PRESET, init="char", device="cpu", methods=("mlsm", "lsm"))
    assert [(type(c).__name__, c.arm, c.graph) for c in cells[:5]] == [
        ("DomainCell", "off-the-shelf", None),
        ("DomainCell", "lm", None),
        ("DomainCell", "sipt", "mentions"),
        ("ConceptCell", "mlsm", None),
        ("ConceptCell", "lsm", None),
    ]
    out = tmp_path / "run"
    summary = run_domain(cells, out, executor="serial")
    assert len(count_pretraining) == 2 * 4  # per seed: lm (once, in the store), sipt, mlsm, lsm
    assert {"mlsm", "lsm", "lm", "sipt[mentions]"} <= set(summary["arms"])
    assert summary["arms"]["mlsm"]["concept_codes_nonzero_median"] >= 1
    compared = {(c["method"], c["baseline"]): c for c in summary["comparisons"]}
    assert compared[("mlsm", "lm")]["n_seeds"] == 2 and "p_value" in compared[("lsm", "lm")]
    rows = _cells(out)
    stored = sorted((out / TEACHERS_DIR).glob("*/model"))
    assert len(stored) == 2  # one teacher per seed, read by the lm arm and both MLSM arms
    for seed in (0, 1):
        digests = {rows[(arm, seed)]["teacher_digest"] for arm in ("lm", "mlsm", "lsm")}
        assert len(digests) == 1 and digests <= {directory_digest(d) for d in stored}
    # The lm arm read from the store is the lm arm a run without MLSM trains in its own cell.
    plain = tmp_path / "plain"
    lm_only = [c for c in domain_cells("wiki", ["mentions"], 1, PRESET, init="char", device="cpu") if c.arm == "lm"]
    run_domain(lm_only, plain, executor="serial")
    assert not (plain / TEACHERS_DIR).exists()
    assert _cells(plain)[("lm", 0)]["scores"] == rows[("lm", 0)]["scores"]
    assert _cells(plain)[("lm", 0)]["pretrain_final"] == rows[("lm", 0)]["pretrain_final"]

    # Resumed: finished cells and teachers are kept; a lost MLSM cell is redone without retraining its teacher.
    count_pretraining.clear()
    lost = next(path for path in (out / "cells").glob("*/result.json") if json.loads(path.read_text())["arm"] == "lsm")
    lost.unlink()
    run_domain(cells, out, executor="serial")
    assert len(count_pretraining) == 1 and count_pretraining[0] is not None  # the lsm arm's recipe, no lm run

    # A damaged teacher is rebuilt (to the same files: training is reproducible), never read.
    teacher = stored[0]
    original = directory_digest(teacher)
    (teacher / "encoder.pt").write_bytes(b"damaged")
    lost.unlink(missing_ok=True)
    count_pretraining.clear()
    run_domain(cells, out, executor="serial")
    assert directory_digest(teacher) == original
    assert count_pretraining.count(None) == 1  # the damaged seed's lm teacher, trained again
    (teacher / "encoder.pt").write_bytes(b"damaged")
    with pytest.raises(SiptError, match="changed since it was saved"):
        load_model(teacher, original)


@pytest.mark.slow
def test_mlsm_on_a_hugging_face_warm_start_with_an_explicit_teacher(tiny_bert, tmp_path, capsys):
    teacher = tmp_path / "teacher"
    teacher.symlink_to(tiny_bert, target_is_directory=True)
    argv = [
        "domain",
        "run",
        "wiki",
        "--init",
        str(tiny_bert),
        "--graphs",
        "mentions",
        "--seeds",
        "1",
        "--samples",
        "60",
        "--steps",
        "2",
        "--mode",
        "probe",
        "--methods",
        "lsm15",
        "--teacher",
        str(teacher),
        "--teacher-layer",
        "1",
        "--executor",
        "serial",
        "--out",
        str(tmp_path / "run"),
    ]
    assert main(argv) == 0
    assert "| lsm15 | - |" in capsys.readouterr().out  # its row in the arms table (no graph, no LC)
    assert not (tmp_path / "run" / TEACHERS_DIR).exists()  # the explicit teacher is read where it is
    config = json.loads(
        next(p for p in (tmp_path / "run" / "cells").glob("*/config.json") if '"lsm15"' in p.read_text()).read_text()
    )
    assert config["teacher"] == str(teacher.resolve()) and config["concepts"]["layer"] == 1
    row = _cells(tmp_path / "run")[("lsm15", 0)]
    assert row["teacher_digest"] == directory_digest(tiny_bert) and row["concepts"]["nonzero_median"] >= 1


def test_a_changed_explicit_teacher_is_refused(tiny_bert, tmp_path):
    teacher = tmp_path / "teacher"
    teacher.mkdir()
    for path in tiny_bert.iterdir():
        if path.is_file():
            (teacher / path.name).write_bytes(path.read_bytes())
    cells = [
        c
        for c in domain_cells(
            "wiki", ["mentions"], 1, PRESET, init=str(tiny_bert), device="cpu", methods=("mlsm",), teacher=teacher
        )
        if isinstance(c, ConceptCell)
    ]
    (teacher / "config.json").write_text((teacher / "config.json").read_text() + " ")
    with pytest.raises(SiptError, match="changed since it was saved"):
        run_domain(cells, tmp_path / "run", executor="serial")


def _one_error_line(capsys, argv) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_bad_methods_and_teachers_are_one_line(tmp_path, capsys):
    base = ["domain", "run", "wiki", "--init", "char", "--seeds", "1", "--executor", "serial"]
    err = _one_error_line(capsys, [*base, "--methods", "bogus", "--out", str(tmp_path / "a")])
    assert "'bogus'" in err and "mlsm" in err
    not_an_encoder = tmp_path / "empty"
    not_an_encoder.mkdir()
    err = _one_error_line(
        capsys, [*base, "--methods", "mlsm", "--teacher", str(not_an_encoder), "--out", str(tmp_path / "b")]
    )
    assert "is not an encoder" in err
    err = _one_error_line(
        capsys, [*base, "--methods", "mlsm", "--teacher", str(tmp_path / "missing"), "--out", str(tmp_path / "c")]
    )
    assert "is not a directory" in err
    err = _one_error_line(capsys, [*base, "--teacher", str(not_an_encoder), "--out", str(tmp_path / "d")])
    assert "--methods" in err
    err = _one_error_line(capsys, [*base, "--methods", "lsm", "--teacher-layer", "-1", "--out", str(tmp_path / "e")])
    assert err.endswith("--teacher-layer must be >= 0, got -1 (see sipt-lab domain run --help)")
    # a layer the teacher lacks is refused before any teacher trains (the default char encoder has 2 layers)
    err = _one_error_line(capsys, [*base, "--methods", "lsm", "--teacher-layer", "3", "--out", str(tmp_path / "f")])
    assert err.endswith(
        "--teacher-layer is 3 but the teacher has layers 0..2 (0 = embeddings, 2 = the last); choose one of those"
    )
    assert not (tmp_path / "f").exists()  # nothing trained or written, not even an empty directory


def test_teacher_layers_are_read_from_the_model_without_loading_it(tiny_bert, tmp_path):
    from sipt_lab.models import CharInit, EncoderConfig
    from sipt_lab.models.sources import CheckpointInit, layer_count

    hf_layers = json.loads((tiny_bert / "config.json").read_text())["num_hidden_layers"]
    assert layer_count(tiny_bert) == layer_count(CheckpointInit(str(tiny_bert))) == hf_layers
    assert layer_count(CharInit(EncoderConfig(n_layers=3))) == 3
    assert layer_count(tmp_path) is None  # no config: unknown, so nothing is refused
    with pytest.raises(ConfigError, match=f"teacher has layers 0..{hf_layers}"):
        domain_cells(
            "wiki",
            None,
            1,
            PRESETS["cpu"],
            init="char",
            methods=("mlsm",),
            teacher=tiny_bert,
            concepts=ConceptOptions(layer=hf_layers + 1),
        )
    assert domain_cells(
        "wiki",
        None,
        1,
        PRESETS["cpu"],
        init="char",
        methods=("mlsm",),
        teacher=tiny_bert,
        concepts=ConceptOptions(layer=hf_layers),
    )


def test_hugging_face_layers_and_concept_rows(tiny_bert):
    import torch

    from sipt_lab.models import encoder_source

    source = encoder_source(str(tiny_bert))
    tokenizer = source.tokenizer([], 16)
    encoder = source.encoder(tokenizer)[0].eval()
    ids = torch.as_tensor(tokenizer.encode(["the one and the two", "a three of it"])[0])
    last = encoder.hidden_states(ids)
    assert torch.allclose(encoder.hidden_states(ids, layer=2), last)
    assert not torch.allclose(encoder.hidden_states(ids, layer=1), last)
    assert torch.equal(encoder.hidden_states(ids, layer=0), encoder.model.base_model.embeddings(input_ids=ids))
    with pytest.raises(SiptError, match="layers 0..2"):
        encoder.hidden_states(ids, layer=3)
    before = encoder.token_logits(ids)
    encoder.add_output_rows(5)  # MLSM's concept outputs: the vocabulary's logits are unchanged
    after = encoder.token_logits(ids)
    assert after.shape[-1] == before.shape[-1] + 5 and torch.allclose(after[..., :-5], before)
