"""Do ``pretrain``'s defaults do what SIPT promises? Every init, default flags, real text.

Run as ``python benchmarks/bench_defaults.py [--seeds 3] [--steps 60 | --epochs 4] [--max-length 64]
[--inits minilm char tiny-bert] [--json PATH]``.

For each init (all-MiniLM-L6-v2, the character transformer, a tiny random BERT) and each graph, one
``sipt-lab pretrain`` run per seed with nothing but the data, its length (``--steps``, or ``--epochs``
passes over the graph's samples), ``--batch-size 16`` and ``--max-length`` given (everything else is
:data:`sipt_lab.training.defaults.INIT_DEFAULTS`), resolved as the command resolves it and scored by
the run's own before/after report:

* ``wiki-categories``: vital-article summaries of 4 categories, each linked to 2-3 random articles
  of its own category (``--links N``: N), LC 1; one graph per ``--languages`` (``en``, ``fr``: the
  French summaries of the same package, ``wiki-categories (fr)``, the categories' French names);
* ``topic-cliques``: the default corpus's sentences, cliques over their most probable LDA topic
  (the paper's CLIQUES, LC 1);
* ``random``: the wiki-categories articles over a random graph with as many edges (the control).

Acceptance: on both LC-1 graphs every init's LOO 3-NN AUROC and link MRR rise over the init; on the
random graph SIPT's AUROC rises by no more than the LM-only arm's (same steps: what MLM alone gives a
fresh model) plus the seed noise (2 sd of the paired differences). Then MiniLM on an
inductive split (``--inductive``): pre-train on some articles, and score 3-NN accuracy and a
logistic-regression probe's macro-F1 on never-seen articles (references / probe fitted on other
never-seen articles): SIPT and LM-only with the defaults against the untouched init.
"""

from __future__ import annotations

import argparse
import ast
import json
import tempfile
from pathlib import Path

import numpy as np

from sipt_lab.core.stats import format_mean_sd
from sipt_lab.data.corpus import wiki_articles
from sipt_lab.evaluation import heldout_knn
from sipt_lab.jobs.configs import PretrainJob, resolve_pretrain_job
from sipt_lab.jobs.pretrain import initial_embeddings, job_source, run_pretraining
from sipt_lab.synthetic import GraphSpec, build_dataset
from sipt_lab.training import embed

#: The 4 categories of the wiki graphs, per language (the same topics under their French names).
CATEGORIES = {
    "en": ("Physical sciences", "History", "Arts", "Geography"),
    "fr": ("Science", "Histoire", "Arts et culture", "Géographie"),
}
METRICS = ("loo_3nn_auroc", "link_mrr", "radius_nn_accuracy")


