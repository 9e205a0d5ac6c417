"""The names of the encoders' choices (init, tokenizer, pooling, char encoder size), importable
without torch or transformers.

The CLI's parsers list them (``sipt-lab --help`` stays fast), and the registries of
:mod:`sipt_lab.models` are built on them (``dict(zip(NAMES, entries, strict=True))``), so each list
is written once.
"""

#: ``--init`` of a fresh character transformer (:class:`sipt_lab.models.CharInit`).
CHAR_INIT = "char"
#: Vocabularies of a fresh encoder (:data:`sipt_lab.models.subword.TOKENIZER_KINDS`).
TOKENIZERS = ("char", "bpe")
#: Per-sample pooling of a Hugging Face encoder (:data:`sipt_lab.models.hf_checkpoints.POOLINGS`).
POOLINGS = ("cls", "mean")
#: Char encoder sizes (:data:`sipt_lab.models.encoder.ENCODER_PRESETS`).
ENCODER_PRESETS = ("default", "paper-small", "paper-manifolds")
