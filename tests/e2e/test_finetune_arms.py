"""Full fine-tuning starts from the encoder it is given: in ``finetune`` itself, in each cell of a
domain run (the arm's own pre-trained or stored weights), in the study's ``finetune_metrics`` and in
``sipt-lab finetune`` (the model's and the baseline's own directories)."""

import dataclasses

import numpy as np
import pytest
import torch
from hf_fakes import WORDS
from test_domain_methods import PRESET

import sipt_lab.studies.domain.arms as domain_arms
import sipt_lab.studies.domain.run as domain_run
import sipt_lab.studies.lc.arms as study_arms
import sipt_lab.training.finetune as finetune_module
from sipt_lab.data.splits import random_splits
from sipt_lab.data.tasks import Task
from sipt_lab.jobs.configs import FinetuneJob
from sipt_lab.jobs.finetune import encoder_loader, run_finetuning
from sipt_lab.models import load_encoder, save_encoder
from sipt_lab.studies.domain.cells import domain_cells
from sipt_lab.studies.domain.teachers import TEACHERS_DIR, load_model
from sipt_lab.studies.lc.arms import StudySeed, study_seed
from sipt_lab.studies.lc.config import LcTransferConfig
from sipt_lab.training.defaults import train_config
from sipt_lab.training.finetune import FinetuneConfig, finetune

CLASS_WORDS = ("one", "two", "three")
FAST = FinetuneConfig(lrs=(3e-3,), epochs=2, patience=2, batch_size=8, device="cpu")


def _toy(n=45):
    """Filler words plus one class word each: a 3-class task."""
    rng = np.random.default_rng(0)
    filler = [w for w in WORDS if w not in CLASS_WORDS]
    labels = np.arange(n) % 3
    texts = [" ".join([*rng.choice(filler, 5), CLASS_WORDS[y], *rng.choice(filler, 2)]) for y in labels]
    task = Task("toy", "classification", np.arange(n), labels)
    return texts, task, random_splits(task.samples, (0.6, 0.2, 0.2), seed=0)


def _state(encoder) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in encoder.state_dict().items()}


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[name], b[name]) for name in a)


def _perturbed(load, scale=0.05):
    """A loader of ``load``'s encoder with seeded noise on every weight (torch's global RNG untouched,
    so the fine-tuning head and shuffling draw as they do for ``load``)."""

    def other():
        encoder, tokenizer = load()
        noise = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for parameter in encoder.parameters():
                parameter.add_(scale * torch.randn(parameter.shape, generator=noise))
        return encoder, tokenizer

    return other


def _spy_start_states(monkeypatch) -> list[dict[str, torch.Tensor]]:
    """Record, in call order, the weights of the encoder each fine-tuning (one learning rate) trains,
    as its training starts."""
    states = []
    original = finetune_module._train_one_rate

    def spy(model, *args, **kwargs):
        states.append(_state(model["encoder"]))
        return original(model, *args, **kwargs)

    monkeypatch.setattr(finetune_module, "_train_one_rate", spy)
    return states


def test_two_encoders_fine_tune_to_different_logits(tiny_bert, monkeypatch):
    texts, task, splits = _toy()
    outputs = []
    original = finetune_module._outputs

    def recorded(*args, **kwargs):
        outputs.append(original(*args, **kwargs))
        return outputs[-1]

    monkeypatch.setattr(finetune_module, "_outputs", recorded)

    def logits(load):
        outputs.clear()
        result = finetune(load, texts, task, splits, FAST, seed=0)
        return result, [o.clone() for o in outputs]

    load = encoder_loader(tiny_bert)
    first, first_logits = logits(load)
    again, again_logits = logits(load)
    other, other_logits = logits(_perturbed(load))
    assert first == again
    # each run's validation and test logits after each pass
    assert len(first_logits) == len(again_logits) == len(other_logits) == 2 * FAST.epochs
    assert all(torch.equal(a, b) for a, b in zip(first_logits, again_logits))  # so a difference is the encoder's
    assert all(not torch.allclose(a, b) for a, b in zip(first_logits, other_logits))


def test_finetune_command_tunes_the_model_and_the_baseline_from_their_own_weights(tiny_bert, tmp_path, monkeypatch):
    texts, task, splits = _toy()
    encoder, tokenizer = _perturbed(encoder_loader(tiny_bert))()
    other = save_encoder(encoder, tokenizer, tmp_path / "other")
    names = {int(i): name for name in ("train", "validation", "test") for i in getattr(splits, name)}
    (tmp_path / "samples.tsv").write_text("".join(f"t{i}\t{text}\n" for i, text in enumerate(texts)))
    (tmp_path / "labels.tsv").write_text("".join(f"t{i}\tc{y}\n" for i, y in enumerate(task.labels)))
    (tmp_path / "splits.tsv").write_text("".join(f"t{i}\t{names[i]}\n" for i in range(len(texts))))
    states = _spy_start_states(monkeypatch)
    job = FinetuneJob(
        model=str(other),
        baseline=str(tiny_bert),
        samples=str(tmp_path / "samples.tsv"),
        labels=str(tmp_path / "labels.tsv"),
        splits=str(tmp_path / "splits.tsv"),
        mode="full",
        seeds=1,
        finetune=FAST,
    )
    report = run_finetuning(job, tmp_path / "out")
    assert len(states) == 2  # the model's fine-tuning, then the baseline's
    assert _same(states[0], _state(load_encoder(other)[0])) and _same(states[1], _state(load_encoder(tiny_bert)[0]))
    assert not _same(states[0], states[1])
    assert report["results"]["model"]["full"] != report["results"]["baseline"]["full"]


