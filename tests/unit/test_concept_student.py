"""The MLSM student: its weights start as the teacher's, and its final phase folds the concept ->
vocabulary layer into an ordinary MLM decoder that saves and loads like any encoder."""

import numpy as np
import pytest
import torch
from torch import nn

from sipt_lab.core.errors import ConfigError
from sipt_lab.models import CharInit, CharTokenizer, EncoderConfig, TransformerEncoder
from sipt_lab.models.encoder import load_pretrained
from sipt_lab.training.concept_student import (
    copy_teacher,
    final_phase,
    fold_concept_layer,
    masked_logits,
    masked_places,
)
from sipt_lab.training.methods import ConceptOptions, ConceptRecipe, Teacher

TINY = EncoderConfig(hidden=16, n_layers=2, n_heads=2, ffn=32, max_len=32)
TEXTS = ["red apple pie", "green apple", "ripe pear tart", "sour pear", "blue sky", "grey sky at dusk"]


def _teacher() -> Teacher:
    tokenizer = CharTokenizer.build(TEXTS, max_len=32)
    torch.manual_seed(5)
    teacher = TransformerEncoder(EncoderConfig(**{**TINY.__dict__, "vocab_size": tokenizer.vocab_size}))
    return Teacher(teacher.eval(), tokenizer)


def _student(teacher: Teacher, student_init="teacher", config=TINY):
    source = ConceptRecipe(teacher, ConceptOptions(student_init=student_init)).encoder_source(CharInit(config))
    torch.manual_seed(0)  # as the trainer seeds it
    return source.encoder(teacher.tokenizer)


def test_student_starts_from_the_teacher_where_shapes_match():
    teacher = _teacher()
    vocab, k = teacher.tokenizer.vocab_size, 2 * TINY.hidden
    student, notes = _student(teacher)
    assert "student initialised from the teacher" in notes[-1]
    given = teacher.encoder.state_dict()
    for name, value in student.state_dict().items():
        assert torch.equal(value[: given[name].shape[0]], given[name]), name
    assert student.tokens.weight.shape == (vocab + k, TINY.hidden)
    # the concept rows are new, not copies of token rows
    assert not torch.equal(student.tokens.weight[vocab:], torch.zeros(k, TINY.hidden))
    random_student, notes = _student(teacher, "random")
    assert not torch.equal(random_student.blocks[0].qkv.weight, teacher.encoder.blocks[0].qkv.weight)
    wider, notes = _student(teacher, config=EncoderConfig(**{**TINY.__dict__, "hidden": 32}))
    assert notes[-1].startswith("student initialised at random: the teacher's tokens.weight is")
    with pytest.raises(ConfigError, match="ConceptOptions.student_init is 'copy'; choose one of teacher, random"):
        ConceptOptions(student_init="copy")


def test_folded_layer_gives_the_layer_of_the_concept_logits(tmp_path):
    teacher = _teacher()
    tokenizer, vocab = teacher.tokenizer, teacher.tokenizer.vocab_size
    student = _student(teacher)[0].eval()
    ids, lengths = tokenizer.encode(TEXTS)
    mask = masked_places(lengths, ids.shape[1], 0.5, np.random.default_rng(0))
    concepts = masked_logits(student, ids, lengths, mask, tokenizer.mask_id, first=vocab)
    torch.manual_seed(1)
    layer = nn.Linear(concepts.shape[1], vocab)
    fold_concept_layer(student, layer)
    folded = masked_logits(student, ids, lengths, mask, tokenizer.mask_id)
    assert folded.shape == (int(mask.sum()), vocab)
    with torch.inference_mode():
        torch.testing.assert_close(folded, layer(concepts), rtol=1e-4, atol=1e-5)
    student.save(tmp_path / "model", tokenizer)
    loaded, _ = load_pretrained(tmp_path / "model")
    assert loaded.config.vocab_size == vocab and not loaded.config.tie_mlm_head
    torch.testing.assert_close(masked_logits(loaded, ids, lengths, mask, tokenizer.mask_id), folded)


def test_final_phase_reports_and_leaves_a_vocabulary_model():
    teacher = _teacher()
    student = _student(teacher)[0]
    report = final_phase(student, teacher.tokenizer, TEXTS * 20, seed=0)
    assert student.mlm_decoder.weight.shape == (teacher.tokenizer.vocab_size, TINY.hidden)
    assert report["tokens"] > 0 and report["steps"] > 0
    # the layer learns from the concept logits: better than always the most frequent token
    assert report["fit_accuracy"] > report["majority_accuracy"]


def test_final_phase_on_a_hugging_face_encoder_saves_untied(tiny_bert, tmp_path):
    from sipt_lab.models.hf import load_hf_encoder, load_hf_tokenizer

    tokenizer = load_hf_tokenizer(tiny_bert)
    encoder, _ = load_hf_encoder(tiny_bert, tokenizer.pad_id)
    vocab = tokenizer.vocab_size
    teacher, _ = load_hf_encoder(tiny_bert, tokenizer.pad_id)
    with torch.no_grad():
        for value in teacher.parameters():
            value.add_(0.01)  # an LM-trained teacher: weights other than the checkpoint's
    encoder.add_output_rows(8)
    assert "student initialised from the teacher" in copy_teacher(encoder, teacher)
    given = teacher.state_dict()
    assert all(torch.equal(v[: given[n].shape[0]], given[n]) for n, v in encoder.state_dict().items())
    encoder.eval()
    texts = ["the one of two", "a three and it", "this was for his"]
    ids, lengths = tokenizer.encode(texts)
    mask = masked_places(lengths, ids.shape[1], 0.5, np.random.default_rng(0), tokenizer.suffix_tokens)
    concepts = masked_logits(encoder, ids, lengths, mask, tokenizer.mask_id, first=vocab)
    layer = nn.Linear(8, vocab)
    fold_concept_layer(encoder, layer)
    folded = masked_logits(encoder, ids, lengths, mask, tokenizer.mask_id)
    with torch.inference_mode():
        torch.testing.assert_close(folded, layer(concepts), rtol=1e-4, atol=1e-5)
    encoder.save(tmp_path / "model", tokenizer)
    loaded, notes = load_hf_encoder(tmp_path / "model", tokenizer.pad_id)
    assert notes == []
    torch.testing.assert_close(masked_logits(loaded, ids, lengths, mask, tokenizer.mask_id), folded)
