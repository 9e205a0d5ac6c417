"""Does SIPT pre-training help on samples it never saw, and does LC predict when? (``sipt-lab study lc-transfer``)

Theorem 1 speaks of the pre-trained nodes; a user wants to know whether pre-training on *their*
graph helps *new* samples of their task. :func:`run_lc_transfer` answers it on any labelled task
(texts + integer labels) with a dial for the pre-training graph's local consistency:

* **The LC dial** (:func:`dial_graph`): cliques over labels that agree with the task label with
  probability ``q`` (:func:`sipt_lab.experiments.paper.theory.correlated_labels`), else uniform. ``q = 0`` is the
  negative control (a random clique graph), ``q = 1`` the task's own label cliques. In the large
  clique limit its LC is :func:`dial_target_lc` (``q + (1 - q) / C`` for balanced classes); the LC
  reported is the one *measured* on the graph over the pre-training nodes.
* **Inductive splits** (:func:`inductive_splits`): pre-training nodes, then fine-tuning train /
  validation / test drawn from the samples never pre-trained on; written as ``splits.tsv``. The
  ``transductive`` protocol pre-trains on every split's samples instead (the paper's setting),
  and says so in the summary and the verdict.
* **Arms**, per seed, same steps, data order and seed: ``init`` (the encoder as initialised, no
  training), ``lm`` (λ_SI = 0; the graph is not read, so one run serves every level), ``sipt`` (the
  init kind's default λ_SI, one run per level), plus the reference row ``tfidf`` (word TF-IDF fitted
  on the pre-training texts, no training). Both trained arms build the encoder under the same seed
  from the same texts, and a new MLM head's frozen-encoder warm-up is deterministic from the seed,
  so they start from the same weights.
* **Metrics on the never-seen test split** (:func:`heldout_metrics`): ``k``-NN accuracy and macro
  AUROC with neighbours from the fine-tuning train split, and a linear probe (fitted on train,
  strength chosen on validation) accuracy and macro-F1.

Files written into the run directory (a new or empty one; an earlier study's is replaced only when
asked, :func:`sipt_lab.core.outputs.run_output`):

* ``config.json``: the :class:`LcTransferConfig`;
* ``splits.tsv``: ``id<TAB>pretrain|train|validation|test``;
* ``results.csv``: one row per LC level × arm × seed × metric, columns ``level`` (index into the
  grid; empty for arms that do not depend on it: ``init``, ``lm``, ``tfidf``), ``q``, ``target_lc``,
  ``lc`` (measured over the pre-training nodes for that seed's graph), ``arm``, ``seed`` (empty
  for ``tfidf``), ``metric``, ``value`` (in ``[0, 1]``);
* ``summary.json``: :func:`summarise`'s fields (``slope``, ``slope_ci``, ``crossover_lc``,
  ``control_gain``, ``encoder_consistency``, ``crossover_minus_encoder``, per-level paired gains,
  ``mde``, ``verdict``);
* ``gain_vs_lc.png`` / ``.pdf``: the paired gain SIPT − LM-only against measured LC, 95 % CIs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from sipt_lab.core import fileio, names, outputs
from sipt_lab.core.config import save_config
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.core.options import option, validate
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.training import TrainConfig

#: Metrics of :func:`heldout_metrics`, each in ``[0, 1]``.
STUDY_METRICS = names.STUDY_METRICS
#: The study's training length and batch over the init kind's defaults (a short run per arm).
STUDY_TRAIN = {"steps": 100, "batch_size": 16, "max_len": 64}
#: Arms of the study (``tfidf`` is a reference row that needs no training; ``natural`` is SIPT over
#: the task's own graph, when one is given).
STUDY_ARMS = ("init", "lm", "sipt", "natural", "tfidf")
#: The default task's classes: vital-article summaries of these categories.
ARTICLE_CATEGORIES = ("Physical sciences", "History", "Arts", "Geography")
SPLIT_NAMES = ("pretrain", "train", "validation", "test")
RUN_FILES = ("config.json", "splits.tsv", "results.csv", "summary.json", "gain_vs_lc.png", "gain_vs_lc.pdf")


@dataclass(frozen=True)
class LcTransferConfig:
    """One LC-transfer study (saved as ``config.json``).

    Attributes:
        samples, labels: a samples file and its ``id<TAB>label`` TSV; None: the default task,
            vital-article summaries of :data:`ARTICLE_CATEGORIES` labelled by category.
        edges: the task's own graph (``u<TAB>v`` sample ids of ``samples``), optional: one more
            SIPT arm (``natural``) pre-trains on its subgraph over the pre-training nodes, and the
            summary sets its measured gain beside the gain the dial's line predicts at its LC.
        n_pretrain, n_train, n_validation, n_test: split sizes (samples); the last three are never
            pre-trained on.
        levels: the dial's ``q`` grid, each in ``[0, 1]``, at least two distinct values.
        seeds: seeds ``0..seeds-1``; each trains every arm once.
        init, pooling, encoder: where the encoder comes from (as ``sipt-lab pretrain``).
        train: the trainer's settings; its ``seed`` is replaced per seed and its ``lambda_si`` is the
            SIPT arm's (the LM-only arm sets 0). None: the init kind's defaults
            (:func:`sipt_lab.training.defaults.train_config`) with ``steps=100, batch_size=16, max_len=64``.
        k: neighbours of the k-NN metric and of the init's own k-NN graph.
        metric: the :data:`STUDY_METRICS` entry the summary's gains and slope are computed on.
        split_seed: seed of the splits and of the dial's graphs.
        bootstrap: bootstrap resamples (over seeds) of the slope's CI.
        pilot_sd: sd of the paired gains over seeds measured by a pilot (an earlier study's
            ``paired_sd``): the run states the effect its seeds can detect before training.
        protocol: ``inductive`` (the fine-tuning splits are never pre-trained on) or
            ``transductive`` (every split's samples are pre-training nodes too, as in the paper's
            protocol; labelled so in the summary and the verdict).
    """

    samples: str | None = option(None, nonempty=True, metavar="S", help="samples file of the task (with --labels; default: "
                                 "vital-article summaries of 4 categories)")
    labels: str | None = option(None, help="id<TAB>label of every sample", nonempty=True, metavar="L.tsv")
    edges: str | None = option(None, nonempty=True, metavar="E.tsv",
                               help="the task's own graph (u<TAB>v sample ids): one more SIPT arm on it, its gain set beside "
                               "what its LC predicts")
    n_pretrain: int = option(600, help="pre-training samples", range=(2, None), metavar="N")
    n_train: int = option(300, range=(2, None), metavar="N",
                          help="never-seen fine-tuning train samples: the k-NN references and probe data")
    n_validation: int = option(100, help="never-seen validation samples", range=(1, None), metavar="N")
    n_test: int = option(300, help="never-seen test samples", range=(1, None), metavar="N")
    levels: tuple[float, ...] = option((0.0, 0.25, 0.5, 0.75, 1.0), range=(0.0, 1.0), metavar="Q",
                                       help="the dial's q grid, each in [0, 1] (q=0: the random control)")
    seeds: int = option(3, help="seeds, each training every arm", range=(1, None))
    init: str = option("minilm", help="char, minilm or a Hugging Face directory", nonempty=True)
    pooling: str | None = option(None, choices=names.POOLINGS, help="pooling of a Hugging Face init (default: its own)")
    encoder: str = option("default", choices=names.ENCODER_PRESETS, help="size of the char encoder")
    train: TrainConfig | None = None
    k: int = option(3, help="neighbours of the k-NN metric", range=(1, None))
    metric: str = option("knn_auroc", choices=STUDY_METRICS, help="metric of the gains and the slope")
    split_seed: int = option(0, help="seed of the splits and the dial's graphs", range=(0, None))
    bootstrap: int = option(2000, help="bootstrap resamples of the slope's CI", range=(1, None), metavar="B")
    pilot_sd: float | None = option(None, help="sd of a pilot's paired gains over seeds", range=(0.0, None))
    protocol: str = option("inductive", choices=names.STUDY_PROTOCOLS,
                           help="inductive: fine-tuning splits never pre-trained on; transductive: every split "
                           "pre-trained on too")

    def __post_init__(self) -> None:
        object.__setattr__(self, "levels", tuple(float(q) for q in self.levels))
        validate(self)
        if len(set(self.levels)) < 2:
            raise ConfigError("LcTransferConfig.levels", f"needs at least two distinct levels (one gives no slope), got {list(self.levels)}")
        if (self.samples is None) != (self.labels is None):
            raise ConfigError("LcTransferConfig.labels", "give the samples file and its labels together, or neither (the default task)")
        if self.edges is not None and self.samples is None:
            raise ConfigError("LcTransferConfig.edges", "a graph needs the samples file its ids belong to")
        if self.train is None:
            from sipt_lab.training.defaults import init_kind, train_config

            object.__setattr__(self, "train", train_config(init_kind(self.init), **STUDY_TRAIN))

    @property
    def sizes(self) -> dict[str, int]:
        """Split name -> number of samples."""
        return {"pretrain": self.n_pretrain, "train": self.n_train, "validation": self.n_validation, "test": self.n_test}


# ---------------------------------------------------------------------- the LC dial
def dial_groups(labels: np.ndarray, q: float, rng: np.random.Generator) -> np.ndarray:
    """``(n,)`` clique label per sample: the task label (``(n,)`` ints ``0..C-1``) with probability
    ``q``, else a uniformly random class."""
    labels = np.asarray(labels)
    from sipt_lab.experiments.paper.theory import correlated_labels

    return correlated_labels(labels, int(labels.max()) + 1, q, rng)


def dial_graph(labels: np.ndarray, q: float, rng: np.random.Generator) -> PretrainingGraph:
    """Implicit clique graph over :func:`dial_groups`: samples with the same clique label are linked."""
    return PretrainingGraph.from_groups(dial_groups(labels, q, rng))


def dial_target_lc(labels: np.ndarray, q: float) -> float:
    """LC of ``labels`` (``(n,)`` ints ``0..C-1``) over :func:`dial_graph` at ``q`` in the large-clique
    limit: in clique ``c`` a class ``j`` has weight ``p_j (q [j = c] + (1 - q) / C)``, its plurality
    class wins, and LC is the share of samples whose label is their clique's plurality."""
    counts = np.bincount(np.asarray(labels))
    p, n_classes = counts / counts.sum(), counts.size
    weights = p[None, :] * (q * np.eye(n_classes) + (1 - q) / n_classes)  # (clique c, class j)
    winners = np.isclose(weights, weights.max(axis=1, keepdims=True))  # ties split, as local_consistency's default
    return float(np.sum((weights * winners).sum(axis=1) / winners.sum(axis=1)))


