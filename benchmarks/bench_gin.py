"""The GIN path of the trainer on CPU: PyG featurisation vs the full pre-training step.

Run as ``python benchmarks/bench_gin.py``. Samples are random ego-network-like graphs (10 to 40
nodes, ring plus random chords, 7 node codes), linked in ``G_PT`` at random (degree ~5). The GIN is
the paper's size (hidden 300, 5 layers, mean pooling). For each batch size, in the same process:

* ``featurise``: :meth:`GraphInputs.encode`'s batching alone (``Batch.from_data_list`` of the
  batch's samples and the masking), per step;
* ``step``: one full :func:`sipt_lab.training.pretrain` step (``λ = 0.1``, attribute masking +
  contrastive ``L_SI`` on sampled pairs): the time of a run of ``1 + STEPS`` steps less that of a
  1-step run (setup: checking the graphs, building the model), over ``STEPS``.

Prints graphs/s and the share of a step spent batching graphs. CPU only: GPU throughput needs a
GPU (see RESULTS.md).
"""

from __future__ import annotations

import time

import numpy as np
import torch
from torch_geometric.data import Data

from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models.graph_encoder import GINConfig, GraphInit
from sipt_lab.training import TrainConfig, pretrain

N_GRAPHS, N_CODES, STEPS = 2000, 7, 6


def ego_graphs(n: int, seed: int = 0) -> list[Data]:
    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(n):
        size = int(rng.integers(10, 41))
        ring = np.stack([np.arange(size), (np.arange(size) + 1) % size])
        chords = rng.integers(0, size, (2, size // 2))
        edges = np.unique(np.concatenate([ring, chords, ring[::-1], chords[::-1]], axis=1), axis=1)
        graphs.append(Data(x=torch.as_tensor(rng.integers(0, N_CODES, size)), edge_index=torch.as_tensor(edges)))
    return graphs


def main() -> None:
    torch.manual_seed(0)
    graphs = ego_graphs(N_GRAPHS)
    rng = np.random.default_rng(1)
    graph = PretrainingGraph.from_edges(
        rng.integers(0, N_GRAPHS, 5 * N_GRAPHS // 2), rng.integers(0, N_GRAPHS, 5 * N_GRAPHS // 2), N_GRAPHS
    )
    source = GraphInit(GINConfig(n_values=N_CODES))
    inputs = source.tokenizer(graphs, None).inputs(graphs, torch.device("cpu"))
    print(
        f"{N_GRAPHS} graphs, {inputs.lengths.mean() - 1:.1f} nodes on average; GIN hidden 300 x 5 layers; torch threads {torch.get_num_threads()}"
    )
    print("| batch | featurise ms/step | step ms | graphs/s | featurise share |")
    print("|---|---|---|---|---|")
    for batch_size in (32, 128):
        nodes = rng.choice(N_GRAPHS, (STEPS, 3 * batch_size), replace=True)
        start = time.perf_counter()
        for row in nodes:
            inputs.batch(np.unique(row))
        featurise = (time.perf_counter() - start) / STEPS
        runs = []
        for steps in (1, 1 + STEPS):
            config = TrainConfig(steps=steps, batch_size=batch_size, lr=1e-3, device="cpu", seed=0)
            start = time.perf_counter()
            pretrain(graphs, graph, config, source)
            runs.append(time.perf_counter() - start)
        step = (runs[1] - runs[0]) / STEPS
        print(
            f"| {batch_size} | {1e3 * featurise:.1f} | {1e3 * step:.0f} | {batch_size / step:.0f} | {featurise / step:.0%} |"
        )


if __name__ == "__main__":
    main()
