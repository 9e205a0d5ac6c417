import json

import numpy as np
import pytest

from sipt_lab.core.errors import SiptError
from sipt_lab.models import CLS_ID, PAD_ID, SPECIAL_TOKENS, UNK_ID, CharTokenizer

SENTENCES = ["the cat sat.", "Ünïcödé — ok 🙂", "a", ""]


def test_round_trip_and_layout():
    tok = CharTokenizer.build(SENTENCES)
    ids, lengths = tok.encode(SENTENCES)
    assert ids.dtype == np.int64 and ids.shape == (4, 1 + max(len(s) for s in SENTENCES))
    assert lengths.tolist() == [1 + len(s) for s in SENTENCES]
    assert (ids[:, 0] == CLS_ID).all()
    for row, length, sentence in zip(ids, lengths, SENTENCES):
        assert (row[length:] == PAD_ID).all()
        assert tok.decode(row) == "[CLS]" + sentence
    assert tok.vocab_size == len(SPECIAL_TOKENS) + len(set("".join(SENTENCES)))
    assert UNK_ID not in ids


def test_vocabulary_is_sorted_characters_after_specials():
    tok = CharTokenizer.build(["cab", "b"])
    assert tok.chars == ("a", "b", "c")
    ids, _ = tok.encode(["abc"])
    assert ids.tolist() == [[CLS_ID, 4, 5, 6]]


def test_unknown_characters_map_to_unk():
    tok = CharTokenizer.build(["abc"])
    ids, lengths = tok.encode(["axb€", "zzz"])
    assert ids.tolist() == [[CLS_ID, 4, UNK_ID, 5, UNK_ID], [CLS_ID, UNK_ID, UNK_ID, UNK_ID, PAD_ID]]
    assert lengths.tolist() == [5, 4]
    assert tok.decode(ids[0]) == "[CLS]a[UNK]b[UNK]"


def test_truncation_keeps_cls_and_first_characters():
    tok = CharTokenizer.build(["abcdefgh"], max_len=4)
    ids, lengths = tok.encode(["abcdefgh", "ab"])
    assert ids.shape == (2, 4)
    assert tok.decode(ids[0]) == "[CLS]abc" and lengths.tolist() == [4, 3]


def test_save_load_json(tmp_path):
    tok = CharTokenizer.build(SENTENCES + ["bad \udcff surrogate"], max_len=9)
    tok.save(tmp_path / "tok.json")
    data = json.loads((tmp_path / "tok.json").read_text())
    assert data["max_len"] == 9 and data["special_tokens"] == list(SPECIAL_TOKENS)
    loaded = CharTokenizer.load(tmp_path / "tok.json")
    assert loaded == tok
    np.testing.assert_array_equal(loaded.encode(SENTENCES)[0], tok.encode(SENTENCES)[0])


def test_load_missing_file_is_a_sipt_error(tmp_path):
    with pytest.raises(SiptError, match="does not exist"):
        CharTokenizer.load(tmp_path / "nope.json")


def test_too_short_max_len_is_rejected():
    with pytest.raises(SiptError, match="max_len"):
        CharTokenizer.build(["abc"], max_len=1)


def test_a_named_char_model_learns_its_alphabet_from_the_texts_it_will_read():
    """``finetune --model char`` (an untrained char encoder as a baseline) reads the task's texts:
    with no texts every character was unknown and every sample got the same embedding."""
    import torch

    from sipt_lab.models.sources import model_loader
    from sipt_lab.training import embed

    texts = ["the cat sat", "a dog ran far", "zebras graze"]
    torch.manual_seed(0)
    encoder, tokenizer = model_loader("char", texts=texts)()
    codes = tokenizer.encode(texts)[0]
    assert len(set(codes[0].tolist()) - {tokenizer.pad_id}) > 3
    vectors = embed(encoder, tokenizer, texts, device="cpu")
    assert vectors.shape[0] == 3 and not torch.allclose(torch.as_tensor(vectors[0]), torch.as_tensor(vectors[1]))
