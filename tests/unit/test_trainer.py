import itertools

import numpy as np
import pytest
import torch
from torch import nn

from sipt_lab.core.errors import SiptError
from sipt_lab.evaluation import loo_knn_auroc
from sipt_lab.graphs.graph import PretrainingGraph
from sipt_lab.models import (
    CharInit,
    CharTokenizer,
    EncoderConfig,
    SequenceEncoder,
    TransformerEncoder,
    encoder_preset,
    load_pretrained,
)
from sipt_lab.models.buckets import BUCKET_PENALTY, length_buckets
from sipt_lab.objectives import MaskedLM, build_objectives, contrastive_loss
from sipt_lab.training import GraphBatchSampler, TrainConfig, embed, pretrain
from sipt_lab.training.sampler import KEEP_TOKEN, REPLACE_WITH_MASK
from sipt_lab.training.step import ModelStep, RunLoss, train_step
from sipt_lab.training.train_config import lr_factor

TINY = encoder_preset("paper-small", max_len=24)


def _cliques(seed=0, n_cliques=4, size=10):
    """Label cliques over random strings from one shared character pool: labels are not in the text."""
    rng = np.random.default_rng(seed)
    pool = np.array(list("abcdefghij "))
    sentences = ["".join(rng.choice(pool, size=rng.integers(12, 24))) for _ in range(n_cliques * size)]
    labels = np.repeat(np.arange(n_cliques), size)
    return sentences, PretrainingGraph.from_groups(labels), labels


def _config(**overrides):
    base = dict(
        steps=8,
        batch_size=12,
        lambda_si=0.1,
        lr=1e-3,
        schedule="constant",
        log_every=3,
        max_len=24,
        seed=3,
        device="cpu",
    )
    return TrainConfig(**{**base, **overrides})


def test_same_seed_gives_identical_losses_and_embeddings():
    sentences, graph, _ = _cliques()
    a = pretrain(sentences, graph, _config(), TINY)
    b = pretrain(sentences, graph, _config(), TINY)
    assert set(a.history) == {"loss", "mlm", "si", "lr"} and a.history["loss"].shape == (8,)
    for name in a.history:
        np.testing.assert_array_equal(a.history[name], b.history[name])
    np.testing.assert_array_equal(embed(a.encoder, a.tokenizer, sentences), embed(b.encoder, b.tokenizer, sentences))
    np.testing.assert_allclose(a.history["loss"], 0.9 * a.history["mlm"] + 0.1 * a.history["si"], rtol=1e-6)
    c = pretrain(sentences, graph, _config(seed=4), TINY)
    assert not np.array_equal(a.history["loss"], c.history["loss"])


def test_lm_arm_computes_no_structure_term_and_shares_the_init():
    sentences, graph, _ = _cliques()
    lm = pretrain(sentences, graph, _config(lambda_si=0.0, steps=1), TINY)
    assert set(lm.history) == {"loss", "mlm", "lr"}
    np.testing.assert_array_equal(lm.history["loss"], lm.history["mlm"])


def test_multisim_trains_and_pure_si_skips_mlm():
    sentences, graph, _ = _cliques()
    result = pretrain(
        sentences,
        graph,
        _config(steps=3, lambda_si=1.0, loss="multisim", loss_params={"w_neg": 2.0}),
        TINY,
    )
    assert set(result.history) == {"loss", "si", "lr"} and np.isfinite(result.history["si"]).all()


def test_resume_gives_the_same_result_as_an_uninterrupted_run(tmp_path):
    sentences, graph, _ = _cliques()
    whole = pretrain(sentences, graph, _config(), TINY)
    first = pretrain(sentences, graph, _config(steps=5), TINY, checkpoint_dir=tmp_path)
    assert (tmp_path / "checkpoint.pt").is_file()
    resumed = pretrain(sentences, graph, _config(), TINY, checkpoint_dir=tmp_path)
    np.testing.assert_array_equal(first.history["loss"], whole.history["loss"][:5])
    for name in whole.history:
        np.testing.assert_array_equal(resumed.history[name], whole.history[name])
    np.testing.assert_array_equal(
        embed(resumed.encoder, resumed.tokenizer, sentences), embed(whole.encoder, whole.tokenizer, sentences)
    )