def _arm(cell) -> tuple:
    return cell.arm, cell.graph, cell.lambda_si, cell.seed


#: The arm whose cell the serial domain run is computing (set by :func:`_tracked_cell`).
_CURRENT: list[tuple] = []
_DOMAIN_CELL = domain_run.domain_cell


def _tracked_cell(cell, teachers=None):
    """The domain run's cell function, noting which arm it computes (module level: cells are pickled)."""
    _CURRENT[:] = [_arm(cell)]
    return _DOMAIN_CELL(cell, teachers)


@pytest.fixture
def domain_spies(monkeypatch):
    """Per arm (``(arm, graph, λ, seed)``) of a serial domain run: the weights its pre-training
    ended with (``pretrained``, teachers' included) and those its fine-tuning started from (``tuned``)."""
    pretrained, tuned = {}, {}
    original_pretrain = domain_arms.pretrain_arm

    def pretrain_arm(cell, *args, **kwargs):
        graph, trained = original_pretrain(cell, *args, **kwargs)
        pretrained[_arm(cell)] = _state(trained.encoder)
        return graph, trained

    original_step = finetune_module._train_one_rate

    def train_one_rate(model, *args, **kwargs):
        assert _CURRENT[0] not in tuned, "one learning rate, one fine-tuning per cell"
        tuned[_CURRENT[0]] = _state(model["encoder"])
        return original_step(model, *args, **kwargs)

    monkeypatch.setattr(domain_arms, "pretrain_arm", pretrain_arm)
    monkeypatch.setattr(finetune_module, "_train_one_rate", train_one_rate)
    monkeypatch.setattr(domain_run, "domain_cell", _tracked_cell)
    return pretrained, tuned


@pytest.mark.slow
def test_each_domain_arm_fine_tunes_its_own_weights(tmp_path, domain_spies):
    pretrained, tuned = domain_spies
    preset = dataclasses.replace(PRESET, mode="full", finetune=dataclasses.replace(PRESET.finetune, epochs=1))
    # lsm: the lm arm is trained into the run's teacher store, and its cell fine-tunes the stored copy
    cells = domain_cells("wiki", ["random"], 1, preset, init="char", device="cpu", methods=("lsm",))
    out = tmp_path / "run"
    domain_run.run_domain(cells, out, executor="serial")
    lm, sipt, lsm = ("lm", None, 0.0, 0), ("sipt", "random", 0.1, 0), ("lsm", None, 0.0, 0)
    assert set(tuned) == {("off-the-shelf", None, 0.0, 0), lm, sipt, lsm}
    assert set(pretrained) == {lm, sipt, lsm}
    for arm in (lm, sipt, lsm):
        assert _same(tuned[arm], pretrained[arm]), arm
    (stored,) = (out / TEACHERS_DIR).glob("*/model")
    assert _same(tuned[lm], _state(load_model(stored, None)[0]))
    arms = list(tuned.values())
    assert not any(_same(a, b) for i, a in enumerate(arms) for b in arms[i + 1 :])


@pytest.mark.slow
def test_study_fine_tunes_each_arm_from_its_own_weights(monkeypatch):
    trained = []
    original = study_arms.train_arm

    def train_arm(*args, **kwargs):
        result = original(*args, **kwargs)
        trained.append(_state(result.encoder))
        return result

    monkeypatch.setattr(study_arms, "train_arm", train_arm)
    starts = _spy_start_states(monkeypatch)
    config = LcTransferConfig(
        init="char",
        train=train_config("char", steps=2, batch_size=8, max_len=24, device="cpu"),
        n_pretrain=40,
        n_train=24,
        n_validation=8,
        n_test=16,
        levels=(0.0, 1.0),
        finetune_epochs=1,
    )
    rows = study_seed(StudySeed(config, 0, 0))["rows"]
    assert {row["metric"] for row in rows} >= {"finetune_accuracy", "finetune_macro_f1"}
    assert len(trained) == 3 and len(starts) == 4  # init, then lm and one SIPT per level
    for state, start in zip(trained, starts[1:]):
        assert _same(start, state)
    assert not any(_same(a, b) for i, a in enumerate(starts) for b in starts[i + 1 :])
