"""attn.viz: the figures (heatmaps, bars, lookups, hops, images) and the widgets' panels (softmax, lookup,
translation, memory, addressing, scene, heads, sampling) on hand-made inputs, fake models and small real ones."""

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from panel_utils import shown  # noqa: E402
from tiny_models import tiny_lm  # noqa: E402

import attn  # noqa: E402
from attn.data.translation import Translation  # noqa: E402
from attn.memn2n import Answer  # noqa: E402
from attn.transformer.translate import sample_sentences  # noqa: E402
from attn.viz import bar_weights, heatmap, hop_heatmap, lookup_figure  # noqa: E402
from attn.viz.widgets import (  # noqa: E402
    addressing_panel,
    head_panel,
    lookup_panel,
    memory_panel,
    sampling_panel,
    scene_panel,
    softmax_panel,
    translation_panel,
)


def test_heatmap_labels_and_values():
    weights = torch.tensor([[0.25, 0.75], [1.0, 0.0], [0.5, 0.5]])
    ax = heatmap(weights, ["k1", "k2"], ["a", "b", "c"])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["k1", "k2"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a", "b", "c"]
    assert "0.75" in [t.get_text() for t in ax.texts]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("key", "query")
    ax = heatmap(weights, ["k1", "k2"], xlabel="English (source)", ylabel="German (target)", vmax=1.0)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("English (source)", "German (target)")
    assert ax.images[0].get_clim() == (0.0, 1.0)
    plt.close("all")


def test_heatmap_rejects_mismatched_tokens():
    with pytest.raises(ValueError, match=r"x_tokens has 3 labels but the weights have 2 columns"):
        heatmap(torch.ones(2, 2), ["a", "b", "c"], ["a", "b"])
    with pytest.raises(ValueError, match=r"weights must be 2-D"):
        heatmap(torch.ones(2, 2, 2))


def test_bar_and_lookup_figures():
    p = attn.softmax(torch.tensor([1.0, 2.0, 3.0]))
    assert len(bar_weights(p, ["a", "b", "c"]).patches) == 3
    keys = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]])
    ax = lookup_figure(keys, torch.tensor([1.0, 1.0]), p, p @ keys, ["a", "b", "c"])
    assert any("a\n" in t.get_text() for t in ax.texts)
    with pytest.raises(ValueError, match=r"keys must have shape \(M, 2\)"):
        lookup_figure(torch.ones(3, 3), torch.ones(2), p, torch.ones(2))
    plt.close("all")


def test_softmax_panel_redraws_when_the_slider_moves():
    panel = softmax_panel(torch.tensor([2.0, 1.0, 0.0]), ["x", "<y>", "z"])
    slider, readout, image = panel.children
    before = readout.value
    assert "&lt;y&gt;" in before  # labels are escaped
    assert shown(image)[1].startswith("Bar chart of softmax(x / 1.00): x 0.67, <y> 0.24, z 0.09")
    slider.value = 0.05
    assert readout.value != before and "1.000" in readout.value


def test_lookup_panel_follows_the_query():
    keys = torch.tensor([[2.0, 0.0], [0.0, 2.0]])
    panel = lookup_panel(keys, ["east", "north"], query=(1.0, 0.0))
    q_x, q_y, tau, readout, image = panel.children
    q_x.value, q_y.value = 0.0, 2.0
    weights = attn.softmax(keys @ torch.tensor([0.0, 2.0]))
    assert f"{weights[1].item():.3f}" in readout.value
    with pytest.raises(ValueError, match="one label per key"):
        lookup_panel(keys, ["only one"])


