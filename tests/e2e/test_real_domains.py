"""The proteins, abstracts and networks domains end to end on tiny generated data directories."""

import dataclasses
import json

import numpy as np
import pytest
from domain_fixtures import use_small_gin, write_abstracts, write_networks, write_proteins

from sipt_lab.cli.main import main
from sipt_lab.core.errors import SiptError
from sipt_lab.domains import build_graph, get_domain, subset
from sipt_lab.studies.domain.cells import domain_cells
from sipt_lab.studies.domain.presets import preset_for
from sipt_lab.studies.domain.run import run_domain
from sipt_lab.studies.domain.view import domain_view

WRITERS = {"proteins": write_proteins, "abstracts": write_abstracts, "networks": write_networks}


def tiny_preset(domain: str):
    """Seconds-scale budget; full fine-tuning on networks only (the GIN path; text fine-tuning is tested elsewhere)."""
    preset = preset_for(domain, "cpu")
    return dataclasses.replace(
        preset,
        n_samples=None,
        lambdas=(0.1,),
        mode="both" if domain == "networks" else "probe",
        pretrain=dataclasses.replace(
            preset.pretrain, steps=3, batch_size=8, max_len=24 if domain != "networks" else None
        ),
        finetune=dataclasses.replace(preset.finetune, lrs=(1e-3,), epochs=1, batch_size=8, max_len=None),
    )


@pytest.fixture(scope="module")
def data_dirs(tmp_path_factory):
    root = tmp_path_factory.mktemp("domains")
    return {name: write(root / name) for name, write in WRITERS.items()}


def test_planted_structure_in_each_graph(data_dirs):
    for name, directory in data_dirs.items():
        spec = get_domain(name)
        data = spec.read(directory)
        graph = build_graph(spec, next(iter(spec.graphs)), data)
        assert graph.n_nodes == len(data.ids) == len(data.samples) and graph.n_edges > 0
    networks = get_domain("networks").read(data_dirs["networks"])
    graph = build_graph(get_domain("networks"), "go-hamming", networks)
    shapes = np.arange(len(networks.ids)) % 2
    a, b = graph.edges().T
    assert np.all(shapes[a] == shapes[b])  # rings (8 shared terms) never link stars (16 apart > 9)


def test_published_splits_keep_task_samples_out_of_pretraining(data_dirs):
    view = domain_view("proteins", "remote_homology", None, 0, str(data_dirs["proteins"]))
    task = view.data.tasks["remote_homology"]
    assert [len(view.splits.train), len(view.splits.validation), len(view.splits.test)] == [12, 6, 6]
    assert not np.intersect1d(view.pretraining_samples, task.samples).size
    assert not np.intersect1d(view.pretraining_samples, view.data.tasks["fluorescence"].samples).size
    assert view.link_queries.size and not np.intersect1d(view.pretraining_samples, view.link_queries).size
    sliced = domain_view("proteins", "remote_homology", 20, 0, str(data_dirs["proteins"]))
    assert len(sliced.data.ids) < len(view.data.ids) and sliced.splits.train.size > 0
    assert np.all(sliced.task.is_labelled(sliced.splits.test))


@pytest.fixture
def small_gin(monkeypatch):
    use_small_gin(monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["proteins", "abstracts", "networks"])
def test_domain_run_end_to_end(data_dirs, tmp_path, name, small_gin):
    task, init = (
        ("sci-topic", "char") if name == "abstracts" else (None, None)
    )  # abstracts' default, MiniLM, is slow here
    cells = domain_cells(name, None, 2, tiny_preset(name), task=task, init=init, device="cpu", data_dir=data_dirs[name])
    assert (
        {c.arm for c in cells} == {"off-the-shelf", "lm", "sipt"}
        and cells[0].init == init
        or get_domain(name).default_init
    )
    summary = run_domain(cells, tmp_path / "out", executor="serial")
    kind = {"proteins": "classification", "abstracts": "classification-f1", "networks": "multilabel"}[name]
    assert summary["kind"] == kind
    sipt = next(entry for arm, entry in summary["arms"].items() if arm.startswith("sipt"))
    primary = summary["primary"]
    assert 0.0 <= sipt[f"probe.{primary}"]["mean"] <= 1.0 and (name != "networks" or f"full.{primary}" in sipt)
    assert (tmp_path / "out" / "comparison.csv").is_file()


def test_networks_gin_learns_masked_attributes_and_saves(data_dirs, tmp_path):
    from sipt_lab.models import load_encoder
    from sipt_lab.models.graph_encoder import GINConfig, GraphInit
    from sipt_lab.training import TrainConfig, embed, pretrain

    data = get_domain("networks").read(data_dirs["networks"])
    graph = build_graph(get_domain("networks"), "go-hamming", data)
    config = TrainConfig(steps=30, batch_size=16, lr=3e-3, lambda_si=0.0, mask_prob=0.3, device="cpu", log_every=10)
    result = pretrain(data.samples, graph, config, GraphInit(GINConfig(n_values=4, hidden=32, layers=5)))
    mlm = result.history["mlm"]
    assert mlm[-5:].mean() < 0.8 * mlm[:5].mean()  # each graph's codes are one pair: masking is learnable
    vectors = embed(result.encoder, result.tokenizer, data.samples)
    loaded, featurizer = load_encoder(result.save(tmp_path / "gin"))
    assert featurizer == result.tokenizer
    assert np.allclose(embed(loaded, featurizer, data.samples), vectors, atol=1e-5)


def test_graph_samples_are_checked():
    import torch
    from torch_geometric.data import Data

    from sipt_lab.models.graph_encoder import GraphFeaturizer

    featurizer = GraphFeaturizer(n_values=2)
    bad_code = Data(x=torch.tensor([0, 5]), edge_index=torch.tensor([[0], [1]]))
    with pytest.raises(SiptError, match="node codes outside"):
        featurizer.inputs([bad_code], torch.device("cpu"))
    with pytest.raises(SiptError, match="not a torch_geometric Data"):
        featurizer.inputs(["MKV"], torch.device("cpu"))
    truncated = GraphFeaturizer(2, max_len=3).inputs(
        [Data(x=torch.zeros(5, dtype=torch.long), edge_index=torch.tensor([[0, 3], [3, 4]]))], "cpu"
    )
    assert truncated.lengths.tolist() == [3]


def test_data_dir_errors(tmp_path, capsys):
    with pytest.raises(SiptError, match="needs DomainRunConfig.data_dir DIR"):
        get_domain("proteins").read(None)
    with pytest.raises(SiptError, match="brings its own data"):
        get_domain("wiki").read(tmp_path)
    with pytest.raises(SiptError, match="does not exist"):
        get_domain("networks").read(tmp_path / "nope")
    with pytest.raises(SiptError, match="sequences.fasta"):
        get_domain("proteins").read(tmp_path)
    assert main(["domain", "run", "abstracts", "--out", str(tmp_path / "o")]) == 2
    assert "needs --data DIR" in capsys.readouterr().err
    with pytest.raises(SiptError, match="use DomainRunConfig.init gin"):
        get_domain("networks").encoder_source("char", None)


def test_subset_keeps_shared_fields_and_restricts_published_splits(data_dirs):
    data = get_domain("abstracts").read(data_dirs["abstracts"])
    nodes = np.arange(0, len(data.ids), 2)
    sliced = subset(data, nodes)
    assert sliced.links is data.links
    published = data.splits["sci-topic"]
    assert sliced.splits["sci-topic"].train.tolist() == np.flatnonzero(np.isin(nodes, published.train)).tolist()
    assert json.dumps(sliced.ids)  # plain strings