def test_interrupted_run_resumes_from_its_last_periodic_checkpoint(tmp_path, monkeypatch):
    sentences, graph, _ = _cliques()
    whole = pretrain(sentences, graph, _config(), TINY)
    calls = {"n": 0}
    original = MaskedLM.forward

    def crash_at_step_6(self, inputs):
        calls["n"] += 1
        if calls["n"] == 7:
            raise KeyboardInterrupt
        return original(self, inputs)

    monkeypatch.setattr(MaskedLM, "forward", crash_at_step_6)
    with pytest.raises(KeyboardInterrupt):
        pretrain(sentences, graph, _config(checkpoint_every=3), TINY, checkpoint_dir=tmp_path)
    monkeypatch.setattr(MaskedLM, "forward", original)
    assert torch.load(tmp_path / "checkpoint.pt", weights_only=True)["step"] == 6
    resumed = pretrain(sentences, graph, _config(checkpoint_every=3), TINY, checkpoint_dir=tmp_path)
    for name in whole.history:
        np.testing.assert_array_equal(resumed.history[name], whole.history[name])


def test_checkpoint_of_another_configuration_is_refused(tmp_path):
    sentences, graph, _ = _cliques()
    pretrain(sentences, graph, _config(steps=2), TINY, checkpoint_dir=tmp_path)
    with pytest.raises(SiptError, match=r"another configuration \(differs in train.lr\)"):
        pretrain(sentences, graph, _config(steps=2, lr=2e-3), TINY, checkpoint_dir=tmp_path)


def test_non_finite_loss_stops_naming_the_step(monkeypatch):
    sentences, graph, _ = _cliques()
    calls = {"n": 0}
    original = MaskedLM.forward

    def nan_at_step_4(self, inputs):
        calls["n"] += 1
        loss = original(self, inputs)
        return loss * float("nan") if calls["n"] == 5 else loss

    monkeypatch.setattr(MaskedLM, "forward", nan_at_step_4)
    with pytest.raises(SiptError, match=r"non-finite loss at step 4 \(loss=nan, mlm=nan, si=[0-9.]+, lr=[0-9.e-]+\)"):
        pretrain(sentences, graph, _config(steps=20), TINY)


def test_embed_is_batch_invariant_eval_mode_and_handles_unseen_characters():
    sentences, graph, _ = _cliques()
    result = pretrain(sentences, graph, _config(steps=2), TINY)
    assert not result.encoder.training
    big = embed(result.encoder, result.tokenizer, sentences, batch_size=100)
    small = embed(result.encoder, result.tokenizer, sentences, batch_size=3)
    assert big.shape == (40, TINY.hidden) and big.dtype == np.float32
    np.testing.assert_allclose(big, small, rtol=1e-5, atol=1e-6)
    unseen = embed(result.encoder, result.tokenizer, ["xyz ÆØÅ 🙂", "a" * 500], device="cpu")
    assert np.isfinite(unseen).all()


def test_save_and_load_pretrained_round_trip(tmp_path):
    sentences, graph, _ = _cliques()
    result = pretrain(sentences, graph, _config(steps=2), TINY)
    result.save(tmp_path / "model")
    encoder, tokenizer = load_pretrained(tmp_path / "model")
    assert tokenizer == result.tokenizer and encoder.config == result.encoder.config
    np.testing.assert_array_equal(
        embed(encoder, tokenizer, sentences), embed(result.encoder, result.tokenizer, sentences)
    )
    assert (tmp_path / "model" / "history.json").is_file() and (tmp_path / "model" / "train_config.json").is_file()


