"""A graph encoder for samples that are small attributed graphs (the NETWORKS domain's PPI ego-networks).

A sample is a :class:`torch_geometric.data.Data` with ``x`` ``(n_i,)`` int64 node attribute codes in
``[0, V)`` and ``edge_index`` ``(2, e_i)`` (both directions of each undirected edge). The encoder is
the GIN of Hu et al. (2020, "Strategies for pre-training graph neural networks"), which the SIPT paper
uses: an embedding of the attribute codes (plus one ``[MASK]`` code ``V``), ``layers`` ``GINConv``
layers (an MLP ``H -> 2H -> H`` each, batch norm, ReLU between layers, dropout), and a graph-level
pooling (``global_mean_pool``, the paper's, or ``global_add_pool``) of the last layer's node states
("JK = last"). The per-token objective is **attribute masking**, the graph analogue of MLM: masked
nodes get code ``V`` and a linear head predicts their original code from their node state.

The trainer reaches graphs through the featurisation seam (:class:`~sipt_lab.models.EncoderInputs`):
:class:`GraphInit` is the encoder source, its "tokenizer" :class:`GraphFeaturizer` makes
:class:`GraphInputs`, which batches samples with PyG's ``Batch``. Position 0 of a sample is the graph's
own slot (never masked, like ``[CLS]``), position ``p >= 1`` is node ``p - 1``.

Graphs with edge attributes (Hu et al.'s biological graphs: each edge's 7 interaction types, one
code per distinct combination, ``GINConfig.n_edge_values`` codes) follow Hu et al.: the layers are
``GINEConv`` (each message ``ReLU(h_j + e_ij)`` adds the edge's embedded code, plus a ``[MASK]``
code ``E``), and attribute masking masks *edges*: position ``p >= 1`` is undirected edge ``p - 1``
(``edge_index`` holds the ``e`` edges then their reverses), a masked edge gets code ``E`` in both
directions, and a linear head predicts its original code from ``h_a + h_b``, the states of its
ends. (Hu et al. predict the 7 types as independent binary labels; here the combination is one
class, so the objective is the same cross-entropy as every per-token objective.)
"""

from __future__ import annotations

import dataclasses
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch
from torch import nn
from torch_geometric.data import Batch, Data
from torch_geometric.nn import GINConv, GINEConv, global_add_pool, global_mean_pool

from sipt_lab.core.config_io import config_from_dict, config_to_dict
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.core.fileio import write_bytes_atomic, write_json_atomic

GRAPH_INIT = "gin"
#: Graph-level pooling of the node states, by name.
GRAPH_POOLINGS = {"mean": global_mean_pool, "add": global_add_pool}
CONFIG_NAME, WEIGHTS_NAME = "gin_config.json", "gin_encoder.pt"


@dataclass(frozen=True)
class GINConfig:
    """Attributes:
    n_values: ``V``, distinct node attribute codes (the data's; code ``V`` is ``[MASK]``).
    hidden: node state width ``H`` (the paper's 300).
    layers: GIN layers (the paper's 5).
    dropout: after every layer (the paper's 0.1).
    pooling: a :data:`GRAPH_POOLINGS` name (the paper's ``mean``).
    n_edge_values: ``E``, distinct edge attribute codes (code ``E`` is ``[MASK]``); 0: the graphs have
        no edge attributes and attribute masking masks nodes.
    """

    n_values: int
    hidden: int = 300
    layers: int = 5
    dropout: float = 0.1
    pooling: str = "mean"
    n_edge_values: int = 0

    def __post_init__(self) -> None:
        for name in ("n_values", "hidden", "layers"):
            if getattr(self, name) < 1:
                raise ConfigError(f"GINConfig.{name}", f"must be >= 1, got {getattr(self, name)}")
        if self.n_edge_values < 0:
            raise ConfigError("GINConfig.n_edge_values", f"must be >= 0, got {self.n_edge_values}")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError("GINConfig.dropout", f"must be in [0, 1), got {self.dropout}")
        if self.pooling not in GRAPH_POOLINGS:
            raise ConfigError(
                "GINConfig.pooling", f"{self.pooling!r} is unknown; choose one of {', '.join(GRAPH_POOLINGS)}"
            )


