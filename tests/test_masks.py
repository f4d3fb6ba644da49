import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import attn
from attn.masks import global_tokens_mask, receptive_field, sliding_window_mask, strided_mask


def test_causal_mask_is_lower_triangular_and_true_means_may_attend():
    m = attn.causal_mask(4)
    assert m.dtype == torch.bool
    assert torch.equal(m, torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]], dtype=torch.bool))


def test_causal_mask_is_the_opposite_of_torch_multihead_convention():
    torch_mask = torch.nn.Transformer.generate_square_subsequent_mask(5)  # float, -inf = masked
    assert torch.equal(attn.causal_mask(5), torch_mask == 0)


@pytest.mark.parametrize("T", [0, -1, 2.0, True, "3"])
def test_causal_mask_rejects_bad_length(T):
    with pytest.raises(ValueError, match="T must be a positive int"):
        attn.causal_mask(T)


def test_padding_mask():
    m = attn.padding_mask(torch.tensor([3, 1, 0]), 4)
    expected = torch.tensor([[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=torch.bool)
    assert torch.equal(m, expected)
    assert torch.equal(attn.padding_mask([2, 4]), torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.bool))


def test_padding_mask_bad_input():
    with pytest.raises(ValueError, match=r"lengths must be <= T=2, got a length of 3"):
        attn.padding_mask([3, 1], 2)
    with pytest.raises(ValueError, match=r"lengths must be >= 0"):
        attn.padding_mask([-1, 1], 2)
    with pytest.raises(ValueError, match=r"1-D tensor of ints.*float32.*\(2, 1\)"):
        attn.padding_mask(torch.ones(2, 1), 2)


# ---------------------------------------------------------------------------------------- sparse patterns


def _bool(rows):
    return torch.tensor(rows, dtype=torch.bool)


def test_sliding_window_mask_small_examples():
    assert torch.equal(
        sliding_window_mask(4, 2),
        _bool([[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]),
    )
    assert torch.equal(
        sliding_window_mask(4, 2, causal=False),
        _bool([[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]]),
    )
    assert torch.equal(sliding_window_mask(3, 1), torch.eye(3, dtype=torch.bool))
    assert sliding_window_mask(3, 2).dtype == torch.bool


def test_strided_mask_small_examples():
    # T=6, stride=2: j <= i with (i - j) even, or i - j < 2
    assert torch.equal(
        strided_mask(6, 2, local=False),
        _bool([[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [1, 0, 1, 0, 0, 0], [0, 1, 0, 1, 0, 0],
               [1, 0, 1, 0, 1, 0], [0, 1, 0, 1, 0, 1]]),
    )  # fmt: skip
    assert torch.equal(
        strided_mask(5, 3),
        _bool([[1, 0, 0, 0, 0], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [0, 1, 1, 1, 1]]),
    )
    assert torch.equal(strided_mask(5, 1, local=False), attn.causal_mask(5))


def test_global_tokens_mask_small_example_and_combination():
    g = global_tokens_mask(4, [0])
    assert torch.equal(g, _bool([[1, 1, 1, 1], [1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]]))
    longformer = sliding_window_mask(4, 1, causal=False) | global_tokens_mask(4, torch.tensor([3]))
    assert torch.equal(longformer, _bool([[1, 0, 0, 1], [0, 1, 0, 1], [0, 0, 1, 1], [1, 1, 1, 1]]))
    assert not global_tokens_mask(3, []).any()


@given(T=st.integers(1, 24), window=st.integers(1, 30))
def test_sliding_window_properties(T, window):
    m = sliding_window_mask(T, window)
    assert m.shape == (T, T) and m.dtype == torch.bool
    assert m.diagonal().all()  # every row has at least one True: itself
    assert not (m & ~attn.causal_mask(T)).any()  # within the causal mask
    rows = torch.arange(T)
    assert torch.equal(m.sum(-1), torch.clamp(rows + 1, max=window))  # min(i + 1, window) keys per row
    if window >= T:
        assert torch.equal(m, attn.causal_mask(T))
    both = sliding_window_mask(T, window, causal=False)
    assert torch.equal(both, both.T) and torch.equal(both & attn.causal_mask(T), m)


@given(T=st.integers(1, 24), stride=st.integers(1, 30))
def test_strided_mask_properties(T, stride):
    m, strided = strided_mask(T, stride), strided_mask(T, stride, local=False)
    assert m.diagonal().all() and strided.diagonal().all()
    assert not (m & ~attn.causal_mask(T)).any()
    assert not (sliding_window_mask(T, stride) & ~m).any()  # the local part covers the window of size stride
    assert torch.equal(m, strided | sliding_window_mask(T, stride))
    i, j = torch.nonzero(strided, as_tuple=True)
    assert bool(((i - j) % stride == 0).all())


@given(T=st.integers(1, 20), data=st.data())
def test_global_tokens_properties(T, data):
    tokens = data.draw(st.lists(st.integers(0, T - 1), max_size=4))
    g = global_tokens_mask(T, tokens)
    assert g.shape == (T, T) and torch.equal(g, g.T)
    for t in tokens:
        assert g[t].all() and g[:, t].all()
    others = [i for i in range(T) if i not in tokens]
    assert not g[others][:, others].any()


def test_receptive_field_small_example():
    m = sliding_window_mask(5, 2)
    assert torch.equal(receptive_field(m, 0), torch.eye(5, dtype=torch.bool))
    assert torch.equal(receptive_field(m, 1), m)
    assert torch.equal(receptive_field(m, 2), sliding_window_mask(5, 3))
    # Child et al.: the two factorised heads, one layer each, reach every earlier position
    local, strided = sliding_window_mask(9, 3), strided_mask(9, 3, local=False)
    assert torch.equal((local.float() @ strided.float()) > 0, attn.causal_mask(9))


@given(T=st.integers(1, 20), window=st.integers(1, 6), layers=st.integers(0, 5))
def test_receptive_field_of_a_sliding_window_grows_by_window_minus_one_per_layer(T, window, layers):
    reach = receptive_field(sliding_window_mask(T, window), layers)
    assert torch.equal(reach, sliding_window_mask(T, layers * (window - 1) + 1))


def test_receptive_field_is_batched():
    masks = torch.stack([sliding_window_mask(6, 2), strided_mask(6, 2)])  # (2, T, T)
    reach = receptive_field(masks, 3)
    assert torch.equal(reach[0], receptive_field(masks[0], 3)) and torch.equal(reach[1], receptive_field(masks[1], 3))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sliding_window_mask(0, 2), "T must be a positive int, got 0"),
        (lambda: sliding_window_mask(4, 0), "window must be a positive int, got 0"),
        (lambda: sliding_window_mask(4, 1.5), "window must be a positive int, got 1.5"),
        (lambda: sliding_window_mask(4, 2, causal="yes"), "causal must be a bool, got 'yes'"),
        (lambda: strided_mask(4, -1), "stride must be a positive int, got -1"),
        (lambda: strided_mask(4, True), "stride must be a positive int, got True"),
        (lambda: strided_mask(4, 2, local=1), "local must be a bool, got 1"),
        (lambda: global_tokens_mask(4, [4]), r"tokens must be positions in \[0, 3\] for T=4, got \[4\]"),
        (lambda: global_tokens_mask(4, [-1]), r"tokens must be positions in \[0, 3\]"),
        (lambda: global_tokens_mask(4, torch.ones(2)), r"tokens must be a 1-D tensor of ints.*float32.*\(2,\)"),
        (lambda: global_tokens_mask(4, "a"), "tokens must be a 1-D tensor or sequence of int positions"),
        (lambda: receptive_field(torch.ones(3, 3), 1), "mask must be a bool torch.Tensor.*float32"),
        (lambda: receptive_field(torch.ones(3, 2, dtype=torch.bool), 1), r"mask must be square.*\(3, 2\)"),
        (lambda: receptive_field(attn.causal_mask(3), -1), "layers must be an int >= 0, got -1"),
    ],
)
def test_sparse_masks_bad_input(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_receptive_field_keeps_the_residual_path():
    """A position always keeps what it has (the residual connection), even under a mask without the diagonal: a
    global token alone gives every position itself and token 0 after one layer."""
    reach = attn.masks.receptive_field(attn.masks.global_tokens_mask(5, [0]), 1)
    expected = torch.eye(5, dtype=torch.bool) | attn.masks.global_tokens_mask(5, [0])
    assert torch.equal(reach, expected)