class _BagOfCharacters(nn.Module):
    """A non-transformer encoder: mean of character embeddings, MLM logits from the embedding table."""

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.hidden_size = config.hidden
        self.table = nn.Embedding(config.vocab_size, config.hidden)

    def embed(self, input_ids):
        real = (input_ids != 0).unsqueeze(-1).float()
        return (self.table(input_ids) * real).sum(1) / real.sum(1)

    def token_logits(self, input_ids):
        return self.table(input_ids) @ self.table.weight.T

    def embed_and_masked_logits(self, input_ids, positions):
        return self.embed(input_ids), self.token_logits(input_ids).flatten(0, 1)[positions]


def test_any_sequence_encoder_can_be_trained_and_one_without_save_says_so(tmp_path):
    sentences, graph, _ = _cliques()
    result = pretrain(sentences, graph, _config(steps=3), CharInit(TINY, build=_BagOfCharacters))
    assert isinstance(result.encoder, _BagOfCharacters) and isinstance(result.encoder, SequenceEncoder)
    assert embed(result.encoder, result.tokenizer, sentences).shape == (40, TINY.hidden)
    with pytest.raises(SiptError, match=r"^_BagOfCharacters has no save\(directory, tokenizer\) method"):
        result.save(tmp_path / "model")
    assert not (tmp_path / "model").exists()  # refused before writing anything


def test_bad_settings_are_sipt_errors():
    sentences, graph, _ = _cliques()
    with pytest.raises(SiptError, match="exceeds the encoder"):
        pretrain(sentences, graph, _config(max_len=100), TINY)
    with pytest.raises(SiptError, match="no parameter"):
        pretrain(sentences, graph, _config(loss="multisim", loss_params={"neg_margin": 1.0}), TINY)
    with pytest.raises(SiptError, match="one sentence per node"):
        pretrain(sentences[:-1], graph, _config(), TINY)
    with pytest.raises(SiptError, match="TrainConfig.pairs 'triplets' is unknown"):
        pretrain(sentences, graph, _config(pairs="triplets"), TINY)
    if not torch.cuda.is_available():
        with pytest.raises(SiptError, match="no CUDA"):
            pretrain(sentences, graph, _config(device="cuda"), TINY)


@pytest.mark.slow
def test_sipt_beats_lm_on_label_cliques():
    sentences, graph, labels = _cliques(seed=0)
    auroc = {}
    for lambda_si in (0.0, 0.5):
        config = _config(
            steps=200,
            batch_size=40,
            lambda_si=lambda_si,
            lr=3e-3,
            loss_params={"neg_margin": 3.0},
            seed=0,
            log_every=50,
        )
        result = pretrain(sentences, graph, config, TINY)
        auroc[lambda_si] = loo_knn_auroc(embed(result.encoder, result.tokenizer, sentences), labels)
    assert auroc[0.5] > auroc[0.0] + 0.15, auroc


def test_last_layer_computed_only_where_read_matches_the_full_pass():
    torch.manual_seed(0)
    config = EncoderConfig(
        vocab_size=30, hidden=12, n_layers=3, n_heads=3, ffn=8, dropout=0.1, attention_dropout=0.0, max_len=24
    )
    encoder = TransformerEncoder(config).double().eval()
    ids = torch.randint(4, 30, (5, 17))
    ids[:, 0] = 2
    ids[1, 9:] = 0
    ids[3, 4:] = 0
    positions = torch.tensor([3, 8, 20, 22, 25, 36, 40, 41, 42, 43, 70, 80, 84])  # 2, 3, 5, 0 and 3 per row
    embeddings, logits = encoder.embed_and_masked_logits(ids, positions)
    states = encoder.hidden_states(ids)
    expected = (states[:, 0], encoder.mlm_decoder(encoder.mlm_transform(states.reshape(-1, 12)[positions])))
    for got, want in zip((embeddings, logits), expected):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(encoder.embed(ids), states[:, 0], rtol=1e-12, atol=1e-12)
    parameters = list(encoder.parameters())
    grads = torch.autograd.grad(embeddings.square().sum() + logits.square().sum(), parameters)
    want_grads = torch.autograd.grad(expected[0].square().sum() + expected[1].square().sum(), parameters)
    for got, want in zip(grads, want_grads):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("power", [1, 2])