def test_bar_weights_gives_repeated_tokens_their_own_bar():
    ax = bar_weights(torch.tensor([0.2, 0.3, 0.5]), ["the", "cat", "the"])
    assert [p.get_x() + p.get_width() / 2 for p in ax.patches] == [0.0, 1.0, 2.0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["the", "cat", "the"]
    plt.close("all")


def test_panels_reject_what_they_cannot_show():
    with pytest.raises(ValueError, match=r"temperature must be a number in \[0.01, 100\]"):
        softmax_panel(torch.tensor([1.0, 2.0]), ["a", "b"], temperature=1000)
    with pytest.raises(ValueError, match="one label each"):
        softmax_panel(torch.tensor([1.0, 2.0]), None)
    with pytest.raises(ValueError, match=r"query must have 2 coordinates"):
        lookup_panel(torch.eye(2), ["a", "b"], query=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match=r"non-empty"):
        heatmap(torch.zeros(0, 3))


def test_lookup_panel_sliders_reach_the_query():
    q_x, q_y, *_ = lookup_panel(torch.eye(2), ["a", "b"], query=(5.0, -4.0)).children
    assert (q_x.value, q_y.value) == (5.0, -4.0)


def fake_translate(sentence):
    words = sentence.split()
    if not words:
        raise ValueError("the sentence is empty")
    target = [w.upper() for w in words]
    finished = "cut" not in words
    alignment = torch.eye(len(words) + 1)[: len(words) + finished]
    return Translation(words, target, finished, alignment, [w for w in words if w == "zebra"])


def test_translation_panel_shows_translation_unknown_words_and_errors():
    panel = translation_panel(fake_translate, ["the <b>dog</b>", "a zebra"])
    choose, text, readout, image = panel.children
    assert "THE &lt;B&gt;DOG&lt;/B&gt;" in readout.value and shown(image)[0]  # escaped
    alt = shown(image)[1]
    assert alt.startswith("Alignment heatmap, German translation (rows) by English source (columns)")
    assert "<B>DOG</B> → <b>dog</b> (1.00)" in alt  # each row's strongest link, in words
    assert 'alt="' in image.value and "<b>dog</b>" not in image.value  # escaped in the attribute
    choose.value = "a zebra"
    assert text.value == "a zebra" and "read as &lt;unk&gt;: zebra" in readout.value
    text.value = "a cut off sentence"
    assert "cut off: the model did not end the sentence" in readout.value and shown(image)[0]
    assert choose.value is None  # typed: the drop-down no longer shows an example
    choose.value = "a zebra"
    assert text.value == "a zebra" and choose.value == "a zebra"
    text.value = "   "
    assert "the sentence is empty" in readout.value and shown(image) == (b"", "", 0, 0)
    with pytest.raises(ValueError, match="examples must hold at least one sentence"):
        translation_panel(fake_translate, [])


def test_hop_heatmap_has_a_column_per_hop_and_marks_support():
    weights = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.1, 0.9]])  # (K=2, M=3)
    ax = hop_heatmap(weights, ["a b", "<c>", "d"], supporting=[2])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["hop 1", "hop 2"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a b", "<c>", "★ d"]
    assert "0.90" in [t.get_text() for t in ax.texts]
    with pytest.raises(ValueError, match=r"sentences has 2 labels but the weights have 3 memories"):
        hop_heatmap(weights, ["a", "b"])
    with pytest.raises(ValueError, match=r"supporting indices \[3\] are outside the 3 sentences"):
        hop_heatmap(weights, ["a", "b", "c"], supporting=[3])
    plt.close("all")


def test_addressing_panel_sharpens_with_the_slider():
    memory = torch.tensor([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])
    panel = addressing_panel(torch.tensor([1.0, 0.0]), memory, ["x", "<y>", "z"], strength=0.0)
    slider, readout, image = panel.children
    assert readout.value.count("0.333") == 3 and "&lt;y&gt;" in readout.value
    assert shown(image)[1] == "Bar chart of w = softmax(0 · cos(k, M_i)): x 0.33, <y> 0.33, z 0.33"
    slider.value = 50.0
    _, w = attn.content_addressing(torch.tensor([1.0, 0.0]), memory, 50.0)
    assert f"{w[0].item():.3f}" in readout.value and w[0] > 0.99
    with pytest.raises(ValueError, match=r"need key \(d,\), memory \(M, d\) and M labels"):
        addressing_panel(torch.ones(3), memory, ["x", "y", "z"])
    with pytest.raises(ValueError, match=r"strength must be a number in \[0, 50\]"):
        addressing_panel(torch.ones(2), memory, ["x", "y", "z"], strength=-1)


def test_memory_panel_answers_typed_stories_and_shows_errors():
    asked = []

    def answer(sentences, question):
        asked.append((list(sentences), question))
        if not question.strip():
            raise ValueError("the question '' has no words")
        M = len(sentences)
        return Answer("<b>", 0.75, [s.lower() for s in sentences], torch.full((3, M), 1 / M), ["zorg"], [])

    panel = memory_panel(answer, [(["Mary went home.", "John left."], "Where is Mary?"), (["Bob ran."], "Who ran?")])
    choose, story, question, readout, image = panel.children
    assert asked[-1] == (["Mary went home.", "John left."], "Where is Mary?")
    assert "&lt;b&gt;" in readout.value and "0.75" in readout.value and "zorg" in readout.value
    png, alt, width, height = shown(image)
    assert alt.startswith("Heatmap of each hop's attention (columns) over the story's sentences (rows)")
    assert "hop 1 → mary went home. (0.50)" in alt and height >= 2.4 * 80  # room for the y-label
    choose.value = 1
    assert asked[-1] == (["Bob ran."], "Who ran?") and question.value == "Who ran?"
    story.value = "Greg is a frog.\n\nBrian is a frog."
    assert asked[-1][0] == ["Greg is a frog.", "Brian is a frog."]  # blank lines are skipped
    assert choose.value is None  # the story typed is no longer the example picked
    question.value = " "
    assert "has no words" in readout.value and shown(image)[0] == b""  # hidden: no broken-image icon
    question.value = "Who is a frog?"
    assert shown(image)[0]  # shown again, at its own pixel size (checked by shown)
    story.value = "Greg is a frog. Brian is a frog! Is Lily a swan? Lily is white"  # typed on one line
    assert asked[-1][0] == ["Greg is a frog.", "Brian is a frog!", "Is Lily a swan?", "Lily is white"]
    story.value = "Greg is a frog and Brian is yellow"
    assert "one sentence, so the memory has one slot" in readout.value
    assert choose.options[0][0] == "1: Where is Mary?" and choose.description == "example" != story.description
    choose.value = 0
    assert story.value == "Mary went home.\nJohn left." and choose.value == 0
    with pytest.raises(ValueError, match="at least one"):
        memory_panel(answer, [])


def test_one_example_cuts_padding_for_bertviz():
    layers = (torch.rand(3, 2, 5, 6), torch.rand(3, 2, 5, 6))
    picked = attn.viz.one_example(layers, 1, queries=4, keys=3)
    assert len(picked) == 2 and all(w.shape == (1, 2, 4, 3) for w in picked)
    assert torch.equal(picked[1][0], layers[1][1, :, :4, :3])
    assert torch.equal(attn.viz.one_example(layers, -1)[0][0], layers[0][2])
    with pytest.raises(ValueError, match=r"index 3 is outside a batch of 3"):
        attn.viz.one_example(layers, 3)
    with pytest.raises(ValueError, match=r"attention\[0\] must be a \(B, H, Tq, Tk\) tensor"):
        attn.viz.one_example((torch.rand(2, 5, 6),))
    with pytest.raises(ValueError, match="attention is empty"):
        attn.viz.one_example(())


def test_head_grid_draws_every_head_of_every_layer():
    layers = (torch.rand(1, 3, 4, 5).softmax(-1), torch.rand(1, 3, 4, 5).softmax(-1))
    fig = attn.viz.head_grid(layers, list("abcde"), list("wxyz"), title="grid")
    heads = [ax for ax in fig.axes if ax.images]
    assert len(heads) == 6
    assert heads[0].get_title() == "layer 1, head 1" and heads[5].get_title() == "layer 2, head 3"
    assert [t.get_text() for t in heads[3].get_xticklabels()] == list("abcde")  # under the last row
    assert not any(t.get_text() for t in heads[0].get_xticklabels()), "no key labels between rows: they hit titles"
    assert all(ax.images[0].get_clim() == (0.0, 1.0) for ax in heads)
    assert torch.allclose(torch.tensor(heads[4].images[0].get_array()), layers[1][0, 1])
    single = attn.viz.head_grid(torch.rand(2, 4, 4))  # one layer as (H, Tq, Tk)
    assert [ax.get_title() for ax in single.axes if ax.images] == ["head 1", "head 2"]
    with pytest.raises(ValueError, match="x_tokens has 4 labels but the weights have 5 columns"):
        attn.viz.head_grid(layers, list("abcd"))
    with pytest.raises(ValueError, match="every layer must have the same shape"):
        attn.viz.head_grid((torch.rand(3, 4, 5), torch.rand(2, 4, 5)))
    with pytest.raises(ValueError, match=r"layer 0 must be \(H, Tq, Tk\)"):
        attn.viz.head_grid((torch.rand(4, 5),))
    plt.close("all")


def test_translation_panel_works_with_a_transformer():
    from functools import partial

    from attn.data.translation import make_corpus
    from attn.transformer.translate import translate

    corpus = make_corpus(n_train=50, n_test=5, seed=0)
    config = attn.TransformerConfig(len(corpus.source_vocab), len(corpus.target_vocab), d_model=16, num_heads=2,
                                    num_layers=1, d_ff=16, max_len=24)  # fmt: skip
    model = attn.Transformer(config)
    result = translate(model, "the dog sees the zebra", corpus.source_vocab, corpus.target_vocab, max_words=10)
    assert result.unknown == ["zebra"] and result.source == ["the", "dog", "sees", "the", "zebra"]
    rows = len(result.target) + result.finished
    assert result.alignment.shape == (rows, 6) and torch.allclose(result.alignment.sum(-1), torch.ones(rows))
    with pytest.raises(ValueError, match="the sentence is empty"):
        translate(model, "  ", corpus.source_vocab, corpus.target_vocab)
    with pytest.raises(ValueError, match="this model reads at most 3"):
        translate(model, "the dog sees the cat", corpus.source_vocab, corpus.target_vocab, max_words=3)
    panel = translation_panel(partial(translate, model, source_vocab=corpus.source_vocab,
                                      target_vocab=corpus.target_vocab), ["the dog sees the cat"])  # fmt: skip
    assert "zebra" not in panel.children[-2].value
    plt.close("all")


def test_heatmap_signed_uses_a_symmetric_diverging_scale():
    ax = heatmap(torch.tensor([[-0.5, 0.2], [0.1, 0.0]]), signed=True)
    assert ax.images[0].get_clim() == (-0.5, 0.5)
    assert ax.images[0].get_cmap().name == "RdBu_r"
    plt.close("all")


def test_heatmap_keeps_sparse_ticks_on_long_unlabelled_axes():
    ax = heatmap(torch.rand(30, 30))
    assert len(ax.get_xticks()) < 30 and len(ax.get_yticks()) < 30
    ax = heatmap(torch.rand(5, 5))
    assert list(ax.get_xticks()) == [0, 1, 2, 3, 4]
    plt.close("all")


def test_image_attention_lights_the_weighted_cells_and_dims_the_rest():
    from attn.viz import image_attention, patch_grid, scene_grid

    image = torch.full((3, 8, 8), 0.5)
    weights = torch.zeros(2, 2)
    weights[0, 1] = 1.0  # the top-right quarter
    ax = image_attention(image, weights, ax=plt.figure().gca(), boxes=torch.tensor([[0.0, 4.0, 4.0, 4.0]]))
    shown = torch.from_numpy(ax.get_images()[0].get_array().data)  # (8, 8, 3)
    assert shown[0, 7, 0] > 0.5 > shown[7, 0, 0]  # lit where the weight is, dimmed elsewhere
    assert len(ax.patches) == 1
    fig = scene_grid(image.expand(3, -1, -1, -1), [weights, None, weights], ["a", "b", "c"], cols=2)
    assert len([a for a in fig.axes if a.get_images()]) == 3
    axes = patch_grid(image, 4).axes  # the whole image, then its 4 patches
    assert len(axes) == 5 and [a.get_title() for a in axes[1:]] == ["1", "2", "3", "4"]
    plt.close("all")
    for call, words in (
        (lambda: image_attention(torch.zeros(8, 8)), "(C, H, W)"),
        (lambda: image_attention(image, torch.zeros(3, 3)), "dividing the image"),
        (lambda: scene_grid(image[None], titles=["a", "b"]), "titles has 2 entries"),
        (lambda: patch_grid(image, 3), "patch=3 must be a positive int dividing"),
    ):
        with pytest.raises(ValueError) as error:
            call()
        assert words in str(error.value)


def test_scene_panel_answers_and_says_when_there_is_no_right_answer():
    from attn.data.scenes import COLOURS, SHAPES, make_scenes
    from attn.vision import Look

    scenes = make_scenes(3, seed=0)
    asked = []

    def answer(image, question):
        asked.append(question)
        return Look(answer=1, attention=torch.full((6, 6), 1 / 36), boxes=torch.zeros(2, 2, 4))

    panel = scene_panel(scenes.images, answer, [f"{c}?" for c in COLOURS], SHAPES, scenes.answer_to)
    slider, dropdown, readout, image = panel.children
    present = int(scenes.colours[0, 0])
    dropdown.value = present
    assert "model: <b>circle</b>" in readout.value and scenes.answer_to(0, present) in readout.value
    missing = next(c for c in range(6) if c not in scenes.colours[0])
    dropdown.value = missing
    assert "no such object" in readout.value and "The model answers circle." in shown(image)[1]
    slider.value = 2
    assert asked[-1] == missing
    with pytest.raises(ValueError, match="non-empty"):
        scene_panel(torch.zeros(0, 3, 8, 8), answer, ["q"], SHAPES, scenes.answer_to)


def test_the_translation_panel_names_its_axes_by_language(monkeypatch):
    drawn = []
    monkeypatch.setattr("attn.viz.widgets.heatmap", lambda *args, **kwargs: drawn.append(kwargs))
    translation_panel(fake_translate, ["the dog"])
    assert (drawn[-1]["xlabel"], drawn[-1]["ylabel"]) == ("English (source)", "German (translation)")


def _contrast(a: float, b: float) -> float:
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


@pytest.mark.parametrize("signed", [False, True])
def test_heatmap_numbers_contrast_with_their_cell(signed):
    """Every number is black or white, whichever reads better on its cell: at least 4.5:1 (WCAG AA) wherever
    either colour reaches it, and never the worse of the two."""
    from attn.viz.plots import _luminance

    weights = torch.linspace(-1 if signed else 0, 1, 21)[None, :].repeat(2, 1)  # every shade of the colour map
    ax = heatmap(weights, annotate=True, signed=signed, vmax=1.0)
    image = ax.images[0]
    for text in ax.texts:
        value = float(text.get_text())
        cell = _luminance(image.cmap(image.norm(value)))
        chosen = _contrast(cell, 0.0 if text.get_color() == "black" else 1.0)
        other = _contrast(cell, 1.0 if text.get_color() == "black" else 0.0)
        assert chosen >= other and chosen >= 4.5, (value, text.get_color(), round(chosen, 2))
    plt.close("all")


def test_a_panel_plot_needs_its_alt_text():
    from attn.viz.widgets import Frame

    with pytest.raises(ValueError, match="alt must say what the plot shows"):
        Frame(b"\x89PNG", "readout", " ")
    assert Frame(b"", "a bad input's message").alt == ""  # no plot, nothing to describe


# ---------------------------------------------------------------- the language models' panels


def fake_read(sentence):
    words = sentence.split()
    if not words:
        raise ValueError("the sentence is <empty>")
    T = len(words)
    g = torch.Generator().manual_seed(T)
    layers = tuple(torch.rand(1, 3, T, T, generator=g).softmax(-1) for _ in range(2))  # 2 layers, 3 heads
    return layers, words


def test_head_panel_shows_the_chosen_head_and_errors():
    panel = head_panel(fake_read, ["the dog sees the cat", "a b"], layer=1, head=2)
    choose, text, layer, head, readout, image = panel.children
    assert (layer.value, layer.max, head.value, head.max) == (2, 2, 3, 3)  # shown 1-based
    assert "5 tokens" in readout.value and shown(image)[1].startswith("Heatmap of layer 2, head 3: each token")
    first = shown(image)[0]
    head.value = 1
    assert shown(image)[0] != first
    choose.value = "a b"
    assert text.value == "a b" and "2 tokens" in readout.value
    text.value = "   "
    assert "the sentence is &lt;empty&gt;" in readout.value and shown(image)[0] == b""
    text.value = "one two three"
    assert "3 tokens" in readout.value and shown(image)[0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"layer": 2}, r"layer must be in 0..1 and head in 0..2, got layer=2, head=0"),
        ({"head": 3}, r"layer must be in 0..1 and head in 0..2, got layer=0, head=3"),
        ({"layer": -1}, r"got layer=-1, head=0"),
        ({"examples": []}, "examples must hold at least one sentence"),
    ],
)
def test_head_panel_refuses_what_it_cannot_show(kwargs, message):
    args = {"examples": ["a b c"], **kwargs}
    with pytest.raises(ValueError, match=message):
        head_panel(fake_read, **args)


def test_sampling_panel_redraws_with_the_temperature(corpus):
    asked = []

    def sample(temperature):
        asked.append(temperature)
        return ["the <b>dog</b> sees", ""]

    panel = sampling_panel(sample, temperature=2.0)
    slider, out = panel.children
    assert asked == [2.0] and "τ = 2.00" in out.value
    assert "&lt;b&gt;dog&lt;/b&gt;" in out.value and "(empty)" in out.value and out.value.count("<li>") == 2
    slider.value = 0.1
    assert asked[-1] == pytest.approx(0.1) and "τ = 0.10" in out.value
    with pytest.raises(ValueError, match=r"temperature must be a number in \[0.01, 100\]"):
        sampling_panel(sample, temperature=0.0)
    model = tiny_lm(len(corpus.vocab), seed=8)
    panel = sampling_panel(lambda t: sample_sentences(model, corpus.vocab, 3, temperature=t, seed=0, max_words=5))
    assert panel.children[1].value.count("<li>") == 3
