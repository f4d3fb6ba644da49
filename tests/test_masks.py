import pytest
import torch

import attn


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
