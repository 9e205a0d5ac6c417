"""Before paying for pre-training: will SIPT on this graph help this task on new samples? (``sipt-lab advise``)

Theorem 1 as a tool. :func:`advise` measures, on the user's own data and without training, what
the atlas's predictor reads: the local consistency of the labels over the graph (on the labelled
samples, with a Wilson interval) and the init's own k-NN consistency on the same samples (one
embedding pass). The predictor chosen and calibrated on the natural-graph atlas by grouped
validation (:mod:`~sipt_lab.jobs.gain_predictor`, its fit shipped as :data:`ATLAS_FIT`) turns them
into SIPT's predicted gain over LM-only for *one* run at a training budget, with the interval one
run falls in, a verdict, and the regime the prediction is for; settings that differ from the
atlas's are named.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sipt_lab.core.errors import SiptError
from sipt_lab.core.options import option, validate
from sipt_lab.models import names

logger = logging.getLogger(__name__)

#: The atlas's fitted predictor (``results/lc_atlas_fit.json``, shipped with the package).
ATLAS_FIT = Path(__file__).with_name("lc_atlas_fit.json")
#: Verdicts by where the single-run interval lies.
VERDICTS = {
    "help": "expected to help",
    "hurt": "expected to hurt",
    "unknown": "cannot tell: the interval of one run spans zero",
}
#: Keys of a ``fit.json`` that ``advise`` reads, with the check each must pass.
FIT_KEYS = ("format", "model", "level", "regime", "budgets", "ranges", "validation", "selection", "points")


@dataclass(frozen=True)
class AdviseConfig:
    """What :func:`advise` reads.

    Attributes:
        samples, edges, labels: the samples file, its graph (``u<TAB>v`` ids) and ``id<TAB>label``
            for any subset of the samples (LC and the encoder's consistency are measured on it).
        init, pooling: the encoder SIPT would start from (as ``sipt-lab pretrain``).
        max_len: tokens per sample of the embedding (None: the atlas's, so the consistency is
            measured as the fit's was).
        k: neighbours of the encoder's own consistency (None: the atlas's).
        steps: the optimiser steps the prediction is for (None: one pass over the samples at the
            atlas's batch, as ``pretrain``'s default is one pass).
        device: where the init embeds.
        fit: a predictor fitted by ``sipt-lab study atlas`` (its ``fit.json``); None: the shipped atlas fit.
        plot: a PNG (and PDF beside it) of the atlas's figure with this graph on it; None: none.
    """

    samples: str = option(help="samples file (id<TAB>text TSV, JSONL or one text per line)", nonempty=True, metavar="S")
    edges: str = option(help="the graph SIPT would pre-train on (u<TAB>v sample ids)", nonempty=True, metavar="E.tsv")
    labels: str = option(help="id<TAB>label of the labelled samples (any subset)", nonempty=True, metavar="L.tsv")
    init: str = option("minilm", help="minilm or a Hugging Face directory", nonempty=True)
    pooling: str | None = option(None, choices=names.POOLINGS, help="pooling of a Hugging Face init (default: its own)")
    max_len: int | None = option(
        None,
        range=(1, None),
        metavar="T",
        flag="--max-length",
        help="tokens per sample when embedding (default: the atlas's)",
    )
    k: int | None = option(
        None, range=(1, None), help="neighbours of the encoder's own consistency (default: the atlas's)"
    )
    steps: int | None = option(
        None,
        range=(1, None),
        metavar="N",
        help="optimiser steps to predict for (default: one pass over the samples at the atlas's batch)",
    )
    device: str = option("auto", help="where the init embeds: auto (CUDA when present), cpu or cuda", nonempty=True)
    fit: str | None = option(
        None, nonempty=True, metavar="FIT.json", help="a predictor from `study atlas` (default: the shipped one)"
    )
    plot: str | None = option(None, nonempty=True, metavar="FILE.png", help="draw your graph on the atlas's figure")

    def __post_init__(self) -> None:
        validate(self)


def load_fit(path: str | Path | None = None) -> dict:
    """The predictor of ``path`` (a ``fit.json`` of ``sipt-lab study atlas``; None: :data:`ATLAS_FIT`),
    checked: every key ``advise`` reads present, every budget's numbers finite."""
    from sipt_lab.core.fileio import read_text_file
    from sipt_lab.jobs.gain_predictor import FIT_FORMAT, MODELS

    path = ATLAS_FIT if path is None else Path(path)
    try:
        fit = json.loads(read_text_file(path, "the atlas's fit"))
    except json.JSONDecodeError as error:
        raise SiptError(
            f"{path} is not JSON ({error.msg}); pass the fit.json that `sipt-lab study atlas` wrote"
        ) from None
    if not isinstance(fit, dict) or not set(FIT_KEYS) <= set(fit):
        missing = sorted(set(FIT_KEYS) - set(fit if isinstance(fit, dict) else {}))
        raise SiptError(f"{path} is not a predictor fit (it lacks {missing}); pass a study atlas fit.json")
    if fit["format"] != FIT_FORMAT or fit["model"] not in MODELS:
        raise SiptError(
            f"{path} is a fit of format {fit['format']} with model {fit['model']!r}; this sipt-lab reads format "
            f"{FIT_FORMAT} with a model of {', '.join(MODELS)}: rerun `sipt-lab study atlas` to refit"
        )
    for steps, entry in fit["budgets"].items():
        numbers = [entry["half_width"], *_numbers(entry["params"])]
        if not all(isinstance(x, int | float) and math.isfinite(x) for x in numbers):
            raise SiptError(
                f"{path} holds a non-finite coefficient or interval at {steps} steps; refit it with `sipt-lab study atlas`"
            )
    return fit


def _numbers(value) -> list:
    """Every number inside nested lists and dicts."""
    if isinstance(value, dict):
        return [x for item in value.values() for x in _numbers(item)]
    if isinstance(value, list):
        return [x for item in value for x in _numbers(item)]
    return [value]


def advise(config: AdviseConfig | None = None, *, log=None, **fields) -> dict:
    """The advice of the module docstring on ``config``'s data (or an :class:`AdviseConfig` of
    ``fields``: ``advise(samples=..., edges=..., labels=...)``): a JSON-ready dict whose keys
    ``docs/guides/will-sipt-help.md`` lists: the sizes, ``lc`` with its Wilson ``lc_ci``,
    ``encoder_consistency`` at ``k``, the ``steps`` predicted for, ``predicted_gain`` and the
    single-run ``prediction_interval``, ``verdict`` and ``reason``, the ``regime`` of the atlas,
    the grouped validation at that budget (``validation``), and ``warnings``."""
    from sipt_lab.core.stats import wilson_interval
    from sipt_lab.data.samples import read_labelled_subset, read_sample_graph, read_samples
    from sipt_lab.evaluation.heldout import encoder_consistency
    from sipt_lab.graphs.consistency import labelled_subgraph, local_consistency_per_node
    from sipt_lab.jobs.gain_predictor import MODELS, budget_prediction, draw_fit, outside_range

    config = AdviseConfig(**fields) if config is None else config
    log = logger.info if log is None else log
    fit = load_fit(config.fit)
    regime = fit["regime"]
    k = regime["k"] if config.k is None else config.k
    samples = read_samples(config.samples)
    graph = read_sample_graph(config.edges, samples)
    nodes, labels = read_labelled_subset(config.labels, samples)
    if np.unique(labels).size < 2:
        raise SiptError(f"{config.labels} gives one class only; label samples of at least two classes")
    if k >= nodes.size:
        raise SiptError(
            f"the {k}-NN consistency needs more than {k} labelled samples, and {config.labels} labels {nodes.size}; "
            f"lower AdviseConfig.k below {nodes.size} or label more samples"
        )
    per_node = local_consistency_per_node(labelled_subgraph(graph, nodes)[0], labels)
    connected = per_node[np.isfinite(per_node)]
    if connected.size == 0:
        raise SiptError(
            f"{config.edges} links no two labelled samples, so LC is undefined; label samples that the graph links"
        )
    log(
        f"read {len(samples)} samples, {graph.n_edges} edges, {nodes.size} labelled in {np.unique(labels).size} classes"
    )
    lc = float(connected.mean())
    lc_low, lc_high = wilson_interval(lc, connected.size)
    log(f"LC {lc:.3f} over the {connected.size} labelled samples with a labelled neighbour")
    vectors = embed_labelled(config, [samples.texts[i] for i in nodes], regime)
    own = encoder_consistency(vectors, labels, k)
    log(f"the init's own {k}-NN consistency {own:.3f}")
    steps = config.steps or max(1, math.ceil(len(samples) / regime["batch_size"]))
    gain, low, high, warnings = budget_prediction(fit, steps, lc=lc, encoder_consistency=own)
    verdict = "help" if low > 0 else "hurt" if high < 0 else "unknown"
    used = MODELS[fit["model"]].features
    warnings += outside_range(
        fit, **{name: value for name, value in (("lc", lc), ("encoder_consistency", own)) if name in used}
    )
    warnings += setting_warnings(config, regime, k)
    if not fit["ranges"]["labelled"][0] / 2 <= nodes.size <= fit["ranges"]["labelled"][1] * 2:
        low_n, high_n = fit["ranges"]["labelled"]
        warnings.append(f"{nodes.size} labelled samples, far from the atlas's {low_n:.0f}-{high_n:.0f} per pair")
    budget = nearest_budget(fit, steps)
    report = {
        "samples": len(samples),
        "edges": graph.n_edges,
        "labelled": int(nodes.size),
        "labelled_with_neighbour": int(connected.size),
        "classes": int(np.unique(labels).size),
        "lc": lc,
        "lc_ci": [lc_low, lc_high],
        "k": k,
        "encoder_consistency": own,
        "init": config.init,
        "steps": steps,
        "steps_chosen": "given" if config.steps else "one pass over the samples at the atlas's batch",
        "model": fit["model"],
        "model_words": fit["model_words"],
        "beats_lc": fit["beats_lc"],
        "predicted_gain": gain,
        "prediction_interval": [low, high],
        "level": fit["level"],
        "metric": regime["metric"],
        "verdict": VERDICTS[verdict],
        "reason": reason(verdict, lc, gain, low, high, fit["level"], k),
        "lc_crossover": fit["budgets"][str(budget)]["lc_crossover"],
        "budget": budget,
        "regime": regime,
        "validation": budget_validation(fit, budget),
        "warnings": warnings,
    }
    if config.plot is not None:
        draw_fit(
            Path(config.plot).with_suffix(""), fit, {"lc": lc, "steps": steps, "gain": gain, "low": low, "high": high}
        )
        log(f"drew {config.plot}")
    return report


def setting_warnings(config: AdviseConfig, regime: dict, k: int) -> list[str]:
    """The settings of ``config`` that differ from those the atlas measured with, in words."""
    given = {"init": config.init, "pooling": config.pooling, "max_len": config.max_len, "k": k}
    flags = {"init": "--init", "pooling": "--pooling", "max_len": "--max-length", "k": "--k"}
    return [
        f"{flags[name]} {value} differs from the atlas's {regime[name]}: the predictor never saw numbers measured so"
        for name, value in given.items()
        if value is not None and value != regime[name]
    ]


def nearest_budget(fit: dict, steps: int) -> int:
    """The atlas budget closest to ``steps`` in log scale (the one whose validation is quoted)."""
    return min((int(b) for b in fit["budgets"]), key=lambda b: abs(math.log(b) - math.log(steps)))


def budget_validation(fit: dict, budget: int) -> dict:
    """The grouped validation at ``budget``: per model, its single-run error under each scheme, and
    the shipped model's interval coverage per scheme with its Wilson interval."""
    rows = [row for row in fit["validation"] if row["steps"] == budget]
    return {
        "error": {
            model: {row["scheme"]: row["mae"] for row in rows if row["model"] == model}
            for model in dict.fromkeys(row["model"] for row in rows)
        },
        "coverage": {
            row["scheme"]: [row["coverage"], row["coverage_low"], row["coverage_high"], row["runs"]]
            for row in rows
            if row["model"] == fit["model"]
        },
    }


def embed_labelled(config: AdviseConfig, texts: list[str], regime: dict) -> np.ndarray:
    """``(m, H)`` the init's embedding of ``texts`` (one pass, at ``config.max_len`` or the atlas's)."""
    import torch

    from sipt_lab.models import encoder_source
    from sipt_lab.training import embed

    max_len = config.max_len or regime["max_len"]
    source = encoder_source(config.init, None, config.pooling)
    tokenizer = source.tokenizer(texts, max_len)
    with torch.random.fork_rng():
        torch.manual_seed(0)  # a new head's draw, unused by the embedding
        encoder, _ = source.encoder(tokenizer)
    return embed(encoder, tokenizer, texts, device=config.device)


def reason(verdict: str, lc: float, gain: float, low: float, high: float, level: float, k: int) -> str:
    """The verdict's reason in words."""
    where = (
        f"at the graph's LC {lc:.3f} the atlas predicts one run's gain in {k}-NN accuracy at {gain:+.3f}, "
        f"{level:.0%} single-run interval [{low:+.3f}, {high:+.3f}]"
    )
    return where + {"unknown": ", which spans zero", "help": ", above zero", "hurt": ", below zero"}[verdict]


def advice_lines(report: dict) -> list[str]:
    """The report as the lines ``sipt-lab advise`` prints."""
    regime = report["regime"]
    ci = report["lc_ci"]
    validation = report["validation"]
    model = report["model"]
    errors = validation["error"]
    scheme_words = {"graph": "graph", "task": "task", "language": "language"}
    lines = [
        f"samples {report['samples']}, edges {report['edges']}, labelled {report['labelled']} in {report['classes']} classes",
        f"LC of the labels over the graph: {report['lc']:.3f} (95% Wilson interval [{ci[0]:.3f}, {ci[1]:.3f}] over "
        f"the {report['labelled_with_neighbour']} labelled samples with a labelled neighbour)",
        f"the init's own {report['k']}-NN consistency on the labelled samples: {report['encoder_consistency']:.3f}"
        + ("" if "encoder_consistency" in _features(report) else " (the predictor does not use it)"),
        f"prediction for: init {regime['init']}, {report['steps']} optimiser steps ({report['steps_chosen']}) of batch "
        f"{regime['batch_size']} x {regime['max_len']} tokens, lambda_SI {regime['lambda_si']}, {regime['loss']} loss, "
        f"lr {regime['lr']}, as the atlas trained on {regime['corpus']} ({', '.join(regime['languages'])})",
        f"predicted gain of SIPT over LM-only in {report['k']}-NN accuracy on new samples, one run: "
        f"{report['predicted_gain']:+.3f} ({report['level']:.0%} single-run interval "
        f"[{report['prediction_interval'][0]:+.3f}, {report['prediction_interval'][1]:+.3f}])",
        f"verdict: {report['verdict']}: {report['reason']}",
        f"predictor: {model} ({report['model_words']}), chosen by grouped validation; at {report['budget']} steps its "
        "single-run error when a whole graph, task or language is left out: "
        + ", ".join(f"{scheme_words[s]} {e:.3f}" for s, e in errors.get(model, {}).items() if s in scheme_words)
        + "; predicting no gain: "
        + ", ".join(f"{scheme_words[s]} {e:.3f}" for s, e in errors.get("zero", {}).items() if s in scheme_words)
        + "; LC alone: "
        + ", ".join(f"{scheme_words[s]} {e:.3f}" for s, e in errors.get("lc", {}).items() if s in scheme_words),
    ]
    crossover = report["lc_crossover"]
    line_words = (
        f"LC alone's line crosses zero at LC {crossover:.2f} at {report['budget']} steps"
        if crossover is not None and 0.0 <= crossover <= 1.0
        else f"LC alone's line does not cross zero inside [0, 1] at {report['budget']} steps"
    )
    if model in ("zero", "mean", "lc-sign"):
        lines.append(
            f"no predictor reading LC beat predicting {report['model_words']} under grouped validation: at this budget "
            f"the atlas says LC does not tell SIPT's gain on new samples ({line_words}, for what it is worth)"
        )
    elif not report["beats_lc"]:
        lines.append(f"no feature beat LC alone under grouped validation; {line_words}")
    coverage = ", ".join(
        f"{scheme_words[s]} {c:.2f} [{lo:.2f}, {hi:.2f}] of {n} runs"
        for s, (c, lo, hi, n) in validation["coverage"].items()
        if s in scheme_words
    )
    lines.append(f"the single-run intervals held, left out by whole {coverage}")
    lines += [f"warning: {warning}" for warning in report["warnings"]]
    return lines


def _features(report: dict) -> tuple[str, ...]:
    from sipt_lab.jobs.gain_predictor import MODELS

    return MODELS[report["model"]].features
