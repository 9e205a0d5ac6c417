"""Figures say what they show: the dataset, the seeds and the metric in words, no spread claimed for
one seed, and coinciding points of a scatter counted rather than hidden."""

import csv
from pathlib import Path

import pytest

from sipt_lab.core.stats import spread_phrase
from sipt_lab.viz import figure5_plots, plots

RESULTS = Path(__file__).resolve().parents[2] / "results"


def _rows(name: str, seeds: int) -> list[dict]:
    with open(RESULTS / f"{name}.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [{key: _number(key, value) for key, value in row.items()} | {"n_seeds": seeds} for row in rows]


def _number(key: str, value: str):
    return value if key == "graph" else float(value)


@pytest.fixture()
def titles(monkeypatch):
    seen = []
    for name in ("grouped_bars", "lines_with_bands"):
        monkeypatch.setattr(plots, name, lambda *args, title="", **kwargs: seen.append(title) or [])
    return seen


@pytest.mark.parametrize("seeds, phrase", [(1, "one seed, no spread"), (3, "mean ± sd over 3 seeds")])
def test_figure5_titles_name_the_dataset_metric_and_seeds(titles, tmp_path, seeds, phrase):
    assert spread_phrase(seeds) == phrase
    figure5_plots.draw_fig5a(_rows("fig5a", seeds), tmp_path / "a")
    figure5_plots.draw_fig5b(_rows("fig5b", seeds), tmp_path / "b")
    assert all(phrase in title and "3-NN AUROC of the topic task" in title for title in titles)
    assert "CLIQUES" in titles[1] and "graph family" in titles[0]


def test_coinciding_scatter_points_are_counted(monkeypatch, tmp_path):
    figures = []
    monkeypatch.setattr(plots, "save", lambda fig, stem: figures.append(fig) or [])
    x, y = [1.0] * 5 + [0.3], [1.0] * 5 + [0.2]
    panel = plots.ScatterPanel(x, y, "LC", "accuracy", shapes=["SIPT", "oracle"] * 3, values=[1.0] * 6)
    plots.scatter_panels(tmp_path / "theorem1", [panel])
    texts = [text.get_text() for ax in figures[0].axes for text in ax.texts]
    assert "×5" in texts and not any(t.startswith("×") and t != "×5" for t in texts)