def test_length_buckets_split_where_padding_drops_most(power):
    lengths = np.array([100, 10, 51, 12, 50, 11])
    assert [b.tolist() for b in length_buckets(lengths, 3, power)] == [[1, 5, 3], [4, 2], [0]]
    assert [b.tolist() for b in length_buckets(lengths, 1, power)] == [[0, 1, 2, 3, 4, 5]]
    # equal lengths: no second bucket is worth its extra pass
    assert len(length_buckets(np.full(9, 40), 4, power)) == 1
    rng = np.random.default_rng(0)
    for trial in range(40):  # against brute force over all splits into 1 to 3 groups, with and without ties
        lengths = rng.integers(2, 300 if trial % 2 else 8, rng.integers(2, 12))
        buckets = length_buckets(lengths, 3, power)
        assert sorted(np.concatenate(buckets).tolist()) == list(range(len(lengths)))
        assert all(np.all(np.diff(lengths[b]) >= 0) for b in buckets)
        cost_of = lengths.astype(float) ** power
        penalty = BUCKET_PENALTY * cost_of.sum()
        cost = sum(len(b) * cost_of[b].max() for b in buckets) + penalty * (len(buckets) - 1)
        s = np.sort(cost_of)
        splits = [(len(s),)] + [
            cut + (len(s),) for groups in (1, 2) for cut in itertools.combinations(range(1, len(s)), groups)
        ]
        best = min(
            sum((stop - start) * s[stop - 1] for start, stop in zip((0,) + split[:-1], split))
            + penalty * (len(split) - 1)
            for split in splits
        )
        assert cost == pytest.approx(best)


def test_length_buckets_quadratic_cost_splits_more_readily_than_linear():
    lengths = np.array([20] * 20 + [22] * 20)  # 10 % longer: worth a split for scores, not for token slots
    assert len(length_buckets(lengths, 2, power=1)) == 1
    assert [len(b) for b in length_buckets(lengths, 2, power=2)] == [20, 20]


def _mixed_length_batch(seed: int, n_groups: int, batch_size: int, pairs: str):
    """30 random strings of 3..59 characters in ``n_groups`` label cliques, and batch 0 over them,
    whose lengths split into several buckets."""
    rng = np.random.default_rng(seed)
    sentences = ["".join(rng.choice(list("abcdef "), size=n)) for n in rng.integers(3, 60, 30)]
    tokenizer = CharTokenizer.build(sentences, max_len=64)
    ids, lengths = tokenizer.encode(sentences)
    graph = PretrainingGraph.from_groups(np.arange(30) % n_groups)
    batch = GraphBatchSampler(graph, lengths, batch_size, seed=seed - 1, pairs=pairs).batch(0)
    assert len(length_buckets(lengths[batch.nodes], 4)) > 1
    return tokenizer, ids, lengths, batch


@pytest.mark.parametrize("pairs", ["sampled", "batch"])
def test_step_scores_the_batch_pairs_on_the_right_rows(pairs):
    # the step encodes bucket by bucket and puts rows back in batch order before the loss
    tokenizer, ids, lengths, batch = _mixed_length_batch(2, 4, 8, pairs)
    torch.manual_seed(0)
    encoder = TransformerEncoder(encoder_preset("paper-small", vocab_size=tokenizer.vocab_size, max_len=64)).eval()
    padded = torch.as_tensor(ids[batch.nodes, : lengths[batch.nodes].max()])
    with torch.no_grad():
        z = encoder.embed(padded)
    pos, neg = torch.as_tensor(batch.positive_pairs), torch.as_tensor(batch.negative_pairs)
    expected = contrastive_loss(z, pos[:, 0], pos[:, 1], neg[:, 0], neg[:, 1])
    step = RunLoss(torch.as_tensor(ids), lengths, build_objectives(1.0), torch.device("cpu"))
    _, (total, si) = step.losses(encoder, batch)
    assert si.item() == pytest.approx(expected.item(), rel=1e-5)


