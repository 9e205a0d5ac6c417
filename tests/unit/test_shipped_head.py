"""The MLM head shipped for the offline default init is the one a default ``pretrain`` asks for:
a changed default, init or reference corpus cannot silently use a stale head."""

import pytest
import torch

from sipt_lab.cli.main import main
from sipt_lab.jobs import pretrain as pretrain_job
from sipt_lab.models import encoder_source
from sipt_lab.training.head_warmups import SHIPPED_HEADS, HeadWarmups, head_file, load_head
from sipt_lab.training.reference_head import reference_head_key


class _Resolved(Exception):
    pass


@pytest.fixture(scope="module")
def default_job(tmp_path_factory):
    """The PretrainJob that ``sipt-lab pretrain --samples S --edges E --out DIR`` runs."""
    jobs = []
    data = tmp_path_factory.mktemp("data")
    (data / "S.tsv").write_text("a\tred apple\nb\tgreen apple\n")
    (data / "E.tsv").write_text("a\tb\n")

    def capture(job, *args, **kwargs):
        jobs.append(job)
        raise _Resolved

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pretrain_job, "run_pretraining", capture)
        with pytest.raises(_Resolved):
            main(
                [
                    "pretrain",
                    "--samples",
                    str(data / "S.tsv"),
                    "--edges",
                    str(data / "E.tsv"),
                    "--out",
                    str(data / "run"),
                ]
            )
    return jobs[0]


@pytest.fixture(scope="module")
def default_key(default_job):
    return reference_head_key(default_job.train, encoder_source(default_job.init).describe())


def test_the_shipped_head_is_the_one_the_defaults_ask_for(default_key):
    shipped = sorted(SHIPPED_HEADS.glob("head-*.pt"))
    fix = "run `python benchmarks/ship_default_head.py` and commit the head it writes"
    assert [path.name for path in shipped] == [head_file(default_key)], f"the shipped head is stale: {fix}"
    saved = load_head(shipped[0], default_key)
    assert saved is not None and saved["key"] == default_key, f"the shipped head is stale: {fix}"
    assert saved["random_state"] is None  # fitted on its own random stream: no run state to restore
    assert shipped[0].stat().st_size < 1_000_000


def test_a_default_run_with_an_empty_cache_loads_the_shipped_head(default_job, default_key, tmp_path):
    source = encoder_source(default_job.init)
    model, _ = source.encoder(source.tokenizer([], None))
    heads = model.new_head_parameters()
    warmups = HeadWarmups(tmp_path / "heads", reference=True)
    assert warmups.has(default_key, [])

    def fit():
        raise AssertionError("the shipped head was fitted again")

    note = warmups.warm_up(default_key, heads, fit, [], draws_run_rng=False)
    assert note.endswith("shipped with sipt-lab for this init and these warm-up settings")
    saved = load_head(SHIPPED_HEADS / head_file(default_key), default_key)
    for parameter, value in zip(heads, saved["head"], strict=True):
        assert torch.equal(parameter.detach(), value)
    assert not (tmp_path / "heads").exists()  # nothing copied into the cache
