"""Attention vs a fixed linear mix vs a convolution: the three mixing matrices and the tagger around them."""

import pytest
import torch

from attn.data.sequences import lookup_tokens, tagging_task
from attn.training import seeded
from attn.transformer import tagging_accuracy, train_tagger
from attn.transformer.mixers import MixerTagger, TokenMixer
from attn.transformer.train import train_mixer_tagger


@pytest.mark.parametrize("kind", ["attention", "linear"])
def test_mixer_output_is_its_matrix_times_the_values(kind):
    torch.manual_seed(0)
    mixer = TokenMixer(kind, d_model=8, max_len=6)
    x = torch.randn(2, 5, 8)
    y, W = mixer(x)
    assert y.shape == (2, 5, 8) and W.shape == (2, 5, 5)
    assert torch.allclose(y, mixer.W_o(W @ mixer.W_v(x)), atol=1e-6)


def test_attention_mixing_depends_on_the_input_and_the_linear_one_does_not():
    torch.manual_seed(0)
    x1, x2 = torch.randn(1, 5, 8), torch.randn(1, 5, 8)
    attention = TokenMixer("attention", 8, 6)
    assert not torch.allclose(attention.mixing(x1), attention.mixing(x2))
    assert torch.allclose(attention.mixing(x1).sum(-1), torch.ones(1, 5))
    linear = TokenMixer("linear", 8, 6)
    assert torch.equal(linear.mixing(x1), linear.mixing(x2))
    for kind in ("conv", "recurrent"):
        y, W = TokenMixer(kind, 8, 6)(x1)
        assert y.shape == (1, 5, 8) and W is None
        with pytest.raises(ValueError, match="no \\(T, T\\) mixing matrix"):
            TokenMixer(kind, 8, 6).mixing(x1)


def test_conv_mixer_is_a_convolution_over_d_channels_that_reaches_every_position():
    torch.manual_seed(2)
    mixer = TokenMixer("conv", 4, 7)
    assert tuple(mixer.conv.weight.shape) == (4, 4, 13)  # (d_out, d_in, 2 max_len - 1)
    x = torch.randn(3, 7, 4, requires_grad=True)  # (B, T, d)
    y, _ = mixer(x)
    # y_i = Σ_m x_{i+m} W_m + b, written out over the offsets m
    W, b = mixer.conv.weight.detach(), mixer.conv.bias.detach()  # (d, d, k), (d,)
    k = W.shape[-1] // 2
    expected = torch.zeros(3, 7, 4) + b
    for i in range(7):
        for j in range(7):
            expected[:, i] += x.detach()[:, j] @ W[:, :, j - i + k].T
    assert torch.allclose(y, mixer.W_o(expected), atol=1e-5)
    y[:, 0].sum().backward()  # the first output reads the last input: full reach in one layer
    assert bool(x.grad[:, -1].abs().sum() > 0)
    short = TokenMixer("conv", 4, 7, kernel_size=3)
    x = torch.randn(1, 7, 4, requires_grad=True)
    short(x)[0][:, 0].sum().backward()
    assert bool((x.grad[:, 2:] == 0).all()) and bool(x.grad[:, 1].abs().sum() > 0)


def test_recurrent_mixer_reads_both_directions():
    torch.manual_seed(3)
    mixer = TokenMixer("recurrent", 4, 6)
    x = torch.randn(2, 6, 4, requires_grad=True)
    y, _ = mixer(x)
    states, _ = mixer.rnn(x)
    assert torch.allclose(y, mixer.W_o(states)) and states.shape == (2, 6, 8)
    first, last = torch.autograd.grad(y[:, 0].sum(), x, retain_graph=True)[0], torch.autograd.grad(y[:, -1].sum(), x)[0]
    assert bool(first[:, -1].abs().sum() > 0) and bool(last[:, 0].abs().sum() > 0)
    # the forward half alone: a change at the end leaves the forward state at position 0 as it was
    changed = x.detach().clone()
    changed[:, -1] += 1.0
    assert torch.allclose(mixer.rnn(changed)[0][:, 0, :4], states[:, 0, :4])