# ---------------------------------------------------------------------- splits
def inductive_splits(labels: np.ndarray, sizes: dict[str, int], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Disjoint random index arrays ``{"pretrain", "train", "validation", "test"}`` of the given sizes
    over ``(n,)`` labels; the last three are never pre-trained on. SiptError (before any training)
    when the task has one class, too few samples, or a split's classes do not let the metrics run."""
    labels = np.asarray(labels)
    classes = np.unique(labels)
    if classes.size < 2:
        raise SiptError(f"the task has one class ({classes[0] if classes.size else 'none'}); a study needs labels of at least two classes")
    never_seen = sizes["train"] + sizes["validation"] + sizes["test"]
    available = labels.size - sizes["pretrain"]
    if available < never_seen:
        raise SiptError(f"the task has {labels.size} samples: after {sizes['pretrain']} pre-training samples {max(available, 0)} are never "
                        f"seen, but the train/validation/test splits need {never_seen}; lower the split sizes or give more samples")
    order = rng.permutation(labels.size)
    bounds = np.cumsum([sizes[name] for name in SPLIT_NAMES])
    splits = dict(zip(SPLIT_NAMES, np.split(order, bounds)[:-1], strict=True))
    for name in ("pretrain", "train"):
        if np.unique(labels[splits[name]]).size < 2:
            raise SiptError(f"the {name} split holds one class only; make it larger")
    missing = np.setdiff1d(labels[splits["test"]], labels[splits["train"]])
    if missing.size:
        raise SiptError(f"test classes {missing.tolist()} never occur in the fine-tuning train split; make --n-train larger")
    return splits


def pretraining_nodes(splits: dict[str, np.ndarray], protocol: str) -> np.ndarray:
    """Indices of the samples pre-trained on: the ``pretrain`` split (``inductive``), or every
    split's samples (``transductive``)."""
    if protocol == "inductive":
        return splits["pretrain"]
    return np.concatenate([splits[name] for name in SPLIT_NAMES])


def splits_tsv(ids, splits: dict[str, np.ndarray]) -> str:
    """``id<TAB>split`` lines of every sample in a split (the ``splits.tsv`` format)."""
    return "".join(f"{ids[i]}\t{name}\n" for name in SPLIT_NAMES for i in splits[name])


# ---------------------------------------------------------------------- metrics
def knn_graph(embeddings: np.ndarray, k: int) -> PretrainingGraph:
    """Each of the ``(n, H)`` rows linked to its ``k`` nearest other rows (Euclidean), symmetrised."""
    from sklearn.neighbors import NearestNeighbors

    n = embeddings.shape[0]
    _, neighbours = NearestNeighbors(n_neighbors=min(k + 1, n)).fit(embeddings).kneighbors(embeddings)
    rows = np.repeat(np.arange(n), neighbours.shape[1])
    return PretrainingGraph.from_edges(rows, neighbours.ravel(), n)  # self-matches are dropped


def encoder_consistency(embeddings: np.ndarray, labels: np.ndarray, k: int) -> float:
    """The encoder's own neighbourhood consistency: LC of ``labels`` over the ``k``-NN graph of its
    ``(n, H)`` embeddings (the LC a pre-training graph must beat to add structure)."""
    from sipt_lab.graphs.consistency import local_consistency

    return float(local_consistency(knn_graph(embeddings, k), labels))


def heldout_metrics(vectors: np.ndarray, labels: np.ndarray, train: np.ndarray, validation: np.ndarray,
                    test: np.ndarray, k: int) -> dict[str, float]:
    """:data:`STUDY_METRICS` on the ``test`` rows of ``(n, H)`` ``vectors``: ``k``-NN with neighbours
    from the ``train`` rows, and a linear probe fitted on ``train`` with its strength chosen on
    ``validation`` (index arrays into ``vectors`` and the ``(n,)`` ``labels``)."""
    from sipt_lab.evaluation import heldout_knn
    from sipt_lab.data.tasks import linear_probe

    knn = heldout_knn(vectors[train], labels[train], vectors[test], labels[test], k)
    probe = linear_probe(vectors[train], labels[train], vectors[validation], labels[validation], vectors[test],
                         labels[test], "classification").test
    return {"knn_accuracy": float(knn.accuracy), "knn_auroc": float(knn.auroc),
            "probe_accuracy": float(probe["accuracy"]), "probe_macro_f1": float(probe["macro_f1"])}


def tfidf_vectors(pretrain_texts: list[str], texts: list[str]) -> np.ndarray:
    """``(n, V)`` dense word TF-IDF rows of ``texts`` (at most 8192 words), vocabulary and IDF fitted
    on ``pretrain_texts`` only (:func:`sipt_lab.domains.wiki.tfidf_features`)."""
    from sipt_lab.domains.wiki import tfidf_features

    return tfidf_features([*pretrain_texts, *texts], np.arange(len(pretrain_texts)), 8192)[len(pretrain_texts):].toarray().astype(np.float32)


# ---------------------------------------------------------------------- power
def pilot_sd(summary_path: str | Path) -> float:
    """The ``paired_sd`` of an earlier study's ``summary.json`` (the pilot's seed-to-seed sd of the
    paired gains); SiptError when it is missing or undefined (a pilot of one seed)."""
    import json

    text = fileio.read_text_file(summary_path, "pilot summary")
    try:
        value = json.loads(text).get("paired_sd")
    except (ValueError, AttributeError):
        value = None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SiptError(f"{summary_path} holds no finite paired_sd; pass the summary.json of a study with at least two seeds")
    return float(value)


def power_line(sd: float, seeds: int) -> str:
    """What ``seeds`` seeds can detect when the paired gains have sd ``sd``, in one line."""
    from sipt_lab.core.stats import minimum_detectable_effect

    return (f"with {seeds} seeds and a paired sd of {sd:.4f}, the smallest gain a paired t-test detects "
            f"(two-sided 5%, power 0.8) is {minimum_detectable_effect(sd, seeds):.4f}")


# ---------------------------------------------------------------------- the task
def study_task(config: LcTransferConfig) -> tuple[list[str], list[str], np.ndarray, PretrainingGraph | None]:
    """``(ids, texts, labels (n,) ints, the task's own graph or None)`` of the study's task: the
    config's files, or the default articles of :data:`ARTICLE_CATEGORIES`."""
    if config.samples is not None:
        from sipt_lab.data.samples import read_sample_graph, read_sample_labels, read_samples

        samples = read_samples(config.samples)
        natural = None if config.edges is None else read_sample_graph(config.edges, samples)
        return list(samples.ids), list(samples.texts), read_sample_labels(config.labels, samples)[0], natural
    from sipt_lab.data.corpus import default_articles

    chosen = [(i, a) for i, a in enumerate(default_articles()) if a["topic"] in ARTICLE_CATEGORIES]
    return ([f"article{i}" for i, _ in chosen], [a["extract"] for _, a in chosen],
            np.array([ARTICLE_CATEGORIES.index(a["topic"]) for _, a in chosen]), None)


# ---------------------------------------------------------------------- running
def arm_configs(config: LcTransferConfig, seed: int) -> dict[str, object]:
    """The trained arms' :class:`~sipt_lab.training.TrainConfig` for ``seed``: identical but for
    ``lambda_si`` (0 for ``lm``)."""
    sipt = replace(config.train, seed=seed)
    return {"lm": replace(sipt, lambda_si=0.0), "sipt": sipt}


def train_arm(texts: list[str], graph: PretrainingGraph, train, source, *, progress: bool = False):
    """:func:`~sipt_lab.training.pretrain` of one arm on the pre-training ``texts`` and ``graph``."""
    from sipt_lab.training import pretrain

    return pretrain(texts, graph, train, source, progress=progress)


def study_source(config: LcTransferConfig):
    """The study's :class:`~sipt_lab.models.EncoderSource` (``init``, char size, pooling)."""
    from sipt_lab.models import encoder_preset, encoder_source

    return encoder_source(config.init, encoder_preset(config.encoder) if config.init == "char" else None, config.pooling)


def run_lc_transfer(config: LcTransferConfig, out: str | Path, *, overwrite: bool = False, progress: bool = True,
                    log=print) -> dict:
    """Run the study of the module docstring into ``out`` (a new or empty directory; an earlier
    study's with ``overwrite``, under :func:`sipt_lab.core.outputs.run_output`); returns the summary.
    Every input check runs before any training."""
    outputs.check_output_dir(out)
    ids, texts, labels, natural = study_task(config)
    rng = np.random.default_rng(config.split_seed)
    splits = inductive_splits(labels, config.sizes, rng)
    if natural is not None:
        natural = natural.subgraph(pretraining_nodes(splits, config.protocol))
        if natural.n_edges == 0:
            raise SiptError(f"{config.edges} links no two pre-training samples; give a graph over the samples, or more pre-training samples")
    source = study_source(config)
    if config.pilot_sd is not None:
        log(power_line(config.pilot_sd, config.seeds))
    with outputs.run_output(out, "study lc-transfer", finished="summary.json", overwrite=overwrite, resumable=False,
                            log=log) as out_dir:
        outputs.record_files(out_dir, list(RUN_FILES))
        save_config(config, out_dir / "config.json")
        fileio.write_text_atomic(out_dir / "splits.tsv", splits_tsv(ids, splits))
        summary = _run_arms(config, texts, labels, splits, source, natural, progress, log)
        fileio.write_text_atomic(out_dir / "results.csv", results_csv(summary.pop("rows")))
        fileio.write_json_atomic(out_dir / "summary.json", summary)
        draw_gain_figure(out_dir / "gain_vs_lc", summary)
    log(summary["verdict"])
    return summary


def _run_arms(config: LcTransferConfig, texts: list[str], labels: np.ndarray, splits: dict[str, np.ndarray], source,
              natural: PretrainingGraph | None, progress: bool, log) -> dict:
    """Train and score every arm of every seed (``natural``: the task's own graph over the
    pre-training nodes, or None); :func:`summarise`'s summary with the ``rows`` added."""
    from sipt_lab.graphs.consistency import local_consistency
    from sipt_lab.experiments.pretrain_job import initial_embeddings
    from sipt_lab.training import embed

    pt = pretraining_nodes(splits, config.protocol)
    pt_texts, pt_labels = [texts[i] for i in pt], labels[pt]
    new = np.concatenate([splits[name] for name in ("train", "validation", "test")])
    new_texts, new_labels = [texts[i] for i in new], labels[new]
    positions = np.split(np.arange(new.size), np.cumsum([config.n_train, config.n_validation]))
    score = lambda vectors: heldout_metrics(vectors, new_labels, *positions, config.k)

    rows: list[dict] = []

    def record(arm: str, seed, metrics: dict, level=None, q=None, target=None, lc=None) -> None:
        rows.extend({"level": level, "q": q, "target_lc": target, "lc": lc, "arm": arm, "seed": seed,
                     "metric": metric, "value": value} for metric, value in metrics.items())

    record("tfidf", None, score(tfidf_vectors(pt_texts, new_texts)))
    targets = [dial_target_lc(pt_labels, q) for q in config.levels]
    own = []
    for seed in range(config.seeds):
        trains = arm_configs(config, seed)
        tokenizer = source.tokenizer(pt_texts, config.train.max_len)
        init_pt = initial_embeddings(pt_texts, trains["lm"], source, tokenizer)
        own.append(encoder_consistency(init_pt, pt_labels, config.k))
        record("init", seed, score(initial_embeddings(new_texts, trains["lm"], source, tokenizer)))
        graphs = [dial_graph(pt_labels, q, np.random.default_rng([config.split_seed, seed, level]))
                  for level, q in enumerate(config.levels)]
        lm = train_arm(pt_texts, graphs[-1], trains["lm"], source, progress=progress)
        record("lm", seed, score(embed(lm.encoder, lm.tokenizer, new_texts, device=trains["lm"].device)))
        for level, (q, graph) in enumerate(zip(config.levels, graphs)):
            lc = float(local_consistency(graph, pt_labels))
            sipt = train_arm(pt_texts, graph, trains["sipt"], source, progress=progress)
            record("sipt", seed, score(embed(sipt.encoder, sipt.tokenizer, new_texts, device=trains["sipt"].device)),
                   level, q, targets[level], lc)
            log(f"seed {seed} q={q:g} (LC {lc:.3f}): {config.metric} SIPT {rows[-len(STUDY_METRICS) + STUDY_METRICS.index(config.metric)]['value']:.3f}")
        if natural is not None:
            own_graph = train_arm(pt_texts, natural, trains["sipt"], source, progress=progress)
            record("natural", seed, score(embed(own_graph.encoder, own_graph.tokenizer, new_texts, device=trains["sipt"].device)),
                   lc=float(local_consistency(natural, pt_labels)))

    return summarise(rows, config, float(np.mean(own))) | {"rows": rows}


def results_csv(rows: list[dict]) -> str:
    """The ``results.csv`` text of ``rows`` (columns of the module docstring; None is empty)."""
    columns = ("level", "q", "target_lc", "lc", "arm", "seed", "metric", "value")
    cell = lambda v: "" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))
    return ",".join(columns) + "\n" + "".join(",".join(cell(row[c]) for c in columns) + "\n" for row in rows)


