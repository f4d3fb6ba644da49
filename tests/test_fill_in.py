"""Filling in a blanked word (chapter 10): fill_in (a causal model from the left, a masked model from both sides)
and fill_in_by_likelihood (a causal model scoring each candidate by the whole sentence's likelihood), checked
against brute force: every candidate written into the sentence and the sentence scored in one plain forward pass;
and fill_in with tiny models on the text corpus."""

import pytest
import torch
from tiny_models import tiny_lm

from attn.data.sequences import IGNORE
from attn.training import seeded
from attn.transformer import LanguageModel, LanguageModelConfig, fill_in, token_losses
from attn.transformer.measures import fill_in_by_likelihood

V = 13  # ids 0-3 special, 4-12 words


def model(causal: bool = True, seed: int = 0, num_kv_heads: int | None = None) -> LanguageModel:
    config = LanguageModelConfig(V, d_model=16, num_heads=4, num_layers=2, d_ff=32, dropout=0.1, max_len=12,
                                 causal=causal, num_kv_heads=num_kv_heads)  # fmt: skip
    with seeded(seed):
        return LanguageModel(config)


def sentences(seed: int = 0, N: int = 6, T: int = 9) -> torch.Tensor:
    """``(N, T)``: <bos>, words, <eos>, padding; lengths from 3 to T (one sentence fills every column)."""
    g = torch.Generator().manual_seed(seed)
    tokens = torch.zeros(N, T, dtype=torch.long)
    lengths = torch.randint(3, T + 1, (N,), generator=g)
    lengths[0] = T
    for i, L in enumerate(lengths.tolist()):
        tokens[i, 0], tokens[i, L - 1] = 1, 2
        tokens[i, 1 : L - 1] = torch.randint(4, V, (L - 2,), generator=g)
    return tokens


def brute_force(lm: LanguageModel, tokens: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
    """``(N, T, C)``: each candidate written at each position, the whole sentence's log-likelihood from a plain
    forward pass (minus the sum of its next-token cross-entropies); -inf where nothing is filled in."""
    N, T = tokens.shape
    out = torch.full((N, T, len(candidates)), -torch.inf)
    for i in range(N):
        for t in range(1, T):
            if tokens[i, t] == 0:
                continue
            for j, c in enumerate(candidates.tolist()):
                filled = tokens[i : i + 1].clone()
                filled[0, t] = c
                out[i, t, j] = -token_losses(lm, filled).sum()
    return out


@pytest.mark.parametrize(("seed", "batch_size", "num_kv_heads"), [(0, 1024, None), (1, 5, None), (2, 1, 2)])
def test_fill_in_by_likelihood_is_the_brute_force_argmax(seed, batch_size, num_kv_heads):
    lm = model(seed=seed, num_kv_heads=num_kv_heads)
    lm.train()  # dropout on: the function must evaluate without it, and leave the mode as it was
    tokens = sentences(seed)
    candidates = torch.tensor([4, 7, 2, 12, 9])  # any ids but padding, <eos> included, in any order
    guesses, scores = fill_in_by_likelihood(lm, tokens, candidates, batch_size=batch_size)
    assert lm.training
    lm.eval()
    expected = brute_force(lm, tokens, candidates)
    filled = tokens != 0
    filled[:, 0] = False
    assert scores.shape == (*tokens.shape, len(candidates))
    assert torch.equal(scores.isfinite(), filled[..., None].expand_as(scores))
    torch.testing.assert_close(scores[filled], expected[filled], atol=1e-4, rtol=1e-5)
    assert torch.equal(guesses == IGNORE, ~filled)
    top2 = expected[filled].topk(2, -1).values
    clear = top2[:, 0] - top2[:, 1] > 1e-3  # no near-ties
    assert clear.float().mean() > 0.9
    assert torch.equal(guesses[filled][clear], candidates[expected[filled].argmax(-1)][clear])


def test_fill_in_by_likelihood_reads_the_right_context_that_fill_in_cannot():
    """Change only the words right of a blank: fill_in's guess (left context) cannot change, the likelihood's can."""
    lm = model(seed=3)
    tokens = sentences(3, N=40)
    candidates = torch.arange(4, V)
    other = tokens.clone()
    other[:, 2:] = torch.where(tokens[:, 2:] >= 4, torch.randint(4, V, tokens[:, 2:].shape), tokens[:, 2:])
    left = fill_in(lm, tokens)[:, 1], fill_in(lm, other)[:, 1]
    both = fill_in_by_likelihood(lm, tokens, candidates)[0][:, 1], fill_in_by_likelihood(lm, other, candidates)[0][:, 1]
    assert torch.equal(*left)
    assert not torch.equal(*both)


def test_fill_in_guesses_are_the_argmax_of_one_pass_per_side():
    """fill_in: a causal model's guess at t is its output at t - 1; a masked model's is its output at t with the
    word there replaced by the mask (one pass per position), checked one sentence and one position at a time."""
    tokens = sentences(4)
    gpt, bert = model(seed=4), model(causal=False, seed=5)
    mask = 12
    left, masked = fill_in(gpt, tokens), fill_in(bert, tokens, mask)
    gpt.eval()
    bert.eval()
    with torch.no_grad():
        for i in range(len(tokens)):
            for t in range(1, tokens.shape[1]):
                if tokens[i, t] == 0:
                    assert left[i, t] == masked[i, t] == IGNORE
                    continue
                assert left[i, t] == gpt(tokens[i : i + 1, :t]).logits[0, -1].argmax()
                blanked = tokens[i : i + 1].clone()
                blanked[0, t] = mask
                assert masked[i, t] == bert(blanked).logits[0, t].argmax()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"candidates": torch.tensor([[4, 5]])}, "candidates must be a non-empty"),
        ({"candidates": torch.tensor([], dtype=torch.long)}, "candidates must be a non-empty"),
        ({"candidates": torch.tensor([4, V])}, "candidates holds ids"),
        ({"candidates": torch.tensor([0, 4])}, "padding"),
        ({"candidates": [4, 5]}, "candidates must be a non-empty"),
        ({"batch_size": 0}, "batch_size"),
        ({"tokens": torch.tensor([[1, 4, V]])}, "tokens holds ids"),
    ],
)
def test_fill_in_by_likelihood_rejects_bad_arguments(kwargs, message):
    arguments = {"tokens": sentences(), "candidates": torch.tensor([4, 5]), **kwargs}
    with pytest.raises(ValueError, match=message):
        fill_in_by_likelihood(model(), **arguments)