def test_unscaled_mixer_with_the_scaled_start_computes_the_scaled_function():
    tokens = torch.randint(0, 11, (4, 6), generator=torch.Generator().manual_seed(1))
    with seeded(5):
        scaled = MixerTagger("attention", 11, 3, 6, d_k=64)
    with seeded(5):
        matched = MixerTagger("attention", 11, 3, 6, d_k=64, scaled=False, match_scaled_start=True)
    with seeded(5):
        unscaled = MixerTagger("attention", 11, 3, 6, d_k=64, scaled=False)
    assert torch.allclose(matched(tokens).logits, scaled(tokens).logits, atol=1e-5)
    assert torch.allclose(matched(tokens).mixing, scaled(tokens).mixing, atol=1e-6)
    assert not torch.allclose(unscaled(tokens).mixing, scaled(tokens).mixing, atol=1e-3)
    ratio = matched.mixer.W_q.weight / unscaled.mixer.W_q.weight
    assert torch.allclose(ratio, torch.full_like(ratio, 64**-0.25))


def test_mixers_refuse_bad_arguments():
    with pytest.raises(ValueError, match="kind must be one of"):
        TokenMixer("lstm", 8, 6)
    with pytest.raises(ValueError, match="kernel_size must be odd"):
        TokenMixer("conv", 8, 6, kernel_size=4)
    with pytest.raises(ValueError, match="kernel_size is an option of the conv mixer"):
        TokenMixer("recurrent", 8, 6, kernel_size=3)
    with pytest.raises(ValueError, match="max_len=6"):
        TokenMixer("recurrent", 8, 6)(torch.zeros(1, 7, 8))
    with pytest.raises(ValueError, match="for the unscaled mixer"):
        TokenMixer("attention", 8, 6, match_scaled_start=True)
    with pytest.raises(ValueError, match="match_scaled_start must be True or False"):
        TokenMixer("attention", 8, 6, scaled=False, match_scaled_start=1)
    with pytest.raises(ValueError, match="max_len=6"):
        TokenMixer("linear", 8, 6)(torch.zeros(1, 7, 8))
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, d_model=8\), got \(1, 7, 4\)"):
        TokenMixer("linear", 8, 6)(torch.zeros(1, 7, 4))
    with pytest.raises(ValueError, match="tokens holds ids"):
        MixerTagger("conv", 5, 3, 6)(torch.tensor([[1, 9]]))


def test_lookup_task_answers_are_on_the_matching_card():
    x, y = tagging_task("lookup", 50, 6, 7, seed=3)
    assert x.shape == y.shape == (50, 6)
    assert bool((y[:, :-1] == -100).all())
    for row, label in zip(x, y[:, -1], strict=True):
        names = lookup_tokens(row, 7)
        asked = names[-1][:-1]  # "k3?" -> "k3"
        cards = dict(name.split("=") for name in names[:-1])
        assert len(cards) == 5 and cards[asked] == str(int(label))
    with pytest.raises(ValueError, match="lookup needs 2 <= length <= num_symbols"):
        tagging_task("lookup", 5, 9, 7)
    with pytest.raises(ValueError, match="not a lookup token"):
        lookup_tokens(torch.tensor([0]), 7)


def test_count_neighbours_and_reverse_labels():
    x, y = tagging_task("count", 20, 7, 3, seed=0)
    assert torch.equal(y[0], torch.tensor([int((x[0] == t).sum()) for t in x[0]]))
    x, y = tagging_task("neighbours", 20, 6, 5, seed=1)
    assert y[0, 0] == -100 and y[0, -1] == -100
    assert int(y[0, 2]) == (int(x[0, 1]) - int(x[0, 3])) % 5
    x, y = tagging_task("reverse", 4, 5, 9, seed=2)
    assert torch.equal(y, x.flip(1)) and int(x.min()) >= 1 and int(x.max()) <= 9
    assert torch.equal(tagging_task("count", 5, 4, 3, seed=7)[0], tagging_task("count", 5, 4, 3, seed=7)[0])
    with pytest.raises(ValueError, match="task must be one of"):
        tagging_task("sort", 5)


