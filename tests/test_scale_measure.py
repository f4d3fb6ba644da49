"""peak_tensor_bytes: the bytes of the tensors a computation holds at its peak, counted tensor by tensor."""

import torch

import attn
from attn.scale.measures import elements_written, peak_tensor_bytes


def test_one_new_tensor_is_counted_once_with_its_views():
    x = torch.ones(100, 10)
    result, peak = peak_tensor_bytes(lambda: (x * 2).view(10, 100).T)
    assert peak == 100 * 10 * 4  # one float32 storage; the view and the transpose share it
    assert result.shape == (100, 10)


def test_inputs_are_not_counted_and_freed_tensors_are_subtracted():
    x = torch.ones(1000)

    def two_in_turn():
        a = x + 1  # 4,000 bytes
        del a
        b = x + 2  # 4,000 bytes, after a was freed
        return b

    _, peak = peak_tensor_bytes(two_in_turn)
    assert peak == 4000

    def two_together():
        a = x + 1
        b = x + 2
        return a + b

    _, peak = peak_tensor_bytes(two_together)
    assert peak == 3 * 4000


def test_attention_holds_scores_and_weights_and_grows_as_t_squared():
    peaks = []
    for T in (64, 128):
        x = torch.randn(1, T, 8)
        with torch.no_grad():
            _, peak = peak_tensor_bytes(lambda x=x: attn.scaled_dot_product_attention(x, x, x))
        peaks.append(peak)
        assert peak >= 2 * T * T * 4  # the scores and the weights, alive together
    assert peaks[1] > 3.5 * peaks[0]


def test_the_same_on_a_second_call():
    x = torch.randn(1, 50, 8)
    runs = [peak_tensor_bytes(lambda: attn.scaled_dot_product_attention(x, x, x))[1] for _ in range(2)]
    assert runs[0] == runs[1]


def test_elements_written_adds_up_every_operator_output():
    x = torch.ones(10, 3)
    result, count = elements_written(lambda: (x * 2).sum(0))
    assert count == 30 + 3 and result.shape == (3,)


def test_elements_written_tells_a_recurrence_from_a_t_by_t_matrix():
    from attn.scale.linear import causal_linear_attention, recurrent_linear_attention

    work = {}
    for T in (64, 256):
        q = torch.randn(T, 4, dtype=torch.float64)
        work["masked", T] = elements_written(lambda q=q: causal_linear_attention(q, q, q))[1]
        work["recurrent", T] = elements_written(lambda q=q: recurrent_linear_attention(q, q, q))[1]
    assert work["masked", 256] / work["masked", 64] > 12  # O(T²): 16x for 4x the length
    assert work["recurrent", 256] / work["recurrent", 64] < 4.5  # O(T): 4x
