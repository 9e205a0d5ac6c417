"""A tiny random BERT saved as a Hugging Face directory: the offline stand-in for real checkpoints."""

import json
from pathlib import Path

import torch

WORDS = (
    "the a of and to in is was for on that with as by at from it an be this are or which his her one two three".split()
)


def write_tiny_bert(
    directory: Path, words: list[str], *, with_head: bool = True, st_pooling: str | None = None
) -> Path:
    """A random 2-layer BERT (word-level vocabulary) saved as a Hugging Face directory; without
    the MLM head and with sentence-transformers files (mean pooling + Normalize) when asked."""
    from transformers import BertConfig, BertForMaskedLM, BertModel, BertTokenizerFast

    directory.mkdir(parents=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(str(directory / "vocab.txt")).save_pretrained(directory)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )
    torch.manual_seed(0)
    (BertForMaskedLM if with_head else BertModel)(config).save_pretrained(directory)
    if st_pooling:
        (directory / "modules.json").write_text(
            json.dumps(
                [
                    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
                ]
            )
        )
        (directory / "1_Pooling").mkdir()
        (directory / "1_Pooling" / "config.json").write_text(
            json.dumps(
                {
                    "word_embedding_dimension": 32,
                    "pooling_mode_cls_token": st_pooling == "cls",
                    "pooling_mode_mean_tokens": st_pooling == "mean",
                }
            )
        )
    return directory


def write_tiny_distilbert(directory: Path, words: list[str]) -> Path:
    """A random 2-layer DistilBERT: its MLM head is several modules, so the encoder takes the
    whole model's logits."""
    from transformers import BertTokenizerFast, DistilBertConfig, DistilBertForMaskedLM

    directory.mkdir(parents=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(str(directory / "vocab.txt")).save_pretrained(directory)
    torch.manual_seed(0)
    DistilBertForMaskedLM(
        DistilBertConfig(
            vocab_size=len(vocab),
            dim=32,
            n_layers=2,
            n_heads=2,
            hidden_dim=64,
            max_position_embeddings=64,
            dropout=0.0,
            attention_dropout=0.0,
        )
    ).save_pretrained(directory)
    return directory


def write_tiny_roberta(directory: Path, words: list[str]) -> Path:
    """A random 2-layer RoBERTa with a word-level tokenizer whose pad id is 1, not 0."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast, RobertaConfig, RobertaForMaskedLM

    directory.mkdir(parents=True)
    vocab = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", *words]
    backend = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        mask_token="<mask>",
        cls_token="<s>",
        sep_token="</s>",
    ).save_pretrained(directory)
    torch.manual_seed(0)
    RobertaForMaskedLM(
        RobertaConfig(
            vocab_size=len(vocab),
            hidden_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=64,
            max_position_embeddings=70,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            hidden_dropout_prob=0.0,
            attention_probs_dropout_prob=0.0,
        )
    ).save_pretrained(directory)
    return directory


#: ESM-2's tokens (its tokenizer reads a protein as one token per residue).
ESM_TOKENS = ["<cls>", "<pad>", "<eos>", "<unk>", *"LAGVSERTIDPKQNFYMHWCXBUZO.-", "<null_1>", "<mask>"]


def write_esm(
    directory: Path,
    hidden: int = 32,
    layers: int = 2,
    heads: int = 2,
    ffn: int = 64,
    positions: int = 66,
    dropout: float = 0.0,
) -> Path:
    """A random ESM (rotary positions; tiny by default) with ESM-2's tokenizer: a Hugging Face protein LM."""
    from transformers import EsmConfig, EsmForMaskedLM, EsmTokenizer

    directory.mkdir(parents=True)
    (directory / "vocab.txt").write_text("\n".join(ESM_TOKENS) + "\n")
    EsmTokenizer(str(directory / "vocab.txt")).save_pretrained(directory)
    torch.manual_seed(0)
    EsmForMaskedLM(
        EsmConfig(
            vocab_size=len(ESM_TOKENS),
            hidden_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=heads,
            intermediate_size=ffn,
            max_position_embeddings=positions,
            pad_token_id=1,
            mask_token_id=len(ESM_TOKENS) - 1,
            position_embedding_type="rotary",
            token_dropout=False,
            hidden_dropout_prob=dropout,
            attention_probs_dropout_prob=dropout,
        )
    ).save_pretrained(directory)
    return directory