class GINEncoder(nn.Module):
    """The GIN of the module docstring; ``hidden_size`` is ``config.hidden``."""

    def __init__(self, config: GINConfig) -> None:
        super().__init__()
        self.config = config
        self.hidden_size = config.hidden
        H = config.hidden
        self.attributes = nn.Embedding(config.n_values + 1, H)
        layer = GINEConv if config.n_edge_values else GINConv
        self.convs = nn.ModuleList(
            layer(nn.Sequential(nn.Linear(H, 2 * H), nn.ReLU(), nn.Linear(2 * H, H))) for _ in range(config.layers)
        )
        self.norms = nn.ModuleList(nn.BatchNorm1d(H) for _ in range(config.layers))
        self.dropout = nn.Dropout(config.dropout)
        if config.n_edge_values:
            self.edge_attributes = nn.Embedding(config.n_edge_values + 1, H)
        self.head = nn.Linear(H, config.n_edge_values or config.n_values)

    def node_states(self, batch: Batch) -> torch.Tensor:
        """``(N, H)`` last-layer states of the batch's ``N`` nodes."""
        h = self.attributes(batch.x)
        edges = (
            (batch.edge_index,)
            if not self.config.n_edge_values
            else (batch.edge_index, self.edge_attributes(batch.edge_attr))
        )
        for k, (conv, norm) in enumerate(zip(self.convs, self.norms)):
            h = norm(conv(h, *edges))
            h = self.dropout(h if k == len(self.convs) - 1 else torch.relu(h))
        return h

    def _masked_logits(self, states: torch.Tensor, batch: Batch, positions: torch.Tensor) -> torch.Tensor:
        """``(M, V)`` logits of the masked nodes ``positions``, or ``(M, E)`` of the masked edges
        ``positions`` (directed edge indices) from their ends' summed states."""
        if not self.config.n_edge_values:
            return self.head(states[positions])
        ends = batch.edge_index[:, positions]
        return self.head(states[ends[0]] + states[ends[1]])

    def _pool(self, states: torch.Tensor, batch: Batch) -> torch.Tensor:
        return GRAPH_POOLINGS[self.config.pooling](states, batch.batch, size=batch.num_graphs)

    def embed(self, batch: Batch) -> torch.Tensor:
        """``(B, H)`` pooled embeddings of the batch's ``B`` graphs."""
        return self._pool(self.node_states(batch), batch)

    def token_logits(self, batch: Batch) -> torch.Tensor:
        """``(N, V)`` attribute logits of every node; with edge attributes ``(2e, E)`` of every
        directed edge."""
        states = self.node_states(batch)
        everything = torch.arange(batch.edge_index.shape[1] if self.config.n_edge_values else states.shape[0])
        return self._masked_logits(states, batch, everything.to(states.device))

    def embed_and_masked_logits(self, batch: Batch, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``embed(batch)`` and the attribute logits ``(M, V)`` of the nodes ``positions`` ``(M,)``
        (indices into ``batch.x``; with edge attributes, ``(M, E)`` of the edges ``positions``,
        indices into ``batch.edge_index``), from one pass."""
        states = self.node_states(batch)
        return self._pool(states, batch), self._masked_logits(states, batch, positions)

    def save(self, directory: str | Path, tokenizer: GraphFeaturizer) -> Path:
        """``gin_config.json`` (encoder and featuriser) and ``gin_encoder.pt`` in ``directory``."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(out / CONFIG_NAME, {"encoder": config_to_dict(self.config), "max_len": tokenizer.max_len})
        buffer = io.BytesIO()
        torch.save(self.state_dict(), buffer)
        write_bytes_atomic(out / WEIGHTS_NAME, buffer.getvalue())
        return out


def load_gin(directory: str | Path, device: str | torch.device = "cpu") -> tuple[GINEncoder, GraphFeaturizer]:
    """A :meth:`GINEncoder.save` directory as ``(encoder in eval mode on device, featuriser)``."""
    directory = Path(directory)
    saved = json.loads((directory / CONFIG_NAME).read_text(encoding="utf-8"))
    config = config_from_dict(GINConfig, saved["encoder"])
    encoder = GINEncoder(config)
    encoder.load_state_dict(torch.load(directory / WEIGHTS_NAME, map_location="cpu", weights_only=True))
    return encoder.to(device).eval(), GraphFeaturizer(config.n_values, saved["max_len"], config.n_edge_values)


@dataclass(frozen=True)
class GraphFeaturizer:
    """The graph encoders' "tokenizer": checks graph samples and makes their :class:`GraphInputs`.

    Attributes:
        n_values: ``V``; node codes must lie in ``[0, V)``, ``mask_id`` is ``V``.
        max_len: most nodes per sample plus one (the graph slot; a larger graph keeps the subgraph
            induced by its first ``max_len - 1`` nodes); None keeps every node.
        n_edge_values: ``E``; with ``E > 0`` every graph carries ``edge_attr`` codes in ``[0, E)``,
            the masked positions are edges and ``mask_id`` is ``E``.
    """

    n_values: int
    max_len: int | None = None
    n_edge_values: int = 0
    suffix_tokens: ClassVar[int] = 0

    @property
    def mask_id(self) -> int:
        return self.n_edge_values or self.n_values

    @property
    def vocab_size(self) -> int:
        return self.mask_id + 1

    def inputs(self, samples: list[Data], device: torch.device) -> GraphInputs:
        """The samples, checked and truncated to ``max_len`` positions, as :class:`GraphInputs`."""
        graphs = []
        for k, graph in enumerate(samples):
            x = getattr(graph, "x", None)
            if (
                not isinstance(graph, Data)
                or x is None
                or x.dim() != 1
                or x.dtype != torch.long
                or graph.edge_index is None
            ):
                raise SiptError(
                    f"graph sample {k} is not a torch_geometric Data with int64 node codes x (n,) and edge_index; "
                    "load graphs with the tu-graphs loader"
                )
            if x.numel() and (int(x.min()) < 0 or int(x.max()) >= self.n_values):
                raise SiptError(
                    f"graph sample {k} has node codes outside [0, {self.n_values}); "
                    "build the GIN with n_values covering every code"
                )
            codes = getattr(graph, "edge_attr", None)
            if self.n_edge_values and (
                codes is None
                or codes.shape != (graph.edge_index.shape[1],)
                or (codes.numel() and (int(codes.min()) < 0 or int(codes.max()) >= self.n_edge_values))
            ):
                raise SiptError(
                    f"graph sample {k} needs edge_attr codes in [0, {self.n_edge_values}), one per directed edge; "
                    "load graphs with the tu-graphs loader from a dataset with NAME_edge_attributes.txt"
                )
            if self.max_len is not None and graph.num_nodes > self.max_len - 1:
                graph = graph.subgraph(torch.arange(self.max_len - 1))
            graphs.append(graph)
        return GraphInputs(graphs, self.mask_id, torch.device(device), edges=bool(self.n_edge_values))

    def to_dict(self) -> dict:
        return {"kind": "graph", "n_values": self.n_values, "max_len": self.max_len} | (
            {"n_edge_values": self.n_edge_values} if self.n_edge_values else {}
        )


class GraphInputs:
    """:class:`~sipt_lab.models.EncoderInputs` of graph samples: ``lengths`` is nodes + 1 (the graph
    slot), a batch is PyG's ``Batch`` of the samples, and masking replaces node codes by ``mask_id``;
    with ``edges``, ``lengths`` is undirected edges + 1 and masking replaces edge codes (both
    directions) instead."""

    def __init__(self, graphs: list[Data], mask_id: int, device: torch.device, edges: bool = False) -> None:
        self.graphs = graphs
        self.mask_id = mask_id
        self.device = device
        self.edges = edges
        self.directed = np.array([graph.edge_index.shape[1] for graph in graphs], dtype=np.int64)
        units = self.directed // 2 if edges else np.array([graph.num_nodes for graph in graphs], dtype=np.int64)
        self.lengths = units + 1

    def batch(self, nodes: np.ndarray) -> Batch:
        """The samples ``nodes`` ``(k,)`` as one PyG ``Batch`` on the device."""
        return Batch.from_data_list([self.graphs[i] for i in np.asarray(nodes).tolist()]).to(self.device)

    def encode(self, encoder: nn.Module, nodes: np.ndarray, mask: np.ndarray, with_logits: bool):
        """``(embeddings (k, H), logits (M, V), targets (M,))``: the masked nodes' codes replaced by
        ``mask_id``, their logits and original codes (both None unless ``with_logits``)."""
        batch = self.batch(nodes)
        if not with_logits:
            return encoder.embed(batch), None, None
        rows, columns = np.nonzero(mask[:, 1:])
        if self.edges:  # undirected edge c of row r: directed edges start + c and start + c + e_r
            directed = self.directed[np.asarray(nodes)]
            first = (np.cumsum(directed) - directed)[rows] + columns
            positions = torch.as_tensor(first, device=self.device)
            both = torch.as_tensor(np.concatenate([first, first + directed[rows] // 2]), device=self.device)
            targets = batch.edge_attr[positions]
            batch.edge_attr = batch.edge_attr.index_fill(0, both, self.mask_id)
        else:
            positions = batch.ptr[torch.as_tensor(rows, device=self.device)] + torch.as_tensor(
                columns, device=self.device
            )
            targets = batch.x[positions]
            batch.x = batch.x.index_fill(0, positions, self.mask_id)
        embeddings, logits = encoder.embed_and_masked_logits(batch, positions)
        return embeddings, logits, targets


@dataclass(frozen=True)
class GraphInit:
    """A fresh :class:`GINEncoder` of size ``config`` (an :class:`~sipt_lab.models.EncoderSource`)."""

    config: GINConfig

    def tokenizer(self, samples: list, max_len: int | None) -> GraphFeaturizer:
        return GraphFeaturizer(self.config.n_values, max_len, self.config.n_edge_values)

    def encoder(self, tokenizer: GraphFeaturizer) -> tuple[nn.Module, list[str]]:
        config = dataclasses.replace(self.config, n_values=tokenizer.n_values, n_edge_values=tokenizer.n_edge_values)
        return GINEncoder(config), []

    def describe(self) -> dict:
        return {"init": GRAPH_INIT, "encoder": config_to_dict(self.config)}

    def input_defaults(self) -> dict:
        return {"max_len": None, "pooling": None}  # every node, and the GIN's own read-out

    normalizes = False
