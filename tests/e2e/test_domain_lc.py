"""The LC a domain run reports is the task's LC over the graph the model was pre-trained on."""

import dataclasses

import numpy as np
import pytest

from sipt_lab.data.splits import pretraining_graph, random_splits
from sipt_lab.data.tasks import Task
from sipt_lab.domains import DOMAINS, Domain, DomainData, build_graph, get_domain
from sipt_lab.graphs.consistency import local_consistency
from sipt_lab.studies.domain.arms import domain_cell
from sipt_lab.studies.domain.cells import domain_cells
from sipt_lab.studies.domain.presets import preset_for
from sipt_lab.studies.domain.report import format_domain_summary, summarize_domain
from sipt_lab.studies.domain.view import domain_view

NAME = "planted-lc"
N = 80
WORDS = (("apple", "pear", "plum"), ("rain", "cloud", "storm"))


def _data() -> DomainData:
    """``N`` samples of two topics; the last four are unlabelled for the task."""
    rng = np.random.default_rng(0)
    topics = np.arange(N) % 2
    texts = [" ".join(rng.choice(WORDS[t], size=4)) for t in topics]
    labelled = np.arange(N - 4)
    task = Task("topic", "classification", labelled, topics[labelled], ("fruit", "sky"))
    return DomainData([f"s{i}" for i in range(N)], texts, {"topic": task})


def _planted(data: DomainData, seed: int):
    """Test samples linked within their topic (LC 1 there); every other edge random among the
    samples pre-training may see (and validation samples, so that λ's link retrieval has queries)."""
    from sipt_lab.graphs.graph import PretrainingGraph

    task = data.tasks["topic"]
    splits = random_splits(task.samples, seed=seed)
    labels = dict(zip(task.samples.tolist(), task.labels.tolist()))
    test = splits.test.tolist()
    pairs = [(a, b) for i, a in enumerate(test) for b in test[i + 1 :] if labels[a] == labels[b]]
    rng = np.random.default_rng([seed, 7])
    others = np.setdiff1d(np.arange(N), splits.test)
    pairs += [tuple(rng.choice(others, size=2, replace=False)) for _ in range(3 * N)]
    a, b = np.array(pairs).T
    return PretrainingGraph.from_edges(a, b, n_nodes=N)


@pytest.fixture
def planted_domain(monkeypatch):
    data = _data()
    domain = Domain(NAME, "planted LC test", lambda: data, {"planted": _planted}, "topic", default_init="char")
    monkeypatch.setitem(DOMAINS, NAME, domain)
    domain_view.cache_clear()
    yield domain
    domain_view.cache_clear()


def test_reported_lc_is_over_the_pretraining_graph(planted_domain):
    preset = preset_for(NAME, "cpu")
    preset = dataclasses.replace(
        preset,
        n_samples=None,
        lambdas=(0.1,),
        mode="probe",
        pretrain=dataclasses.replace(preset.pretrain, steps=2, batch_size=8, max_len=16),
    )
    cells = domain_cells(NAME, None, 1, preset, device="cpu")
    sipt = next(cell for cell in cells if cell.arm == "sipt")
    row = domain_cell(sipt)
    summary = row["graph_summary"]

    view = domain_view(NAME, "topic", None, sipt.seed, None)
    graph = build_graph(get_domain(NAME), "planted", view.data, sipt.seed)
    seen = pretraining_graph(graph, view.splits).subgraph(view.pretraining_samples)
    labelled = np.flatnonzero(view.task.is_labelled(view.pretraining_samples))
    expected = local_consistency(seen.subgraph(labelled), view.task.labels_of(view.pretraining_samples[labelled]))
    everything = local_consistency(graph.subgraph(view.task.samples), view.task.labels)

    assert summary["local_consistency"] == pytest.approx(expected)
    assert summary["local_consistency_all_splits"] == pytest.approx(everything)
    assert summary["local_consistency_all_splits"] > summary["local_consistency"] + 0.05
    assert 0.2 < summary["local_consistency"] < 0.8  # random edges: near chance for two topics

    other = next(cell for cell in cells if cell.arm == "lm")
    lm_row = {key: value for key, value in row.items() if key not in ("graph_summary", "validation_links")}
    baselines = [{**lm_row, "arm": arm, "graph": None} for arm in ("lm", "off-the-shelf")]
    report = summarize_domain([row, *baselines], other)
    entry = report["arms"]["sipt[planted]"]
    assert entry["local_consistency"] == pytest.approx(expected)
    assert entry["local_consistency_all_splits"] == pytest.approx(everything)
    table = format_domain_summary(report)
    assert "| arm | LC | LC (all splits) |" in table
    assert f"| sipt[planted] | {expected:.3f} | {everything:.3f} |" in table