@pytest.mark.parametrize("lambda_si, pairs", [(0.0, "sampled"), (0.1, "sampled"), (0.1, "batch")])
def test_bucketed_step_equals_one_padded_pass(lambda_si, pairs):
    tokenizer, ids, lengths, batch = _mixed_length_batch(1, 5, 12, pairs)
    config = encoder_preset("paper-small", vocab_size=tokenizer.vocab_size, max_len=64)
    results = []
    for max_buckets in (1, 4):
        torch.manual_seed(0)
        encoder = TransformerEncoder(config).train()
        objectives = build_objectives(lambda_si)
        optimizer = torch.optim.SGD(encoder.parameters(), lr=1.0)  # parameters move by the gradient
        step = RunLoss(torch.as_tensor(ids), lengths, objectives, torch.device("cpu"), max_buckets=max_buckets)
        (losses,) = train_step(
            ModelStep(encoder, step), optimizer, torch.amp.GradScaler("cpu", enabled=False), [[batch]]
        )
        results.append((losses, [p.detach().clone() for p in encoder.parameters()]))
    (single, single_params), (bucketed, bucketed_params) = results
    torch.testing.assert_close(bucketed, single, rtol=1e-5, atol=1e-6)
    for got, want in zip(bucketed_params, single_params):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_lr_schedules_warm_up_and_decay_as_documented():
    config = TrainConfig(steps=10, warmup=0.2, schedule="linear")
    factors = [lr_factor(config, step) for step in range(10)]
    assert factors[:2] == [0.5, 1.0]  # 2 warm-up steps
    assert factors[2:] == pytest.approx([1 - k / 8 for k in range(8)])
    cosine = TrainConfig(steps=5, schedule="cosine")
    assert [lr_factor(cosine, s) for s in (0, 5)] == pytest.approx([1.0, 0.0])
    assert {lr_factor(TrainConfig(steps=7, schedule="constant"), s) for s in range(7)} == {1.0}
    with pytest.raises(SiptError, match="TrainConfig.schedule 'step' is unknown"):
        pretrain(
            ["ab cd"] * 4,
            PretrainingGraph.from_groups([0, 0, 1, 1]),
            TrainConfig(steps=1, schedule="step"),
            EncoderConfig(),
        )


def test_step_feeds_the_encoder_bert_replacements_and_predicts_the_originals():
    # equal lengths: one bucket, whose rows are the seeds in batch order
    rng = np.random.default_rng(0)
    sentences = ["".join(rng.choice(list("abcdef "), size=30)) for _ in range(24)]
    tokenizer = CharTokenizer.build(sentences, max_len=64)
    ids, lengths = tokenizer.encode(sentences)
    graph = PretrainingGraph.from_groups(np.arange(24) % 3)
    batch = GraphBatchSampler(
        graph, lengths, 16, mask_prob=0.5, seed=1, mask_replacement="bert", vocab_size=tokenizer.vocab_size
    ).batch(0)
    seen = []

    class Recording(TransformerEncoder):
        def embed_and_masked_logits(self, input_ids, positions):
            seen.append(input_ids.clone())
            return super().embed_and_masked_logits(input_ids, positions)

    encoder = Recording(encoder_preset("paper-small", vocab_size=tokenizer.vocab_size, max_len=64))
    step = RunLoss(torch.as_tensor(ids), lengths, build_objectives(0.0), torch.device("cpu"), mask_id=tokenizer.mask_id)
    step.losses(encoder, batch)
    (inputs,) = seen
    original = ids[batch.nodes[: batch.n_seeds], : inputs.shape[1]]
    codes = batch.replacement[:, : inputs.shape[1]]
    mask = batch.mask[:, : inputs.shape[1]]
    expected = np.where(codes == REPLACE_WITH_MASK, tokenizer.mask_id, np.where(codes == KEEP_TOKEN, original, codes))
    np.testing.assert_array_equal(inputs.numpy()[mask], expected[mask])
    np.testing.assert_array_equal(inputs.numpy()[~mask], original[~mask])
    assert {REPLACE_WITH_MASK, KEEP_TOKEN} <= set(codes[mask].tolist()) and (codes[mask] >= 0).any()


