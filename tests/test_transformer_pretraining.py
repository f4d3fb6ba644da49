"""Pretraining tiny language models (attn.transformer): GPT's and BERT's objectives as batches
(language_model_batch), each token's loss, train_language_model on the text corpus, the objectives that need a causal
model, and evaluation that leaves the training mode as it was."""

import math
from functools import partial

import pytest
import torch
from tiny_models import N_TEST, tiny_lm

from attn.data.language import mask_tokens
from attn.data.sequences import IGNORE
from attn.training import seeded
from attn.transformer import (
    OBJECTIVES,
    LanguageModel,
    LanguageModelConfig,
    fill_in,
    language_model_batch,
    language_model_loss,
    token_losses,
    train_language_model,
)

# ---------------------------------------------------------------- language_model_batch and token_losses


SENTENCES = torch.tensor([[1, 5, 6, 7, 2, 0], [1, 8, 2, 0, 0, 0], [1, 0, 0, 0, 0, 0]])


def test_next_token_batch_shifts_by_one():
    inputs, labels = language_model_batch(SENTENCES, "next")
    assert torch.equal(inputs, SENTENCES[:, :-1])
    assert labels.tolist() == [[5, 6, 7, 2, IGNORE], [8, 2, IGNORE, IGNORE, IGNORE], [IGNORE] * 5]


def test_one_position_batch_scores_one_real_position_per_sentence():
    seen = set()
    for seed in range(40):
        inputs, labels = language_model_batch(SENTENCES, "one", generator=torch.Generator().manual_seed(seed))
        assert torch.equal(inputs, SENTENCES[:, :-1])
        scored = labels != IGNORE
        assert scored.sum(1).tolist() == [1, 1, 0]  # the last sentence has nothing to predict
        _, next_labels = language_model_batch(SENTENCES, "next")
        assert torch.equal(labels[scored], next_labels[scored])
        seen.add(int(scored[0].nonzero()))
    assert seen == {0, 1, 2, 3}  # every real position of the first sentence gets drawn


def test_masked_batch_is_bert_masking():
    g = torch.Generator().manual_seed(4)
    inputs, labels = language_model_batch(SENTENCES, "masked", mask=9, vocab_size=10, generator=g)
    expected = mask_tokens(SENTENCES, 9, 10, generator=torch.Generator().manual_seed(4))
    assert torch.equal(inputs, expected[0]) and torch.equal(labels, expected[1])
    assert inputs.shape == SENTENCES.shape  # nothing shifted
    for kwargs in ({}, {"mask": 9}, {"vocab_size": 10}):
        with pytest.raises(ValueError, match="the masked objective needs the id of the mask token and the vocab"):
            language_model_batch(SENTENCES, "masked", **kwargs)


@pytest.mark.parametrize("objective", ["prev", "Next", "", None])
def test_unknown_objective(objective):
    assert OBJECTIVES == ("next", "one", "masked")
    with pytest.raises(ValueError, match=r"objective must be one of \('next', 'one', 'masked'\), got"):
        language_model_batch(SENTENCES, objective)


def test_token_losses_are_each_predictions_cross_entropy(corpus):
    model = tiny_lm(len(corpus.vocab), seed=1)
    tokens = corpus.test[:6]
    losses = token_losses(model, tokens)
    assert losses.shape == (6, tokens.shape[1] - 1)
    with torch.no_grad():
        log_p = model(tokens[:, :-1]).logits.log_softmax(-1)
    for n in range(6):
        for t in range(tokens.shape[1] - 1):
            target = int(tokens[n, t + 1])
            expected = 0.0 if target == 0 else -float(log_p[n, t, target])
            assert math.isclose(float(losses[n, t]), expected, rel_tol=1e-5, abs_tol=1e-6)
    assert (losses[tokens[:, 1:] == 0] == 0).all() and (losses[tokens[:, 1:] != 0] > 0).all()


