"""Before paying for pre-training: will SIPT on this graph help this task on new samples? (``sipt-lab advise``)

Theorem 1 as a tool. :func:`advise` measures what the atlas's predictor needs, on the user's own
data, without training anything: the local consistency of the labels over the graph (on the
labelled samples, with a 95 % interval over them) and the init's own k-NN consistency on the same
samples (one embedding pass). The predictor fitted on the natural-graph atlas
(:mod:`~sipt_lab.jobs.gain_predictor`, its fit shipped as :data:`ATLAS_FIT`) turns them into
a predicted held-out gain of SIPT over LM-only with a 90 % prediction interval and a verdict.
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
#: Verdicts by where the prediction interval lies.
VERDICTS = {
    "help": "expected to help",
    "hurt": "expected to hurt",
    "unknown": "cannot tell at this size",
}


@dataclass(frozen=True)
class AdviseConfig:
    """What :func:`advise` reads.

    Attributes:
        samples, edges, labels: the samples file, its graph (``u<TAB>v`` ids) and ``id<TAB>label``
            for any subset of the samples (LC and the encoder's consistency are measured on it).
        init, pooling: the encoder SIPT would start from (as ``sipt-lab pretrain``).
        max_len: tokens per sample of the embedding (None: the atlas's, so the consistency is
            measured as the fit's was).
        k: neighbours of the encoder's own consistency (the atlas's 3).
        device: where the init embeds.
        fit: a predictor fitted by ``sipt-lab study atlas`` (its ``fit.json``); None: the shipped atlas fit.
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
    k: int = option(3, range=(1, None), help="neighbours of the encoder's own consistency")
    device: str = option("auto", help="where the init embeds: auto (CUDA when present), cpu or cuda", nonempty=True)
    fit: str | None = option(
        None, nonempty=True, metavar="FIT.json", help="a predictor from `study atlas` (default: the shipped one)"
    )

    def __post_init__(self) -> None:
        validate(self)


def load_fit(path: str | Path | None = None) -> dict:
    """The predictor of ``path`` (a ``fit.json`` of ``sipt-lab study atlas``; None: :data:`ATLAS_FIT`)."""
    from sipt_lab.core.fileio import read_text_file

    path = ATLAS_FIT if path is None else Path(path)
    try:
        fit = json.loads(read_text_file(path, "the atlas's fit"))
    except json.JSONDecodeError as error:
        raise SiptError(
            f"{path} is not JSON ({error.msg}); pass the fit.json that `sipt-lab study atlas` wrote"
        ) from None
    needed = {"features", "coefficients", "xtx_inverse", "residual_sd", "dof", "ranges", "level"}
    if not isinstance(fit, dict) or not needed <= set(fit):
        raise SiptError(
            f"{path} is not a predictor fit (it lacks {sorted(needed - set(fit or {}))}); pass a study atlas fit.json"
        )
    return fit


def advise(config: AdviseConfig | None = None, *, log=None, **fields) -> dict:
    """The advice of the module docstring on ``config``'s data (or an :class:`AdviseConfig` of
    ``fields``: ``advise(samples=..., edges=..., labels=...)``): a JSON-ready dict with ``lc`` and
    ``lc_ci`` (95 % t-interval over the labelled samples with a labelled neighbour),
    ``encoder_consistency``, ``predicted_gain`` and ``prediction_interval``, ``verdict``, ``reason``,
    ``warnings`` (inputs outside what the atlas covers) and the sizes it rests on."""
    from sipt_lab.core.stats import mean_ci
    from sipt_lab.data.samples import read_labelled_subset, read_sample_graph, read_samples
    from sipt_lab.evaluation.heldout import encoder_consistency
    from sipt_lab.graphs.consistency import labelled_subgraph, local_consistency_per_node
    from sipt_lab.jobs.gain_predictor import outside_range, predict_gain

    config = AdviseConfig(**fields) if config is None else config
    log = logger.info if log is None else log
    fit = load_fit(config.fit)
    samples = read_samples(config.samples)
    graph = read_sample_graph(config.edges, samples)
    nodes, labels = read_labelled_subset(config.labels, samples)
    if np.unique(labels).size < 2:
        raise SiptError(f"{config.labels} gives one class only; label samples of at least two classes")
    per_node = local_consistency_per_node(labelled_subgraph(graph, nodes)[0], labels)
    connected = per_node[np.isfinite(per_node)]
    if connected.size == 0:
        raise SiptError(
            f"{config.edges} links no two labelled samples, so LC is undefined; label samples that the graph links"
        )
    log(
        f"read {len(samples)} samples, {graph.n_edges} edges, {nodes.size} labelled in {np.unique(labels).size} classes"
    )
    lc, lc_low, lc_high = mean_ci(connected)
    log(f"LC {lc:.3f} over the {connected.size} labelled samples with a labelled neighbour")
    vectors = embed_labelled(config, [samples.texts[i] for i in nodes], fit)
    own = encoder_consistency(vectors, labels, config.k)
    log(f"the init's own {config.k}-NN consistency {own:.3f}")
    gain, low, high = predict_gain(fit, lc=lc, encoder_consistency=own)
    verdict = "help" if low > 0 else "hurt" if high < 0 else "unknown"
    warnings = outside_range(fit, lc=lc, encoder_consistency=own)
    atlas_n = fit.get("labelled_range")
    if atlas_n and not atlas_n[0] / 2 <= nodes.size <= atlas_n[1] * 2:
        warnings.append(
            f"{nodes.size} labelled samples, far from the atlas's {atlas_n[0]:.0f}-{atlas_n[1]:.0f} per pair"
        )
    return {
        "samples": len(samples),
        "edges": graph.n_edges,
        "labelled": int(nodes.size),
        "labelled_with_neighbour": int(connected.size),
        "classes": int(np.unique(labels).size),
        "lc": lc,
        "lc_ci": None if math.isnan(lc_low) else [lc_low, lc_high],
        "encoder_consistency": own,
        "init": config.init,
        "predicted_gain": gain,
        "prediction_interval": [low, high],
        "level": fit["level"],
        "metric": fit.get("metric", "knn_accuracy"),
        "verdict": VERDICTS[verdict],
        "reason": reason(verdict, lc, own, gain, low, high, fit["level"]),
        "warnings": warnings,
        "atlas": {"pairs": fit.get("pairs"), "ranges": fit["ranges"], "validation": fit.get("validation")},
    }


def embed_labelled(config: AdviseConfig, texts: list[str], fit: dict) -> np.ndarray:
    """``(m, H)`` the init's embedding of ``texts`` (one pass, at ``config.max_len`` or the fit's)."""
    import torch

    from sipt_lab.models import encoder_source
    from sipt_lab.training import embed

    max_len = config.max_len or fit.get("max_len", 128)
    source = encoder_source(config.init, None, config.pooling)
    tokenizer = source.tokenizer(texts, max_len)
    with torch.random.fork_rng():
        torch.manual_seed(0)  # a new head's draw, unused by the embedding
        encoder, _ = source.encoder(tokenizer)
    return embed(encoder, tokenizer, texts, device=config.device)


def reason(verdict: str, lc: float, own: float, gain: float, low: float, high: float, level: float) -> str:
    """The verdict's reason in words."""
    comparison = "above" if lc > own else "below"
    where = (
        f"the graph's LC {lc:.3f} is {comparison} what the init's neighbourhoods already hold ({own:.3f}); "
        f"the atlas predicts a gain of {gain:+.3f} in 3-NN accuracy, {level:.0%} interval [{low:+.3f}, {high:+.3f}]"
    )
    if verdict == "unknown":
        return where + ", which spans zero"
    return where + (", above zero" if verdict == "help" else ", below zero")


def advice_lines(report: dict) -> list[str]:
    """The report as the lines ``sipt-lab advise`` prints."""
    ci = report["lc_ci"]
    validation = (report["atlas"] or {}).get("validation") or {}
    lines = [
        f"samples {report['samples']}, edges {report['edges']}, labelled {report['labelled']} in {report['classes']} classes",
        f"LC of the labels over the graph: {report['lc']:.3f}"
        + (
            ""
            if ci is None
            else f" (95% CI [{ci[0]:.3f}, {ci[1]:.3f}] over {report['labelled_with_neighbour']} samples)"
        ),
        f"init's own {report['init']} 3-NN consistency: {report['encoder_consistency']:.3f}",
        f"predicted gain of SIPT over LM-only on new samples: {report['predicted_gain']:+.3f} "
        f"({report['level']:.0%} prediction interval [{report['prediction_interval'][0]:+.3f}, {report['prediction_interval'][1]:+.3f}])",
        f"verdict: {report['verdict']}: {report['reason']}",
    ]
    if validation:
        lines.append(
            f"the atlas: {report['atlas']['pairs']} pairs; left out one at a time its intervals held "
            f"{validation['coverage']:.0%} of the measured gains, mean absolute error {validation['mae']:.3f}"
        )
    lines += [f"warning: {warning}; the prediction is an extrapolation" for warning in report["warnings"]]
    return lines