def test_attention_learns_lookup_and_a_fixed_linear_mix_does_not():
    train = tagging_task("lookup", 8000, 10, 10, seed=0)  # nine cards: too many to untangle from a fixed mix
    test = tagging_task("lookup", 500, 10, 10, seed=1)
    accuracy = {}
    for kind in ("attention", "linear"):
        with seeded(0):
            model = MixerTagger(kind, 10 * 10 + 10 + 1, 10, 10, d_model=32, d_ff=64)
        train_tagger(model, *train, steps=400, progress=False)
        accuracy[kind] = tagging_accuracy(model, *test)
    assert accuracy["attention"] >= 0.8 and accuracy["attention"] > accuracy["linear"] + 0.2, accuracy


def test_train_tagger_refuses_mismatched_data():
    with pytest.raises(ValueError, match=r"inputs and labels must both be \(N, T\)"):
        inputs, labels = torch.ones(4, 3, dtype=torch.long), torch.ones(4, 2, dtype=torch.long)
        train_tagger(MixerTagger("conv", 5, 3, 6), inputs, labels)


def test_attention_mixing_is_the_scaled_softmax_of_its_projections():
    torch.manual_seed(1)
    mixer = TokenMixer("attention", 8, 6)
    x = torch.randn(2, 5, 8)
    q, k = mixer.W_q(x), mixer.W_k(x)
    expected = torch.softmax(q @ k.transpose(-2, -1) / 8**0.5, dim=-1)
    assert torch.allclose(mixer.mixing(x), expected, atol=1e-6)


def test_tagger_returns_logits_and_the_mixing_matrix():
    with seeded(0):
        model = MixerTagger("linear", 9, 4, 6)
    out = model(torch.tensor([[1, 2, 3], [4, 5, 6]]))
    assert out.logits.shape == (2, 3, 4) and out.mixing.shape == (2, 3, 3)
    assert torch.equal(out.mixing[0], model.mixer.W[:3, :3])


def test_attention_mixer_width_and_scale():
    torch.manual_seed(0)
    x = torch.randn(2, 5, 8)
    scaled, unscaled = TokenMixer("attention", 8, 6, d_k=64), TokenMixer("attention", 8, 6, d_k=64, scaled=False)
    unscaled.load_state_dict(scaled.state_dict())
    assert scaled.W_q.out_features == scaled.W_k.out_features == 64
    scores = scaled.W_q(x) @ scaled.W_k(x).transpose(-2, -1)  # (2, 5, 5)
    assert torch.allclose(scaled.mixing(x), torch.softmax(scores / 8.0, -1), atol=1e-6)
    assert torch.allclose(unscaled.mixing(x), torch.softmax(scores, -1), atol=1e-6)
    with pytest.raises(ValueError, match="options of the attention mixer"):
        TokenMixer("linear", 8, 6, d_k=16)
    with pytest.raises(ValueError, match="options of the attention mixer"):
        TokenMixer("conv", 8, 6, scaled=False)
    with pytest.raises(ValueError, match="options of the attention mixer"):
        TokenMixer("recurrent", 8, 6, match_scaled_start=True)
    with pytest.raises(ValueError, match="scaled must be True or False"):
        TokenMixer("attention", 8, 6, scaled=1)
    with pytest.raises(ValueError, match="d_k"):
        MixerTagger("attention", 5, 3, 6, d_k=0)


def test_default_attention_mixer_is_unchanged_by_the_options():
    with seeded(0):
        default = MixerTagger("attention", 11, 3, 6)
    with seeded(0):
        explicit = MixerTagger("attention", 11, 3, 6, d_k=32, scaled=True)
    tokens = torch.randint(0, 11, (4, 6), generator=torch.Generator().manual_seed(1))
    assert torch.equal(default(tokens).logits, explicit(tokens).logits)


def test_train_mixer_tagger_is_one_seeded_run():
    x, y = tagging_task("lookup", 300, 5, 4, seed=0)
    here = [
        train_mixer_tagger("attention", (x, y), 4**2 + 4 + 1, 4, steps=20, seed=s, valid=(x, y), every=10)
        for s in (0, 1)
    ]
    assert [c["step"] for c in here[0][1].checkpoints] == [10, 20]
    again = train_mixer_tagger("attention", (x, y), 21, 4, steps=20, seed=0, valid=(x, y), every=10)
    assert torch.equal(again[0](x).logits, here[0][0](x).logits)
    assert not torch.equal(here[1][0](x).logits, here[0][0](x).logits)
    assert 0 <= tagging_accuracy(here[0][0], x, y) <= 1