# ---------------------------------------------------------------------- statistics
def paired_gains(rows: list[dict], metric: str, n_levels: int, n_seeds: int, baseline: str = "lm") -> tuple[np.ndarray, np.ndarray]:
    """``(levels, seeds)`` gains SIPT − ``baseline`` on ``metric`` (paired by seed) and the
    ``(levels, seeds)`` measured LC of each seed's graph."""
    base = {row["seed"]: row["value"] for row in rows if row["arm"] == baseline and row["metric"] == metric}
    gains, lcs = np.full((n_levels, n_seeds), np.nan), np.full((n_levels, n_seeds), np.nan)
    for row in rows:
        if row["arm"] == "sipt" and row["metric"] == metric:
            gains[row["level"], row["seed"]] = row["value"] - base[row["seed"]]
            lcs[row["level"], row["seed"]] = row["lc"]
    return gains, lcs


def gain_slope(lc: np.ndarray, gains: np.ndarray, bootstrap: int, rng: np.random.Generator) -> dict:
    """Least-squares line of the mean gain (over seeds) against ``(levels,)`` mean LC, from
    ``(levels, seeds)`` ``gains``: ``slope`` (gain per unit LC), ``intercept``, ``crossover_lc`` (where
    the line crosses zero; None when outside ``[0, 1]`` or flat), and percentile 95 % bootstrap CIs
    over seeds resampled with replacement (``slope_ci``, ``crossover_ci``; NaN with one seed)."""
    def fit(g: np.ndarray) -> tuple[float, float]:
        slope, intercept = np.polyfit(lc, g.mean(axis=1), 1)
        return float(slope), float(intercept)

    def crossing(slope: float, intercept: float) -> float:
        x = -intercept / slope if slope else math.nan
        return x if 0.0 <= x <= 1.0 else math.nan

    slope, intercept = fit(gains)
    n_seeds = gains.shape[1]
    slope_ci = crossover_ci = [math.nan, math.nan]
    if n_seeds > 1:
        draws = np.array([fit(gains[:, rng.integers(0, n_seeds, n_seeds)]) for _ in range(bootstrap)])
        slope_ci = np.percentile(draws[:, 0], [2.5, 97.5]).tolist()
        crossings = np.array([crossing(s, i) for s, i in draws])
        crossings = crossings[np.isfinite(crossings)]
        if crossings.size:
            crossover_ci = np.percentile(crossings, [2.5, 97.5]).tolist()
    crossover = crossing(slope, intercept)
    return {"slope": slope, "slope_ci": slope_ci, "intercept": intercept,
            "crossover_lc": None if math.isnan(crossover) else crossover, "crossover_ci": crossover_ci}


