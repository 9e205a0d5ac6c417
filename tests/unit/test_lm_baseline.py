"""The LM baseline's options: learnt subword vocabularies, whole-word masking, the unigram entropy,
and a simulate cell that names them."""

import json
import math

import numpy as np
import pytest
from synthetic_fakes import fake_corpus_and_topics

from sipt_lab.core.config_io import config_hash, load_config, save_config
from sipt_lab.core.errors import ConfigError, SiptError
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models import CharInit, CharTokenizer, EncoderConfig, load_encoder, save_encoder
from sipt_lab.models.subword import SubwordTokenizer, TokenizerConfig, build_tokenizer, load_tokenizer
from sipt_lab.models.tokenizer import CLS_ID, MASK_ID, PAD_ID, UNK_ID, unigram_entropy
from sipt_lab.studies.simulation.arms import simulate_seed
from sipt_lab.studies.simulation.config import SimulationConfig, simulation_config
from sipt_lab.synthetic import builder
from sipt_lab.training import TrainConfig, embed, pretrain
from sipt_lab.training.sampler import MASK_UNITS, GraphBatchSampler

TEXTS = ["The cat sat on the mat.", "A dog chased the cat, then the dog slept.", "Cats and dogs sat together on mats."]
TINY = EncoderConfig(hidden=8, n_layers=1, n_heads=2, ffn=8, max_len=64)


@pytest.fixture(scope="module")
def subword():
    return SubwordTokenizer.build(TEXTS * 4, max_len=8, kind="bpe", vocab_size=60)


def test_subword_rows_are_cls_first_padded_and_truncated(subword):
    assert (subword.pad_id, subword.mask_id, subword.suffix_tokens) == (PAD_ID, MASK_ID, 0)
    assert 4 < subword.vocab_size <= 60
    ids, lengths = subword.encode(["the cat", "", TEXTS[1], "zzz qqq"])
    assert (ids[:, 0] == CLS_ID).all()
    assert lengths[1] == 1 and lengths[2] == subword.max_len  # empty text: [CLS] alone; long text cut to max_len
    assert ids.shape == (4, subword.max_len)
    columns = np.arange(ids.shape[1])
    assert ((ids == PAD_ID) == (columns >= lengths[:, None])).all()
    assert ((ids[:, 1:] > UNK_ID) | (ids[:, 1:] == PAD_ID) | (ids[:, 1:] == UNK_ID)).all()
    assert ids.max() < subword.vocab_size
    assert lengths[0] < 1 + len("the cat")  # pieces, not characters
    assert UNK_ID in ids[3]  # "z" and "q" were never seen


def test_subword_training_is_deterministic(subword):
    assert SubwordTokenizer.build(TEXTS * 4, max_len=8, kind=subword.kind, vocab_size=60).model == subword.model


def test_word_ids_group_the_pieces_of_a_word(subword):
    texts = ["the cat", "dogs, mats"]
    ids, lengths = subword.encode(texts)
    words = subword.word_ids(texts)
    assert words.shape == ids.shape
    assert (words[:, 0] == -1).all() and (words[ids == PAD_ID] == -1).all()
    assert words[0, 1:3].tolist() == [0, 1]
    assert sorted(set(words[1, 1 : lengths[1]].tolist())) == [0, 1, 2]  # "dogs" "," "mats"


def test_char_word_ids():
    tokenizer = CharTokenizer.build(["ab cd", " x  yz"], max_len=5)
    words = tokenizer.word_ids(["ab cd", "", " x  yz"])
    assert words.tolist() == [[-1, 0, 0, 1, 2], [-1, -1, -1, -1, -1], [-1, 0, 1, 2, 3]]


def test_encoder_directory_round_trip_keeps_the_subword_tokenizer(subword, tmp_path):
    source = CharInit(TINY, TokenizerConfig(subword.kind, vocab_size=60))
    tokenizer = source.tokenizer(TEXTS * 4, max_len=8)
    assert isinstance(tokenizer, SubwordTokenizer) and tokenizer.model == subword.model
    encoder, _ = source.encoder(tokenizer)
    save_encoder(encoder, tokenizer, tmp_path / "model")
    loaded, loaded_tokenizer = load_encoder(tmp_path / "model")
    assert isinstance(loaded_tokenizer, SubwordTokenizer) and loaded_tokenizer.to_dict() == tokenizer.to_dict()
    assert np.array_equal(loaded_tokenizer.encode(TEXTS)[0], tokenizer.encode(TEXTS)[0])
    assert np.allclose(embed(loaded, loaded_tokenizer, TEXTS), embed(encoder.eval(), tokenizer, TEXTS), atol=1e-6)
    assert source.describe()["vocabulary"] == {"kind": subword.kind, "vocab_size": 60}


def test_char_tokenizer_still_loads_through_load_tokenizer(tmp_path):
    tokenizer = CharTokenizer.build(TEXTS, max_len=16)
    tokenizer.save(tmp_path / "tok.json")
    assert load_tokenizer(tmp_path / "tok.json") == tokenizer
    assert build_tokenizer(TokenizerConfig(), TEXTS, 16) == tokenizer


