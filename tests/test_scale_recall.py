"""The training-free associative-recall measure of chapter 12 (attn.scale.recall): what each memory returns."""

import pytest

from attn.scale.recall import GRIDS, KNOBS, MEMORIES, associative_recall, best_setting


def mean_recall(memory, N, d_k=16, seeds=range(10), **kwargs):
    return sum(associative_recall(memory, N, d_k, seed=s, **kwargs) for s in seeds) / len(seeds)


def test_recall_is_deterministic_and_a_fraction():
    for memory in MEMORIES:
        first = associative_recall(memory, 12, 8, seed=3, writes=2)
        assert first == associative_recall(memory, 12, 8, seed=3, writes=2) and 0.0 <= first <= 1.0


def test_one_pair_is_always_recalled_by_every_memory():
    for memory in MEMORIES:
        assert all(associative_recall(memory, 1, 8, seed=s) == 1.0 for s in range(5))


def test_softmax_keeps_every_key_and_linear_attention_runs_out_of_room():
    # measured over 10 seeds, d_k = 16: softmax 0.98 at N = 64; linear 1.0 at N = 4, 0.59 at N = 32, 0.31 at 64
    assert mean_recall("softmax", 64) >= 0.9
    assert mean_recall("linear", 4) >= 0.95
    assert mean_recall("linear", 32) <= 0.75 and mean_recall("linear", 64) <= 0.45


def test_positive_features_interfere_even_with_few_keys():
    # elu + 1 features are all positive, so every pair of keys overlaps: measured 0.60 at N = 4 with the inputs
    # as drawn; scaled up (the knob), φ(c k) / c tends to relu(k), sparser: 0.90 at N = 4, still about 0.4 at N = 16
    assert mean_recall("linear-elu", 4) <= 0.8 < mean_recall("linear", 4)
    scaled = {c: mean_recall("linear-elu", 4, scale=c) for c in (4.0, 64.0)}
    assert min(scaled.values()) - mean_recall("linear-elu", 4) >= 0.15
    assert mean_recall("linear-elu", 16, scale=64.0) <= 0.5 < mean_recall("linear", 16)


def test_the_input_scale_of_elu_is_searched_like_the_other_knobs():
    # the plain setting first; the search picks a larger scale on held-out seeds (measured 0.93 at N = 4)
    assert GRIDS["linear-elu"][0] == {"scale": 1.0} and len(GRIDS["linear-elu"]) == len(GRIDS["linear"])
    setting, mean = best_setting("linear-elu", 4, 16, GRIDS["linear-elu"], seeds=range(100, 110))
    assert setting["scale"] > 1.0 and mean >= 0.85
    # the scale multiplies keys and queries alike: scaling the drawn keys is what it does, and no other memory reads it
    for memory in ("softmax", "linear", "delta"):
        assert associative_recall(memory, 8, 8, seed=1, scale=16.0) == associative_recall(memory, 8, 8, seed=1)


def test_the_delta_rule_replaces_a_rewritten_value_where_sums_keep_both():
    # measured, keys written twice: delta 0.95, linear 0.45, softmax without a recency bias 0.50 at N = 4
    for writes in (2, 3):
        delta = mean_recall("delta", 4, writes=writes)
        assert delta >= 0.9
        for memory in ("linear", "softmax"):
            assert delta - mean_recall(memory, 4, writes=writes) >= 0.3


def test_a_recency_bias_lets_softmax_attention_read_the_latest_write():
    # measured over 10 seeds, keys written twice, N = 16: 0.49 without the bias, 0.99 with recency 1
    assert mean_recall("softmax", 16, writes=2, recency=1.0) >= 0.95
    assert mean_recall("softmax", 16, writes=2) <= 0.6
    # a bias toward recent writes changes nothing when every key is written once
    for s in range(3):
        assert associative_recall("softmax", 16, 16, seed=s) == associative_recall(
            "softmax", 16, 16, seed=s, recency=4.0
        )