def summarise(rows: list[dict], config: LcTransferConfig, own_consistency: float) -> dict:
    """The ``summary.json`` of a study's ``rows``: per-level paired gains SIPT − LM-only (and SIPT −
    init) on ``config.metric`` with 95 % t-CIs, :func:`gain_slope`, the control's gain (the lowest
    ``q``), the encoder's own consistency and how far the crossover lies above it, every arm's mean per metric, the minimum detectable effect
    of the seeds (paired sd pooled over levels, two-sided 5 %, power 0.8) and a one-line verdict."""
    from sipt_lab.core.stats import mean_ci, mean_sd, minimum_detectable_effect

    n_levels = len(config.levels)
    gains, lcs = paired_gains(rows, config.metric, n_levels, config.seeds)
    over_init, _ = paired_gains(rows, config.metric, n_levels, config.seeds, baseline="init")
    lc = lcs.mean(axis=1)
    levels = []
    for level, q in enumerate(config.levels):
        mean, low, high = mean_ci(gains[level])
        init_mean, init_low, init_high = mean_ci(over_init[level])
        levels.append({"q": q, "target_lc": dial_target_lc_of(rows, level), "lc": float(lc[level]),
                       "gain": mean, "gain_ci": [low, high], "gain_over_init": init_mean,
                       "gain_over_init_ci": [init_low, init_high]})
    fit = gain_slope(lc, gains, config.bootstrap, np.random.default_rng(config.split_seed))
    control = levels[int(np.argmin(config.levels))]
    paired_sd = float(np.sqrt(np.nanmean(gains.var(axis=1, ddof=1)))) if config.seeds > 1 else math.nan
    arms = {}
    for row in rows:
        arms.setdefault(row["arm"], {}).setdefault(row["metric"], []).append(row["value"])
    summary = {"protocol": config.protocol, "metric": config.metric, "seeds": config.seeds, "levels": levels, **fit,
               "control_gain": control["gain"], "control_gain_ci": control["gain_ci"],
               "encoder_consistency": own_consistency,
               "crossover_minus_encoder": None if fit["crossover_lc"] is None else fit["crossover_lc"] - own_consistency,
               "paired_sd": paired_sd,
               "mde": minimum_detectable_effect(paired_sd, config.seeds),
               "planned_mde": None if config.pilot_sd is None else minimum_detectable_effect(config.pilot_sd, config.seeds),
               "arms": {arm: {m: mean_sd(v)[0] for m, v in metrics.items()} for arm, metrics in arms.items()}}
    natural = {row["seed"]: row for row in rows if row["arm"] == "natural" and row["metric"] == config.metric}
    if natural:
        base = {row["seed"]: row["value"] for row in rows if row["arm"] == "lm" and row["metric"] == config.metric}
        mean, low, high = mean_ci([row["value"] - base[seed] for seed, row in natural.items()])
        lc_natural = float(np.mean([row["lc"] for row in natural.values()]))
        summary["natural"] = {"lc": lc_natural, "gain": mean, "gain_ci": [low, high],
                              "predicted_gain": fit["intercept"] + fit["slope"] * lc_natural}
    summary["verdict"] = verdict(summary)
    return summary