def _scripted_watch(scores: dict[int, float], seen: dict[str, list]):
    """A WatchFactory whose evaluation at step s gives ``{"link_mrr": scores[s]}``; ``seen`` records the
    steps evaluated, the steps kept as best and the evaluations restored."""
    from sipt_lab.training.watch import Watch

    def factory(encoder, tokenizer):
        return Watch(
            evaluate=lambda step: seen["evaluated"].append(step) or {"link_mrr": scores[step]},
            keep_best=seen["kept"].append,
            restore=lambda records: seen["restored"].extend(record["step"] for record in records),
        )

    return factory


def _seen():
    return {"evaluated": [], "kept": [], "restored": []}


def test_a_run_the_patience_stopped_stays_stopped_when_resumed(tmp_path):
    sentences, graph, _ = _cliques()
    scores = {2: 0.5, 4: 0.6, 6: 0.4, 8: 0.3, 10: 0.2, 12: 0.1}
    config = _config(steps=12, eval_every=2, keep_best="link_mrr", patience=2)
    first_seen = _seen()
    first = pretrain(sentences, graph, config, TINY, checkpoint_dir=tmp_path, watch=_scripted_watch(scores, first_seen))
    assert len(first.history["loss"]) == 8 and first_seen["evaluated"] == [2, 4, 6, 8] and first_seen["kept"] == [2, 4]
    again_seen = _seen()
    again = pretrain(sentences, graph, config, TINY, checkpoint_dir=tmp_path, watch=_scripted_watch(scores, again_seen))
    assert again_seen == {"evaluated": [], "kept": [], "restored": [2, 4, 6, 8]}
    for name in first.history:
        np.testing.assert_array_equal(again.history[name], first.history[name])
    # a larger patience trains on, counting the evaluations already without progress: 3 at step 10
    patient_seen = _seen()
    patient = pretrain(
        sentences, graph, _config(steps=12, eval_every=2, keep_best="link_mrr", patience=3), TINY,
        checkpoint_dir=tmp_path, watch=_scripted_watch(scores, patient_seen),
    )  # fmt: skip
    assert patient_seen["evaluated"] == [10] and patient_seen["kept"] == [] and len(patient.history["loss"]) == 10


def test_a_resumed_run_keeps_its_best_so_far(tmp_path):
    sentences, graph, _ = _cliques()
    scores = {2: 0.9, 4: 0.5, 6: 0.6, 8: 0.95}
    seen = _seen()
    config = _config(steps=4, eval_every=2, keep_best="link_mrr")
    pretrain(sentences, graph, config, TINY, checkpoint_dir=tmp_path, watch=_scripted_watch(scores, seen))
    assert seen == {"evaluated": [2, 4], "kept": [2], "restored": []}
    seen = _seen()
    pretrain(
        sentences, graph, _config(steps=8, eval_every=2, keep_best="link_mrr"), TINY,
        checkpoint_dir=tmp_path, watch=_scripted_watch(scores, seen),
    )  # fmt: skip
    assert seen == {"evaluated": [6, 8], "kept": [8], "restored": [2, 4]}  # 0.6 at step 6 is not kept over 0.9
