"""Tokenizers and encoders.

The trainer and the evaluation talk to an encoder only through :class:`SequenceEncoder` and to a
tokenizer only through :class:`Tokenizer`: the character transformer (:class:`TransformerEncoder`,
:class:`CharTokenizer`) and any Hugging Face masked-LM checkpoint (:class:`HFEncoder`,
:class:`HFTokenizer`) both fit, and :func:`encoder_source` picks one from ``--init``. Graph samples
use :mod:`sipt_lab.models.graph_encoder` (a GIN; imported on demand, PyTorch Geometric is slow to import).

The names below load on first use (PEP 562), so that reading :mod:`sipt_lab.models.names` (which
the CLI's parser does) imports no torch or transformers.
"""

from sipt_lab.core.exports import lazy_getattr

#: Exported name -> the module of this package that defines it.
_EXPORTS = {
    "EncoderInputs": "protocols",
    "SequenceEncoder": "protocols",
    "evaluating": "protocols",
    "ENCODER_PRESETS": "encoder",
    "EncoderConfig": "encoder",
    "TransformerEncoder": "encoder",
    "encoder_preset": "encoder",
    "load_pretrained": "encoder",
    "save_pretrained": "encoder",
    "POOLINGS": "hf",
    "HFEncoder": "hf",
    "HFTokenizer": "hf",
    "CharInit": "sources",
    "CheckpointInit": "sources",
    "EncoderSource": "sources",
    "encoder_source": "sources",
    "load_encoder": "sources",
    "save_encoder": "sources",
    "SubwordTokenizer": "subword",
    "TokenizerConfig": "subword",
    "CLS_ID": "tokenizer",
    "MASK_ID": "tokenizer",
    "PAD_ID": "tokenizer",
    "SPECIAL_TOKENS": "tokenizer",
    "UNK_ID": "tokenizer",
    "CharTokenizer": "tokenizer",
    "Tokenizer": "tokenizer",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_getattr(__name__, _EXPORTS)