# ---------------------------------------------------------------- train_language_model


def test_a_tiny_causal_model_learns_the_next_word(corpus):
    model = tiny_lm(len(corpus.vocab), seed=0)
    valid = corpus.test
    before = token_losses(model, valid)[valid[:, 1:] != 0].mean()
    _, history = train_language_model(model, corpus.train, "next", 60, batch_size=32, lr=1e-2, every=30,
                                      valid=valid, progress=False)  # fmt: skip
    assert len(history.loss) == 60 and [c["step"] for c in history.checkpoints] == [30, 60]
    last = history.checkpoints[-1]
    assert last["token_loss"].shape == (N_TEST, valid.shape[1] - 1)
    assert math.isclose(last["next_loss"], float(last["token_loss"][valid[:, 1:] != 0].mean()), rel_tol=1e-5)
    assert last["next_loss"] < 0.7 * float(before), (float(before), last["next_loss"])
    assert "masked_loss" not in last


def test_a_builder_trains_the_model_a_module_built_under_the_seed_would_be(corpus):
    config = LanguageModelConfig(len(corpus.vocab), d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0,
                                 max_len=24)  # fmt: skip
    kwargs = dict(batch_size=16, every=10, valid=corpus.test, seed=3, progress=False)
    model, history = train_language_model(partial(LanguageModel, config), corpus.train, "next", 20, **kwargs)
    with seeded(3):
        here = LanguageModel(config)
    _, here_history = train_language_model(here, corpus.train, "next", 20, **kwargs)
    assert history.loss == here_history.loss
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), here.state_dict().values(), strict=True))
    with pytest.raises(ValueError, match="model must be a module or a function that builds one, got 3"):
        train_language_model(3, corpus.train, "next", 5, progress=False)


def test_a_tiny_bidirectional_model_trains_on_masked_words_deterministically(corpus):
    def run():
        model = tiny_lm(len(corpus.vocab), causal=False, seed=2)
        return train_language_model(model, corpus.train, "masked", 20, mask=corpus.mask, batch_size=16,
                                    every=10, valid=corpus.test, progress=False).history  # fmt: skip

    first, second = run(), run()
    assert first.loss == second.loss
    assert [c["masked_loss"] for c in first.checkpoints] == [c["masked_loss"] for c in second.checkpoints]
    assert len(first.checkpoints) == 2 and all(math.isfinite(c["masked_loss"]) for c in first.checkpoints)
    assert "next_loss" not in first.checkpoints[-1]
    model = tiny_lm(len(corpus.vocab), causal=False)
    with pytest.raises(ValueError, match="the masked objective needs the id of the mask token"):
        train_language_model(model, corpus.train, "masked", 5, progress=False)  # no mask=
    with pytest.raises(ValueError, match="objective must be one of"):
        train_language_model(model, corpus.train, "fill", 5, progress=False)


# ---------------------------------------------------------------- causal models only, and the training mode


def test_next_token_objectives_refuse_a_bidirectional_model(corpus):
    with seeded(0):
        model = LanguageModel(LanguageModelConfig(len(corpus.vocab), d_model=8, num_heads=2, num_layers=1, d_ff=8,
                                                  causal=False))  # fmt: skip
    for call in (
        lambda: train_language_model(model, corpus.train, "next", 1, progress=False),
        lambda: language_model_loss(model, corpus.test, "one"),
        lambda: token_losses(model, corpus.test),
    ):
        with pytest.raises(ValueError, match="needs a causal model"):
            call()


def test_evaluation_restores_the_training_mode(corpus):
    with seeded(0):
        model = LanguageModel(LanguageModelConfig(len(corpus.vocab), d_model=8, num_heads=2, num_layers=1, d_ff=8))
    model.train()
    token_losses(model, corpus.test[:4])
    fill_in(model, corpus.test[:4])
    language_model_loss(model, corpus.test[:4], "next")
    assert model.training