def dial_target_lc_of(rows: list[dict], level: int) -> float:
    """The target LC recorded on ``rows`` for ``level``."""
    return next(row["target_lc"] for row in rows if row["level"] == level)


def verdict(summary: dict) -> str:
    """One line: the slope with its CI, the crossover against the encoder's own consistency, the control."""
    fmt = lambda ci: f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
    crossover = summary["crossover_lc"]
    where = ("gain does not cross zero for LC in [0, 1]" if crossover is None else
             f"gain crosses zero at LC {crossover:.3f} (encoder's own neighbourhood consistency "
             f"{summary['encoder_consistency']:.3f})")
    samples = "never-seen" if summary["protocol"] == "inductive" else "pre-trained-on (transductive)"
    line = (f"SIPT - LM-only on {samples} test samples ({summary['metric']}, {summary['seeds']} seeds): slope "
            f"{summary['slope']:+.3f} per unit LC, 95% CI {fmt(summary['slope_ci'])}; {where}; control gain "
            f"{summary['control_gain']:+.3f} {fmt(summary['control_gain_ci'])}; detectable effect {summary['mde']:.3f}")
    if "natural" in summary:
        own = summary["natural"]
        line += (f"; the task's own graph (LC {own['lc']:.3f}): gain {own['gain']:+.3f} {fmt(own['gain_ci'])}, "
                 f"the line predicts {own['predicted_gain']:+.3f}")
    return line


def draw_gain_figure(stem: str | Path, summary: dict) -> list[Path]:
    """``<stem>.png`` / ``.pdf``: per-level mean gain against measured LC with 95 % CI bars."""
    from sipt_lab.viz.plots import labelled_errorbars

    levels = summary["levels"]
    half = [(lv["gain_ci"][1] - lv["gain_ci"][0]) / 2 for lv in levels]
    note = f"encoder's own consistency {summary['encoder_consistency']:.3f}; crossover LC " + (
        "none in [0, 1]" if summary["crossover_lc"] is None else f"{summary['crossover_lc']:.3f}")
    return labelled_errorbars(stem, {"SIPT - LM-only": ([lv["lc"] for lv in levels], [lv["gain"] for lv in levels], half)},
                              [f"q={lv['q']:g}" for lv in levels], xlabel="LC of the pre-training graph (measured)",
                              ylabel=f"gain in {summary['metric']} (95% CI)", title="Held-out gain vs LC", note=note)