def test_fill_in_by_likelihood_needs_a_causal_model():
    with pytest.raises(ValueError, match="causal"):
        fill_in_by_likelihood(model(causal=False), sentences(), torch.tensor([4, 5]))


# ---------------------------------------------------------------- fill_in on the text corpus


def test_fill_in_with_a_causal_model_reads_the_words_on_the_left(corpus):
    model = tiny_lm(len(corpus.vocab), seed=3)
    tokens = corpus.test[:5]
    guesses = fill_in(model, tokens)
    assert guesses.shape == tokens.shape
    first = torch.arange(tokens.shape[1]) == 0
    assert torch.equal(guesses == IGNORE, (tokens == 0) | first)  # padding and <bos> are not guessed
    with torch.no_grad():
        expected = model(tokens[:, :-1]).logits.argmax(-1)
        real = tokens[:, 1:] != 0
        assert torch.equal(guesses[:, 1:][real], expected[real])
        t = 4
        alone = model(tokens[:, :t]).logits[:, -1].argmax(-1)  # only the prefix
        assert torch.equal(guesses[:, t][tokens[:, t] != 0], alone[tokens[:, t] != 0])


def test_fill_in_with_a_bidirectional_model_masks_one_word_at_a_time(corpus):
    model = tiny_lm(len(corpus.vocab), causal=False, seed=4)
    tokens = corpus.test[:4]
    guesses = fill_in(model, tokens, mask=corpus.mask)
    assert (guesses[:, 0] == IGNORE).all() and (guesses[tokens == 0] == IGNORE).all()
    with torch.no_grad():
        for t in (1, 3, tokens.shape[1] - 1):
            blanked = tokens.clone()
            blanked[:, t] = corpus.mask
            expected = model(blanked).logits[:, t].argmax(-1)
            real = tokens[:, t] != 0
            assert torch.equal(guesses[real, t], expected[real])
    assert not torch.equal(guesses, fill_in(model, tokens, mask=4))  # the mask id matters
    with pytest.raises(ValueError, match=r"a bidirectional model needs the id of the mask token \(mask=...\)"):
        fill_in(model, tokens)
