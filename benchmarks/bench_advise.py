"""`sipt-lab advise` on 1,000 labelled samples from MiniLM (target: at most 60 s on 2 cores).

Run as ``python benchmarks/bench_advise.py``. The samples are 1,000 English vital-article summaries
labelled by category, the graph their TF-IDF 3-NN graph, written as the files a user would give.
Timed: the whole :func:`~sipt_lab.jobs.advise.advise` call (read, LC, one MiniLM embedding
pass, prediction) and, side by side in the same process on the same texts, the embedding pass of
sentence-transformers' ``encode`` at the same truncation, the reference for the step that costs most.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sipt_lab.data.corpus import wiki_articles
from sipt_lab.graphs.knn import knn_graph
from sipt_lab.jobs.advise import advise, load_fit

N_SAMPLES = 1000
TARGET_S = 60.0


def write_inputs(directory: Path) -> None:
    from sipt_lab.domains.wiki import UNCATEGORIZED, tfidf_features

    articles = [a for a in wiki_articles("en") if a["topic"] != UNCATEGORIZED]
    chosen = [articles[i] for i in np.random.default_rng(0).choice(len(articles), N_SAMPLES, replace=False)]
    texts = [" ".join(a["extract"].split()) for a in chosen]  # one line each
    (directory / "samples.tsv").write_text("".join(f"a{i}\t{text}\n" for i, text in enumerate(texts)))
    (directory / "labels.tsv").write_text("".join(f"a{i}\t{a['topic']}\n" for i, a in enumerate(chosen)))
    graph = knn_graph(tfidf_features(texts), 3, "cosine")
    (directory / "edges.tsv").write_text("".join(f"a{u}\ta{v}\n" for u, v in graph.edges()))


def sentence_transformers_encode(directory: Path, max_len: int) -> float:
    from sentence_transformers import SentenceTransformer

    from sipt_lab.models.sources import encoder_source

    texts = [line.split("\t", 1)[1] for line in (directory / "samples.tsv").read_text().splitlines()]
    model = SentenceTransformer(str(encoder_source("minilm").path), device="cpu")
    model.max_seq_length = max_len
    start = time.perf_counter()
    model.encode(texts, batch_size=256)
    return time.perf_counter() - start


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write_inputs(directory)
        start = time.perf_counter()
        report = advise(
            samples=str(directory / "samples.tsv"),
            edges=str(directory / "edges.tsv"),
            labels=str(directory / "labels.tsv"),
            device="cpu",
        )
        seconds = time.perf_counter() - start
        reference = sentence_transformers_encode(directory, load_fit()["regime"]["max_len"])
    print("| case | seconds | target |")
    print("|---|---|---|")
    print(
        f"| `advise`, {N_SAMPLES} labelled samples, MiniLM (read, LC, embed, predict) | {seconds:.1f} | <= {TARGET_S:.0f} |"
    )
    print(f"| sentence-transformers `encode` of the same texts (reference) | {reference:.1f} | |")
    print(
        f"advise / encode: {seconds / reference:.2f}x; LC {report['lc']:.3f}, encoder {report['encoder_consistency']:.3f}, "
        f"predicted gain {report['predicted_gain']:+.3f}, verdict: {report['verdict']}"
    )
    return 0 if seconds <= TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