def test_orthonormal_like_keys_make_the_delta_rule_exact():
    # d_k much larger than N: random keys are nearly orthogonal, every memory is right, the delta rule after rewrites
    assert mean_recall("delta", 4, d_k=512, writes=3, seeds=range(3)) == 1.0


def test_a_decayed_sum_recalls_rewritten_keys_and_a_searched_beta_beats_it_beyond_a_few_pairs():
    # measured over 10 seeds, keys written twice: plain sum 0.45, decay 0.85: 0.97, delta 0.97 at N = 4;
    # N = 16: decay 0.95: 0.68, delta with beta 0.5: 0.74, delta with beta 1: 0.61
    assert mean_recall("linear", 4, writes=2, decay=0.85) - mean_recall("linear", 4, writes=2) >= 0.4
    assert abs(mean_recall("linear", 4, writes=2, decay=0.85) - mean_recall("delta", 4, writes=2)) <= 0.05
    assert mean_recall("delta", 16, writes=2, beta=0.5) - mean_recall("linear", 16, writes=2, decay=0.95) >= 0.03
    assert mean_recall("delta", 16, writes=2, beta=0.5) - mean_recall("delta", 16, writes=2) >= 0.08


def test_knobs_are_read_only_by_their_memory():
    for memory in MEMORIES:
        plain = associative_recall(memory, 8, 8, seed=1, writes=2)
        for knob, value in (("decay", 0.5), ("beta", 0.5), ("recency", 2.0), ("scale", 16.0)):
            changed = associative_recall(memory, 8, 8, seed=1, writes=2, **{knob: value})
            if knob not in KNOBS[memory]:
                assert changed == plain, (memory, knob)


def test_best_setting_picks_the_highest_mean_on_the_given_seeds():
    grid = [{"decay": g} for g in (1.0, 0.9, 0.5)]
    setting, mean = best_setting("linear", 4, 16, grid, seeds=range(100, 105), writes=2)
    means = [mean_recall("linear", 4, seeds=range(100, 105), writes=2, **s) for s in grid]
    assert mean == max(means) and setting == grid[means.index(max(means))]
    assert best_setting("delta", 2, 8, [{"beta": 1.0}, {"beta": 1.0}], seeds=range(2))[0] is not None
    with pytest.raises(ValueError, match=r"grid settings of 'delta' may set \('beta',\), got \{'decay': 0.5\}"):
        best_setting("delta", 4, 8, [{"decay": 0.5}], seeds=range(2))
    with pytest.raises(ValueError, match="grid must hold at least one setting"):
        best_setting("delta", 4, 8, [], seeds=range(2))
    with pytest.raises(ValueError, match="seeds must hold at least one seed"):
        best_setting("delta", 4, 8, [{}], seeds=range(0))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"memory": "lstm"}, r"memory must be one of \('softmax', 'linear', 'linear-elu', 'delta'\), got 'lstm'"),
        ({"num_pairs": 0}, "num_pairs must be a positive int, got 0"),
        ({"d_k": 2.0}, "d_k must be a positive int, got 2.0"),
        ({"writes": 0}, "writes must be a positive int, got 0"),
        ({"sharpness": 0}, "sharpness must be a positive"),
        ({"scale": -2.0}, "scale must be a positive finite number, got -2.0"),
        ({"seed": None}, "seed must be an int, got None"),
        ({"recency": -1.0}, "recency must be a finite number >= 0, got -1.0"),
        ({"decay": 0.0}, r"decay must be a number in \(0, 1\], got 0.0"),
        ({"beta": 1.5}, r"beta must be a number in \(0, 1\], got 1.5"),
    ],
)
def test_bad_input(kwargs, message):
    args = {"memory": "delta", "num_pairs": 4, "d_k": 4, "seed": 0, **kwargs}
    with pytest.raises(ValueError, match=message):
        associative_recall(args.pop("memory"), args.pop("num_pairs"), args.pop("d_k"), **args)
