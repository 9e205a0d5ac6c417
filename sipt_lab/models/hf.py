"""Hugging Face checkpoints behind the encoder and tokenizer seams, and their export.

A local checkpoint directory (``AutoTokenizer`` + a masked-LM model) becomes an :class:`HFEncoder`
that the trainer drives like the character transformer. A checkpoint without an MLM head (a
sentence-transformers directory has none) gets a fresh head whose decoder is tied to the input
embeddings. Pooling is ``cls`` or ``mean`` (over every attended token, ``[CLS]`` and ``[SEP]``
included, as sentence-transformers does); a sentence-transformers directory's own ``modules.json``
and pooling config choose the default, including its final L2 normalisation.

:meth:`HFEncoder.save` writes a directory that ``transformers.AutoModel`` /
``AutoTokenizer.from_pretrained`` and ``sentence_transformers.SentenceTransformer`` load as it is,
with the same pooling, in the layout of the checkpoint it came from. Nothing is ever downloaded: the hub is switched off before
``transformers`` is imported, and a path that is not a local directory is an error.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from sipt_lab.core.errors import SiptError
from sipt_lab.core.fileio import default_dir_mode, default_file_mode, write_json_atomic
from sipt_lab.models.hf_checkpoints import (
    LONGEST_DEFAULT_LENGTH,
    POOLINGS,
    ST_NORMALIZE,
    ST_POOLING,
    ST_TRANSFORMER,
    check_checkpoint_dir,
    first_line,
    input_defaults,
    read_pipeline,
)

#: Where an export keeps the trained masked-LM model when the init was a bare encoder (:meth:`HFEncoder.save`).
MASKED_LM_DIR = "masked_lm"


@dataclass(frozen=True)
class HFTokenizer:
    """A Hugging Face tokenizer satisfying :class:`sipt_lab.models.Tokenizer`.

    Attributes:
        backend: the ``transformers`` tokenizer (must have ``[CLS]``-like, ``[MASK]`` and pad tokens).
        max_len: tokens per sample, special tokens included; longer texts are truncated.
    """

    backend: object
    max_len: int
    suffix_tokens: int = 1

    @property
    def vocab_size(self) -> int:
        return len(self.backend)

    @property
    def pad_id(self) -> int:
        return int(self.backend.pad_token_id)

    @property
    def mask_id(self) -> int:
        return int(self.backend.mask_token_id)

    @property
    def sep_id(self) -> int:
        """The separator token's id (``[SEP]``, RoBERTa's ``</s>``)."""
        if self.backend.sep_token_id is None:
            raise SiptError(f"{type(self.backend).__name__} has no separator token; segment pairs need one")
        return int(self.backend.sep_token_id)

    def encode(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        rows = self.backend(
            list(texts),
            truncation=True,
            max_length=self.max_len,
            add_special_tokens=True,
            return_attention_mask=False,
            return_token_type_ids=False,
        )["input_ids"]
        lengths = np.fromiter((len(row) for row in rows), dtype=np.int64, count=len(rows))
        ids = np.full((len(rows), int(lengths.max(initial=1))), self.pad_id, dtype=np.int64)
        if len(rows):
            ids[np.repeat(np.arange(len(rows)), lengths), np.concatenate([np.arange(k) for k in lengths])] = (
                np.concatenate(rows)
            )
        return ids, lengths

    def to_dict(self) -> dict:
        return {
            "class": type(self.backend).__name__,
            "vocab_size": self.vocab_size,
            "max_len": self.max_len,
            "special_ids": sorted(int(i) for i in self.backend.all_special_ids),
        }


class HFEncoder(nn.Module):
    """A masked-LM ``transformers`` model satisfying :class:`sipt_lab.models.SequenceEncoder`.

    ``input_ids`` are ``(B, L)`` rows from :class:`HFTokenizer` (padded with ``pad_id``, which the
    attention mask hides). ``embed`` returns the pooled vector; :meth:`output_embeddings` applies the
    checkpoint's final normalisation when it has one (``normalize``: the trainer's ``L_SI`` then
    trains the normalised vector too). ``fresh_head``: the MLM head was created at load time
    (:meth:`new_head_parameters` are its own tensors, which a head warm-up fits); ``checkpoint``:
    the directory the model was loaded from (:meth:`save` takes the tensors it did not train from it).
    """

    def __init__(
        self,
        model: nn.Module,
        pooling: str,
        pad_id: int,
        normalize: bool = False,
        fresh_head: bool = False,
        checkpoint: Path | None = None,
    ) -> None:
        super().__init__()
        if pooling not in POOLINGS:
            raise SiptError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")
        self.model = model
        self.pooling = pooling
        self.pad_id = pad_id
        self.normalize = normalize
        self.fresh_head = fresh_head
        self.checkpoint = checkpoint
        self.hidden_size = int(model.config.hidden_size)
        heads = [name for name, _ in model.named_children() if name != model.base_model_prefix]
        # One head module maps states to logits (BERT's ``cls``, RoBERTa's and ESM's ``lm_head``):
        # apply it at the masked positions only. Otherwise run the whole model for its logits.
        self._head_name = heads[0] if len(heads) == 1 else None

    @property
    def _head(self) -> nn.Module | None:
        return None if self._head_name is None else getattr(self.model, self._head_name)

    def new_head_parameters(self) -> list[nn.Parameter]:
        """The MLM head's own parameters (those it does not share with the encoder, such as a
        decoder tied to the input embeddings); empty when the model has no separate head module."""
        if self._head is None:
            return []
        shared = {id(p) for p in self.model.base_model.parameters()}
        return [p for p in self._head.parameters() if id(p) not in shared]

    def head_logits(self, states: torch.Tensor) -> torch.Tensor:
        """``(M, H)`` last-layer token states -> ``(M, V)`` logits of the MLM head module."""
        if self._head is None:
            raise SiptError(f"{type(self.model).__name__} has no separate MLM head module to read token states")
        return self._head(states)

    def hidden_states(
        self, input_ids: torch.Tensor, token_types: torch.Tensor | None = None, layer: int | None = None
    ) -> torch.Tensor:
        """``(B, L)`` ids (and optional ``(B, L)`` segment ids) -> ``(B, L, H)`` states after layer
        ``layer`` (0: the embeddings' output; None or the layer count: the last layer)."""
        base = self.model.base_model
        if layer is None:
            return base(
                input_ids=input_ids, attention_mask=self._attention(input_ids), token_type_ids=token_types
            ).last_hidden_state
        n_layers = int(self.model.config.num_hidden_layers)
        if not 0 <= layer <= n_layers:
            raise SiptError(f"layer {layer} does not exist; this encoder has layers 0..{n_layers}")
        return base(
            input_ids=input_ids,
            attention_mask=self._attention(input_ids),
            token_type_ids=token_types,
            output_hidden_states=True,
        ).hidden_states[layer]

    def add_output_rows(self, count: int) -> None:
        """Append ``count`` freshly initialised rows to the (tied) input embeddings and MLM decoder:
        token logits then have ``count`` more columns at the end (MLSM's concept outputs)."""
        with _quiet_transformers():
            rows = self.model.get_input_embeddings().weight.shape[0]
            self.model.resize_token_embeddings(rows + count, mean_resizing=False)

    def output_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The MLM decoder's ``(V, H)`` weight and ``(V,)`` bias (one row per output token)."""
        decoder = self._decoder()
        return decoder.weight, decoder.bias

    def set_output_rows(self, weight: torch.Tensor, bias: torch.Tensor) -> None:
        """Give the MLM head an untied decoder of ``weight`` ``(V, H)`` and ``bias`` ``(V,)`` and keep
        the first ``V`` input token rows; saved with ``tie_word_embeddings`` false, it loads untied."""
        with _quiet_transformers():
            self.model.resize_token_embeddings(weight.shape[0], mean_resizing=False)
        decoder = self._decoder()
        self.model.config.tie_word_embeddings = False
        # new parameters of their own: a bias still shared with the head's would be saved once and
        # then be missing from the untied decoder when loaded
        decoder.weight = nn.Parameter(weight.detach().clone().to(decoder.weight.device))
        decoder.bias = nn.Parameter(bias.detach().clone().to(decoder.weight.device))

    def _decoder(self) -> nn.Linear:
        decoder = self.model.get_output_embeddings()
        if decoder is None or getattr(decoder, "bias", None) is None:
            raise SiptError(
                f"{type(self.model).__name__} has no MLM decoder with a bias; MLSM's final phase needs a BERT-style head"
            )
        return decoder

    def embed(self, input_ids: torch.Tensor, token_types: torch.Tensor | None = None) -> torch.Tensor:
        """``(B, L)`` ids -> ``(B, H)`` pooled embeddings."""
        return self._pool(self.hidden_states(input_ids, token_types), input_ids)

    def output_embeddings(self, input_ids: torch.Tensor) -> torch.Tensor:
        """:meth:`embed`, L2-normalised when the checkpoint's pipeline normalises (what ``embed`` writes)."""
        pooled = self.embed(input_ids)
        return F.normalize(pooled, dim=-1) if self.normalize else pooled

    def token_logits(self, input_ids: torch.Tensor) -> torch.Tensor:
        """``(B, L)`` ids -> ``(B, L, V)`` MLM logits."""
        if self._head is None:
            return self.model(input_ids=input_ids, attention_mask=self._attention(input_ids)).logits
        return self._head(self.hidden_states(input_ids))

    def embed_and_masked_logits(
        self, input_ids: torch.Tensor, positions: torch.Tensor, token_types: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, H)`` pooled embeddings and ``(M, V)`` MLM logits at the ``(M,)`` flat ``positions``
        (``token_types``: optional ``(B, L)`` segment ids)."""
        if self._head is None:
            out = self.model(
                input_ids=input_ids,
                attention_mask=self._attention(input_ids),
                token_type_ids=token_types,
                output_hidden_states=True,
            )
            return self._pool(out.hidden_states[-1], input_ids), out.logits.flatten(0, 1)[positions]
        states = self.hidden_states(input_ids, token_types)
        return self._pool(states, input_ids), self._head(states.flatten(0, 1)[positions])

    def _attention(self, input_ids: torch.Tensor) -> torch.Tensor | None:
        """The padding mask, or None for a batch without padding (length-sorted batches mostly are),
        which lets attention take its unmasked kernel; both give the same states."""
        real = input_ids != self.pad_id
        return None if bool(real.all()) else real.long()

    def _pool(self, states: torch.Tensor, input_ids: torch.Tensor) -> torch.Tensor:
        if self.pooling == "cls":
            return states[:, 0]
        weights = (input_ids != self.pad_id).unsqueeze(-1).to(states.dtype)
        return (states * weights).sum(1) / weights.sum(1).clamp(min=1.0)

    def save(self, directory: str | Path, tokenizer: HFTokenizer) -> Path:
        """Write a Hugging Face + sentence-transformers directory, replacing ``directory`` whole, in
        the layout of the checkpoint the model came from, so that what loaded it without a missing
        or unexpected weight loads the export so too.

        Files: the model (``config.json``, safetensors), the tokenizer, ``modules.json``,
        ``1_Pooling/config.json``, ``sentence_bert_config.json`` (max_seq_length = the tokenizer's
        max_len) and, when normalising, ``2_Normalize/``. A checkpoint with an MLM head is saved as
        the masked-LM model it was. One without (a sentence-transformers directory) is saved as the
        bare encoder it was, with its own tensors that training does not touch (BERT's pooler), and
        the trained masked-LM model, head included, goes to :data:`MASKED_LM_DIR` beside it.
        """
        target = Path(directory)
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        try:
            os.chmod(staging, default_dir_mode())  # mkdtemp's 0o700 would outlive the rename into place
            with _quiet_transformers():
                if self.fresh_head and self.checkpoint is not None:
                    self._bare_encoder().save_pretrained(staging)
                    self.model.save_pretrained(staging / MASKED_LM_DIR)
                    tokenizer.backend.save_pretrained(staging / MASKED_LM_DIR)
                else:
                    self.model.save_pretrained(staging)
                tokenizer.backend.save_pretrained(staging)
            modules = [
                {"idx": 0, "name": "0", "path": "", "type": ST_TRANSFORMER},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": ST_POOLING},
            ]
            if self.normalize:
                modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": ST_NORMALIZE})
                (staging / "2_Normalize").mkdir()
            write_json_atomic(staging / "modules.json", modules)
            write_json_atomic(
                staging / "1_Pooling" / "config.json",
                {
                    "word_embedding_dimension": self.hidden_size,
                    "pooling_mode_cls_token": self.pooling == "cls",
                    "pooling_mode_mean_tokens": self.pooling == "mean",
                    "pooling_mode_max_tokens": False,
                    "pooling_mode_mean_sqrt_len_tokens": False,
                },
            )
            write_json_atomic(
                staging / "sentence_bert_config.json", {"max_seq_length": tokenizer.max_len, "do_lower_case": False}
            )
            for path in staging.rglob("*"):  # transformers writes the weights through a 0o600 temporary file
                if path.is_file():
                    os.chmod(path, default_file_mode())
            if target.exists():
                shutil.rmtree(target)
            os.replace(staging, target)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return target

    def _bare_encoder(self) -> nn.Module:
        """The trained encoder as the bare model class of its checkpoint (``AutoModel``: BERT's
        ``BertModel``, pooler included), the tensors it did not train (the pooler) the checkpoint's."""
        from transformers import AutoModel

        bare = AutoModel.from_pretrained(self.checkpoint).to(next(self.model.parameters()).device)
        bare.resize_token_embeddings(self.model.get_input_embeddings().weight.shape[0], mean_resizing=False)
        bare.load_state_dict(self.model.base_model.state_dict(), strict=False)  # all but the pooler
        return bare


def load_hf_tokenizer(path: str | Path, max_len: int | None = None) -> HFTokenizer:
    """The checkpoint's tokenizer; ``max_len`` defaults to its sentence-transformers length, else
    the model's position count (at most 512)."""
    from transformers import AutoConfig, AutoTokenizer

    path = check_checkpoint_dir(path)
    with _quiet_transformers():
        try:
            backend = AutoTokenizer.from_pretrained(path)
            config = AutoConfig.from_pretrained(path)
        except (OSError, ValueError) as error:
            raise SiptError(
                f"cannot load the tokenizer of {path} ({first_line(error)}); check the checkpoint's files"
            ) from None
    if backend.mask_token_id is None or backend.pad_token_id is None or backend.cls_token_id is None:
        raise SiptError(
            f"the tokenizer of {path} lacks a [CLS], [MASK] or pad token; use a masked-LM (BERT-style) checkpoint"
        )
    positions = getattr(config, "max_position_embeddings", None) or LONGEST_DEFAULT_LENGTH
    max_len = input_defaults(path)["max_len"] if max_len is None else max_len
    if not 2 < max_len <= positions:
        raise SiptError(
            f"max length {max_len} does not fit checkpoint {path} ({positions} positions); use 3..{positions}"
        )
    return HFTokenizer(backend, max_len)


def load_hf_encoder(path: str | Path, pad_id: int, pooling: str | None = None) -> tuple[HFEncoder, list[str]]:
    """The checkpoint as an :class:`HFEncoder` (train mode, CPU) and notes for the log.

    A missing MLM head is created (random transform, decoder tied to the input embeddings) and
    named in the notes. ``pooling`` defaults to the directory's sentence-transformers pooling,
    else :data:`~sipt_lab.models.hf_checkpoints.DEFAULT_POOLING`. Random initialisation draws from torch's global RNG: seed it first.
    """
    from transformers import AutoModelForMaskedLM

    path = check_checkpoint_dir(path)
    pipeline = read_pipeline(path)
    with _quiet_transformers():
        try:
            model, info = AutoModelForMaskedLM.from_pretrained(path, output_loading_info=True)
        except (OSError, ValueError, KeyError) as error:
            raise SiptError(
                f"cannot load {path} as a masked-LM model ({first_line(error)}); use a BERT-style checkpoint"
            ) from None
    notes = []
    missing = set(info.get("missing_keys", ()))
    head_missing = sorted(k for k in missing if not k.startswith(model.base_model_prefix + "."))
    if head_missing:
        output, inputs = model.get_output_embeddings(), model.get_input_embeddings()
        if output is not None and output.weight is not inputs.weight:
            output.weight = inputs.weight
        notes.append(
            f"{path.name}: no MLM head in the checkpoint; added one tied to the input embeddings ({len(head_missing)} new tensors)"
        )
    backbone_missing = sorted(k for k in missing if k.startswith(model.base_model_prefix + "."))
    if backbone_missing:
        notes.append(
            f"{path.name}: {len(backbone_missing)} encoder tensors missing from the checkpoint were initialised at random, e.g. {backbone_missing[0]}"
        )
    chosen = pooling or input_defaults(path)["pooling"]
    encoder = HFEncoder(model, chosen, pad_id, pipeline.normalize, fresh_head=bool(head_missing), checkpoint=path)
    return encoder, notes


@contextlib.contextmanager
def _quiet_transformers():
    """Silence ``transformers``' load reports and progress bars (sipt-lab logs what matters)."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()