def write_task(directory: Path, texts: list[str], labels: list[str], edges: list[tuple[int, int]]) -> dict[str, str]:
    """``samples.tsv``, ``labels.tsv`` and ``edges.tsv`` (ids ``s<i>``) in ``directory``; their paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {name: str(directory / f"{name}.tsv") for name in ("samples", "labels", "edges")}
    Path(paths["samples"]).write_text("".join(f"s{i}\t{' '.join(t.split())}\n" for i, t in enumerate(texts)))
    Path(paths["labels"]).write_text("".join(f"s{i}\t{label}\n" for i, label in enumerate(labels)))
    Path(paths["edges"]).write_text("".join(f"s{u}\ts{v}\n" for u, v in edges))
    return paths


def category_articles(per_category: int, rng: np.random.Generator, language: str = "en") -> tuple[list[str], list[str]]:
    """``per_category`` random vital-article summaries of ``language`` of each of its
    :data:`CATEGORIES`: texts, labels."""
    articles = wiki_articles(language)
    texts, labels = [], []
    for category in CATEGORIES[language]:
        members = [i for i, article in enumerate(articles) if article["topic"] == category]
        for i in rng.choice(members, per_category, replace=False):
            texts.append(articles[i]["extract"])
            labels.append(category)
    return texts, labels


def category_edges(labels: list[str], rng: np.random.Generator, links: int | None = None) -> list[tuple[int, int]]:
    """Each sample linked to ``links`` (None: 2-3) random samples of its own label (LC 1)."""
    labels = np.asarray(labels)
    edges = set()
    for node, label in enumerate(labels):
        same = np.flatnonzero(labels == label)
        for other in rng.choice(same[same != node], links or rng.integers(2, 4), replace=False):
            edges.add((min(node, other), max(node, other)))
    return sorted(edges)


def random_edges(n: int, count: int, rng: np.random.Generator) -> list[tuple[int, int]]:
    edges = set()
    while len(edges) < count:
        u, v = rng.integers(0, n, 2)
        if u != v:
            edges.add((min(u, v), max(u, v)))
    return sorted(edges)


def tasks(
    root: Path, per_category: int, cliques_nodes: int, languages: tuple[str, ...] = ("en",), links: int | None = None
) -> dict[str, dict[str, str]]:
    """The graphs of the module docstring, written under ``root`` (the random control over the English articles)."""
    graphs = {}
    for language in languages:
        rng = np.random.default_rng(0)
        texts, labels = category_articles(per_category, rng, language)
        linked = category_edges(labels, rng, links)
        name = "wiki-categories" if language == "en" else f"wiki-categories ({language})"
        graphs[name] = write_task(root / f"wiki-{language}", texts, labels, linked)
        if language == "en":
            control = texts, labels, random_edges(len(texts), len(linked), rng)
    cliques = build_dataset(GraphSpec(family="cliques", n_nodes=cliques_nodes, seed=0))
    return {
        **graphs,
        "topic-cliques": write_task(
            root / "cliques",
            cliques.sentences,
            [f"topic{t}" for t in cliques.labels],
            [tuple(edge) for edge in cliques.graph.edges().tolist()],
        ),
        **({"random": write_task(root / "random", *control)} if "en" in languages else {}),
    }


def tiny_bert(directory: Path) -> str:
    """A random 2-layer BERT of width 32 with MiniLM's tokenizer and an MLM head: a fresh Hugging Face init."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from sipt_lab.models.hf_checkpoints import named_checkpoint

    tokenizer = AutoTokenizer.from_pretrained(named_checkpoint("minilm"))
    config = BertConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    BertForMaskedLM(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return str(directory)


#: The ``--batch-size`` of every run.
BATCH_SIZE = 16
#: TrainConfig fields of every run: ``--max-length``, ``--device`` and ``--set NAME=VALUE`` (to measure an
#: alternative to a default).
OVERRIDES: dict[str, object] = {"device": "cpu", "max_len": 64}
#: ``--pooling`` of the Hugging Face inits (None: each one's own).
POOLING: dict[str, str | None] = {}


def job(
    task: dict[str, str], init: str, length: dict[str, float | None], seed: int, lambda_si: float | None = None
) -> PretrainJob:
    """What ``sipt-lab pretrain --samples --edges --labels --init {--steps N | --epochs E} --batch-size 16
    --max-length T --seed [--lambda-si]`` runs, resolved as the command resolves it; ``length`` is
    ``{"steps": N}`` or ``{"epochs": E}``."""
    settings = {
        **OVERRIDES,
        "steps": length.get("steps"),
        "batch_size": BATCH_SIZE,
        "seed": seed,
        "lambda_si": lambda_si,
    }
    return resolve_pretrain_job(
        settings,
        samples=task["samples"],
        edges=task["edges"],
        labels=task["labels"],
        init=init,
        pooling=None if init == "char" else POOLING.get("checkpoints"),
        epochs=length.get("epochs"),
    )


def report_rows(
    root: Path, graphs: dict[str, dict[str, str]], inits: dict[str, str], seeds: int, length: dict[str, float | None]
) -> list[dict]:
    rows = []
    for init_name, init in inits.items():
        for graph_name, task in graphs.items():
            # the control's LM-only arm separates what MLM alone moves from what the random graph does
            for arm, lambda_si in (("sipt", None), ("lm", 0.0)) if graph_name == "random" else (("sipt", None),):
                for seed in range(seeds):
                    run = job(task, init, length, seed, lambda_si)
                    outcome = run_pretraining(
                        run,
                        root / "runs" / f"{init_name}-{graph_name}-{arm}-{seed}",
                        log=lambda _: None,
                    )
                    report, si = outcome.report, outcome.result.history.get("si", np.full(1, np.nan))
                    rows.append(
                        {
                            "init": init_name,
                            "graph": graph_name if arm == "sipt" else f"{graph_name} (LM only)",
                            "seed": seed,
                            "steps": run.train.steps,
                            "lc": report["local_consistency"],
                            **{f"{m}_before": report["before"][m] for m in METRICS},
                            **{f"{m}_after": report["after"][m] for m in METRICS},
                            "si_first": float(si[0]),
                            "si_last": float(si[-1]),
                            "warnings": len(report["warnings"]),
                        }
                    )
                    print(
                        f"  {init_name:9s} {rows[-1]['graph']:15s} seed {seed}: AUROC {rows[-1]['loo_3nn_auroc_before']:.3f} -> "
                        f"{rows[-1]['loo_3nn_auroc_after']:.3f}, MRR {rows[-1]['link_mrr_before']:.3f} -> {rows[-1]['link_mrr_after']:.3f}",
                        flush=True,
                    )
    return rows


def print_report_table(rows: list[dict]) -> None:
    print(
        "\n| init | graph | LC | LOO 3-NN AUROC | link MRR | r-NN accuracy | L_SI first -> last | rises (AUROC, MRR) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for init in dict.fromkeys(r["init"] for r in rows):
        for graph in dict.fromkeys(r["graph"] for r in rows):
            group = [r for r in rows if r["init"] == init and r["graph"] == graph]
            cells = []
            for metric in METRICS:
                before = format_mean_sd([r[f"{metric}_before"] for r in group])
                after = format_mean_sd([r[f"{metric}_after"] for r in group])
                cells.append(f"{before} -> {after}")
            rises = [r[f"{m}_after"] - r[f"{m}_before"] for r in group for m in METRICS[:2]]
            si = f"{np.mean([r['si_first'] for r in group]):.3g} -> {np.mean([r['si_last'] for r in group]):.3g}"
            print(
                f"| {init} | {graph} | {group[0]['lc']:.3f} | {' | '.join(cells)} | {si} | {sum(d > 0 for d in rises)}/{len(rises)} |"
            )
    verdicts = []
    for init in dict.fromkeys(r["init"] for r in rows):
        linked = [r for r in rows if r["init"] == init and r["lc"] == 1.0]
        rise = all(r[f"{m}_after"] > r[f"{m}_before"] for r in linked for m in METRICS[:2])
        verdict = f"{init}: AUROC and MRR rise on every LC-1 run: {'yes' if rise else 'NO'}"

        def control(graph: str, init: str = init) -> np.ndarray:
            return np.array(
                [
                    r["loo_3nn_auroc_after"] - r["loo_3nn_auroc_before"]
                    for r in rows
                    if r["init"] == init and r["graph"] == graph
                ]
            )

        sipt, lm = control("random"), control("random (LM only)")
        if len(sipt) > 1 and len(sipt) == len(lm):
            noise = 2 * np.std(sipt - lm, ddof=1)
            verdict += (
                f"; random graph: AUROC change {sipt.mean():+.3f} (LM only {lm.mean():+.3f}), "
                f"SIPT - LM {np.mean(sipt - lm):+.3f} (2 sd {noise:.3f})"
            )
        verdicts.append(verdict)
    print("\n" + "\n".join(verdicts))


def inductive(root: Path, length: dict[str, float | None], seeds: int, per_category: int, minilm: str) -> None:
    """MiniLM on never-seen articles: the untouched init vs LM-only and SIPT with the defaults (see the
    module docstring); the probe is a logistic regression on standardised embeddings."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(1)
    texts, labels = category_articles(3 * per_category, rng)
    labels = np.asarray(labels)
    order = rng.permutation(len(texts))
    pretraining, train, test = np.array_split(order, 3)
    task = write_task(
        root / "inductive",
        [texts[i] for i in pretraining],
        labels[pretraining].tolist(),
        category_edges(labels[pretraining].tolist(), rng),
    )

    def scores(vectors: np.ndarray) -> tuple[float, float]:
        knn = heldout_knn(vectors[train], labels[train], vectors[test], labels[test], 3)
        probe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(vectors[train], labels[train])
        return knn.accuracy, f1_score(labels[test], probe.predict(vectors[test]), average="macro")

    results = {"init": [], "LM only": [], "SIPT": []}
    for seed in range(seeds):
        run = job(task, minilm, length, seed)
        source = job_source(run)
        results["init"].append(scores(initial_embeddings(texts, run.train, source, source.tokenizer(texts, 64))))
        for arm, lambda_si in (("LM only", 0.0), ("SIPT", None)):
            outcome = run_pretraining(
                job(task, minilm, length, seed, lambda_si),
                root / "runs" / f"inductive-{arm[:2]}-{seed}",
                log=lambda _: None,
            )
            results[arm].append(
                scores(embed(outcome.result.encoder, outcome.result.tokenizer, texts, device=run.train.device))
            )
    print(
        f"\nMiniLM on never-seen articles ({len(pretraining)} pre-training, {len(train)} FT train, {len(test)} test, {seeds} seeds):"
    )
    print("| arm | 3-NN accuracy | probe macro-F1 |\n|---|---|---|")
    for arm, values in results.items():
        values = np.array(values)
        print(f"| {arm} | {format_mean_sd(values[:, 0])} | {format_mean_sd(values[:, 1])} |")
    gap = np.array(results["SIPT"]) - np.array(results["init"])
    print(f"SIPT - init: 3-NN accuracy {format_mean_sd(gap[:, 0])}, probe macro-F1 {format_mean_sd(gap[:, 1])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    length = parser.add_mutually_exclusive_group()
    length.add_argument("--steps", type=int, default=60, help="optimiser steps of every run (default: %(default)s)")
    length.add_argument(
        "--epochs", type=float, help="passes over each graph's samples instead of --steps, as pretrain --epochs"
    )
    parser.add_argument("--max-length", type=int, default=64, help="tokens per sample (default: %(default)s)")
    parser.add_argument("--per-category", type=int, default=40, help="articles per category (4 categories)")
    parser.add_argument("--cliques-nodes", type=int, default=160)
    parser.add_argument("--inits", nargs="+", default=["minilm", "char", "tiny-bert"])
    parser.add_argument(
        "--graphs", nargs="+", default=["wiki-categories", "topic-cliques", "random"], help="graph names (see above)"
    )
    parser.add_argument("--languages", nargs="+", default=["en", "fr"], choices=sorted(CATEGORIES))
    parser.add_argument("--links", type=int, help="same-category links per wiki article (default: 2-3)")
    parser.add_argument("--inductive", action="store_true", help="also the MiniLM inductive split")
    parser.add_argument("--json", metavar="PATH", help="also write the settings and the report rows as JSON")
    parser.add_argument(
        "--pooling", choices=("cls", "mean"), help="pooling of the Hugging Face inits (default: each one's own)"
    )
    parser.add_argument("--device", default="cpu", help="where every run trains and embeds (default: %(default)s)")
    parser.add_argument(
        "--minilm",
        metavar="DIR",
        help="a local copy of all-MiniLM-L6-v2 to use as the minilm init (default: the package's)",
    )
    parser.add_argument(
        "--set",
        nargs="+",
        default=[],
        metavar="NAME=VALUE",
        help="TrainConfig fields instead of the defaults, e.g. lambda_si=0.5 or loss_params={...} (Python literals)",
    )
    args = parser.parse_args()
    POOLING["checkpoints"] = args.pooling
    OVERRIDES.update(device=args.device, max_len=args.max_length)
    OVERRIDES.update({name: ast.literal_eval(value) for name, _, value in (item.partition("=") for item in args.set)})
    run_length = {"epochs": args.epochs} if args.epochs else {"steps": args.steps}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        graphs = {
            name: task
            for name, task in tasks(
                root, args.per_category, args.cliques_nodes, tuple(args.languages), args.links
            ).items()
            if name.split(" (")[0] in args.graphs
        }
        paths = {
            "tiny-bert": lambda: tiny_bert(root / "tiny-bert"),
            "minilm": lambda: args.minilm or "minilm",
            "char": lambda: "char",
        }
        inits = {name: paths[name]() for name in args.inits}
        rows = report_rows(root, graphs, inits, args.seeds, run_length)
        print_report_table(rows)
        if args.json:
            settings = {
                "samples": 4 * args.per_category,
                "links": args.links,
                **run_length,
                "batch_size": BATCH_SIZE,
                "max_length": args.max_length,
                "seeds": args.seeds,
                "set": OVERRIDES,
            }
            Path(args.json).write_text(json.dumps({"settings": settings, "rows": rows}, indent=1, default=float) + "\n")
        if args.inductive:
            inductive(root, run_length, args.seeds, args.per_category, inits.get("minilm", args.minilm or "minilm"))


if __name__ == "__main__":
    main()