@pytest.mark.parametrize(
    "kwargs, field",
    [({"kind": "wordpiece"}, "TokenizerConfig.kind"), ({"vocab_size": 4}, "TokenizerConfig.vocab_size")],
)
def test_tokenizer_config_is_validated(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        TokenizerConfig(**kwargs)


def test_whole_word_masks_cover_whole_words():
    texts = ["alpha beta gamma delta epsilon zeta eta theta"] * 6
    tokenizer = CharTokenizer.build(texts, max_len=64)
    ids, lengths = tokenizer.encode(texts)
    words = MASK_UNITS["word"](tokenizer, texts)
    graph = PretrainingGraph.from_groups(np.arange(6) % 2)
    sampler = GraphBatchSampler(graph, lengths, batch_size=6, mask_prob=0.3, seed=1, units=words)
    masked_words = 0
    for step in range(5):
        batch = sampler.batch(step)
        unit = words[batch.nodes[: batch.n_seeds], : batch.mask.shape[1]]
        for row in range(batch.n_seeds):
            for word in set(unit[row][batch.mask[row]].tolist()):
                assert batch.mask[row][unit[row] == word].all()  # every character of a chosen word
                masked_words += 1
        assert not batch.mask[unit < 0].any()
    assert masked_words > 10
    assert MASK_UNITS["token"](tokenizer, texts) is None


def test_whole_word_needs_word_boundaries():
    class NoWords:
        pass

    with pytest.raises(SiptError, match="mask_unit token"):
        MASK_UNITS["word"](NoWords(), TEXTS)
    with pytest.raises(ConfigError, match="TrainConfig.mask_unit"):
        TrainConfig(mask_unit="span")


def test_unigram_entropy_by_hand():
    # maskable tokens 5, 5, 6 and 6 (the 9s close each row): two equally frequent types = ln 2 nats;
    # [CLS], padding and the closing suffix token are not counted
    ids = np.array([[2, 5, 5, 6, 9], [2, 6, 9, 0, 0]])
    assert unigram_entropy(ids, np.array([5, 3]), suffix_tokens=1) == pytest.approx(math.log(2))
    assert unigram_entropy(ids, np.array([5, 3])) == pytest.approx(math.log(3))  # with the 9s: a, a, b, b, 9, 9
    with pytest.raises(SiptError, match="no maskable tokens"):
        unigram_entropy(np.array([[2]]), np.array([1]))


@pytest.fixture
def fake_cliques(monkeypatch):
    corpus, topics = fake_corpus_and_topics(n_topics=6, per_topic=12)
    monkeypatch.setattr(builder, "load_corpus", lambda path=None: corpus)
    monkeypatch.setattr(builder, "fit_topics", lambda corpus, config: topics)


def test_simulate_cell_with_subword_whole_word_bert_runs_and_is_recorded(tmp_path, fake_cliques):
    options = {"mask_unit": "word", "mask_replacement": "bert", "device": "cpu"}
    config = simulation_config(
        "cliques",
        steps=3,
        batch_size=8,
        encoder=TINY,
        tokenizer=TokenizerConfig("bpe", vocab_size=80),
        graph_options={"n_nodes": 12, "n_heldout": 4},
        train_options=options,
    )
    plain = simulation_config(
        "cliques",
        steps=3,
        batch_size=8,
        encoder=TINY,
        graph_options={"n_nodes": 12, "n_heldout": 4},
        train_options={"device": "cpu"},
    )
    assert config_hash(config) != config_hash(plain)
    save_config(config, tmp_path / "config.json")
    assert load_config(SimulationConfig, tmp_path / "config.json") == config
    assert json.loads((tmp_path / "config.json").read_text())["tokenizer"] == {"kind": "bpe", "vocab_size": 80}
    result = simulate_seed(config)
    for arm in ("lm", "sipt"):
        metrics = result["methods"][arm]
        assert 0.0 <= metrics["auroc"] <= 1.0
        assert metrics["final_terms"]["mlm"] > 0 and metrics["unigram_entropy"] > 0
    assert "si" in result["methods"]["sipt"]["final_terms"] and "si" not in result["methods"]["lm"]["final_terms"]
    assert plain.tokenizer == TokenizerConfig("bpe")  # CLIQUES' default vocabulary
    assert simulation_config("cliques", tokenizer=TokenizerConfig()).tokenizer.kind == "char"
    assert simulation_config("torus").tokenizer.kind == "char"


@pytest.mark.slow
def test_pretrain_with_subword_and_whole_words_learns_the_unigram_plateau():
    texts = TEXTS * 8
    graph = PretrainingGraph.from_groups(np.arange(len(texts)) % 3)
    config = TrainConfig(steps=60, batch_size=24, lr=1e-2, lambda_si=0.0, mask_unit="word", device="cpu", seed=0)
    result = pretrain(texts, graph, config, CharInit(TINY, TokenizerConfig("bpe", vocab_size=60)))
    ids, lengths = result.tokenizer.encode(texts)
    assert result.history["mlm"][-10:].mean() < result.history["mlm"][:3].mean()
    assert result.history["mlm"][-10:].mean() < 1.5 * unigram_entropy(ids, lengths)


def test_bpe_vocabulary_with_sep_for_segment_pairs_round_trips():
    from sipt_lab.core.errors import SiptError
    from sipt_lab.models.subword import SubwordTokenizer

    texts = ["the cat sat on the mat", "a dog ran in the park", "the cat ran"]
    with_sep = SubwordTokenizer.build(texts, vocab_size=60, sep=True)
    assert with_sep.sep_id == 4 and SubwordTokenizer.from_dict(with_sep.to_dict()).sep_id == 4
    assert with_sep.sep_id not in with_sep.encode(texts)[0][:, 1:]  # never produced from text
    with pytest.raises(SiptError, match="no \\[SEP\\]"):
        _ = SubwordTokenizer.build(texts, vocab_size=60).sep_id
