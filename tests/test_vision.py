"""Attention for images: the scene generator, patches against a strided convolution, the soft spatial attention
against its equation, the glimpse sensor against plain slicing, REINFORCE against the exact gradient on a toy,
the ViT's encoder against torch.nn.TransformerEncoder, attention rollout on a hand-worked example, and errors."""

import functools

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from attn.data.scenes import COLOURS, SHAPES, make_scenes, scene_splits, shape_masks
from attn.training import seeded
from attn.vision import (
    PatchEmbedding,
    PooledNet,
    RAMConfig,
    RecurrentAttention,
    SoftAttentionNet,
    SpatialConfig,
    ViT,
    ViTConfig,
    accuracy,
    attention_rollout,
    class_token_map,
    glimpse,
    glimpse_boxes,
    look,
    mass_on_object,
    multiply_adds,
    patchify,
    policy_gradient_variance,
    ram_loss,
    reinforce,
    spatial_attention,
    train_on_scenes,
    values_read,
)
from attn.vision.rollout import attention_rollout as rollout_fn
from tests.torch_reference import close, copy_layer, randn


@pytest.fixture(scope="module")
def scenes():
    return make_scenes(40, seed=3)


# --- scenes ------------------------------------------------------------------------------------------------


def test_scenes_are_drawn_from_the_seed(scenes):
    again = make_scenes(40, seed=3)
    assert torch.equal(scenes.images, again.images) and torch.equal(scenes.answer, again.answer)
    assert not torch.equal(scenes.images, make_scenes(40, seed=4).images)


def test_each_question_is_about_one_object_of_its_colour(scenes):
    N, K = scenes.colours.shape
    assert scenes.images.shape == (N, 3, 24, 24) and K == 3
    assert all(len(set(row.tolist())) == K for row in scenes.colours)  # distinct colours
    rows = torch.arange(N)
    assert torch.equal(scenes.question, scenes.colours[rows, scenes.target])
    assert torch.equal(scenes.answer, scenes.shapes[rows, scenes.target])
    pixels = scenes.object_pixels()  # (N, S, S)
    masks = torch.from_numpy(shape_masks())
    for i in range(N):
        assert int(pixels[i].sum()) == int(masks[scenes.answer[i]].sum())
        colour = scenes.images[i][:, pixels[i]]  # (3, pixels): all one colour, lit
        assert torch.all(colour.max(dim=0).values > 0.6) and torch.allclose(colour, colour[:, :1])
    lit = scenes.images.amax(1) > 0  # (N, S, S): the objects do not overlap, so every object shows whole
    assert int(lit.sum()) == sum(int(masks[s].sum()) for s in scenes.shapes.flatten())


def test_target_cells_hold_the_object(scenes):
    cells = scenes.target_cells(6)  # (N, 36)
    pixels = scenes.object_pixels()
    for i in range(len(scenes)):
        expected = pixels[i].view(6, 4, 6, 4).any(3).any(1).flatten()
        assert torch.equal(cells[i], expected)
        assert 3 <= int(cells[i].sum()) <= 9  # a 7 x 7 box spans 2 or 3 cells of 4 pixels per side
    assert torch.equal(scenes.target_cells(24).view(-1, 24, 24), pixels)


def test_where_answers_the_quarter_of_the_object(scenes):
    where = make_scenes(40, seed=3, ask="where")
    assert torch.equal(where.images, scenes.images) and where.question_text(0).startswith("where is the")
    pixels = where.object_pixels().float()  # (N, 24, 24): the quarter holding most of the object's pixels
    quarters = pixels.view(40, 2, 12, 2, 12).sum(dim=(2, 4)).flatten(1)  # (N, 4): TL, TR, BL, BR
    assert torch.equal(where.answer, quarters.argmax(1))
    assert where[3:5].ask == "where" and len(where[3:5]) == 2
    assert scenes.answer_text(0) in SHAPES and COLOURS[int(scenes.question[0])] in scenes.question_text(0)
    for s in (scenes, where):
        assert all(s.answer_to(i, int(s.question[i])) == s.answer_text(i) for i in range(40))
    missing = next(c for c in range(6) if c not in scenes.colours[0])
    assert scenes.answer_to(0, missing) is None


def test_held_out_layouts_never_occur_in_training():
    train, test = scene_splits(300, 200, seed=0)

    def key(s):
        return {tuple(torch.cat([s.colours[i], s.shapes[i], s.corners[i].flatten()]).tolist()) for i in range(len(s))}

    assert len(test) == 200 and not key(train) & key(test)
    small_train, small_test = scene_splits(300, 200, seed=0, size=8, objects=1)  # 96 layouts: repeats are dropped
    assert len(small_test) < 200 and not key(small_train) & key(small_test)


# --- patches and the soft spatial attention ----------------------------------------------------------------


def test_patchify_cuts_row_by_row_and_the_embedding_is_a_strided_convolution():
    images = randn(2, 3, 8, 12)
    patches = patchify(images, 4)  # (2, 6, 48)
    assert patches.shape == (2, 6, 48)
    assert torch.equal(patches[1, 4], images[1, :, 4:8, 4:8].flatten())  # row 1, column 1 of a 2 x 3 grid
    embed = PatchEmbedding(3, 4, 5)
    conv = nn.Conv2d(3, 5, kernel_size=4, stride=4)
    with torch.no_grad():
        conv.weight.copy_(embed.E.weight.view(5, 3, 4, 4))
        conv.bias.copy_(embed.E.bias)
    close(embed(images), conv(images).flatten(2).transpose(1, 2))


def test_spatial_attention_is_bahdanaus_softmax_over_the_cells():
    query, features = randn(2, 5, seed=1), randn(2, 4, 3, 3, seed=2)
    W_q, W_k, v = randn(6, 5, seed=3), randn(6, 4, seed=4), randn(6, seed=5)
    z, alpha = spatial_attention(query, features, W_q, W_k, v)
    assert z.shape == (2, 4) and alpha.shape == (2, 3, 3)
    for b in range(2):
        cells = features[b].flatten(1).T  # (9, 4)
        e = torch.stack([v @ torch.tanh(W_q @ query[b] + W_k @ a) for a in cells])  # eq. 4
        close(alpha[b].flatten(), torch.softmax(e, 0))  # eq. 5
        close(z[b], (torch.softmax(e, 0)[:, None] * cells).sum(0))  # eq. 6


@settings(max_examples=20, deadline=None)
@given(st.permutations(range(9)), st.integers(0, 2**16))
def test_spatial_attention_follows_the_cells_when_they_move(order, seed):
    query, features = randn(1, 5, seed=seed), randn(1, 4, 3, 3, seed=seed + 1)
    W_q, W_k, v = randn(6, 5, seed=seed + 2), randn(6, 4, seed=seed + 3), randn(6, seed=seed + 4)
    moved = features.flatten(2)[..., list(order)].view(1, 4, 3, 3)
    z, alpha = spatial_attention(query, features, W_q, W_k, v)
    z2, alpha2 = spatial_attention(query, moved, W_q, W_k, v)
    close(alpha2.flatten(1), alpha.flatten(1)[:, list(order)])  # the weights move with the cells
    close(z2, z)  # and the read vector does not change
    close(alpha.sum(), torch.tensor(1.0))


def test_soft_and_pooled_models_return_a_map_over_the_grid(scenes):
    for model in (SoftAttentionNet(SpatialConfig()), PooledNet(SpatialConfig())):
        out = model(scenes.images[:4], scenes.question[:4])
        assert out.logits.shape == (4, 4) and out.attention.shape == (4, 6, 6)
        close(out.attention.sum(dim=(1, 2)), torch.ones(4))
    targets = scenes.target_cells(6)[:4]
    close(mass_on_object(out.attention, scenes[:4]), targets.sum(1) / 36.0)  # uniform: the object's share of cells
    one_hot = F.one_hot(targets.float().argmax(1), 36).float().view(4, 6, 6)
    close(mass_on_object(one_hot, scenes[:4]), torch.ones(4))


# --- glimpses and REINFORCE --------------------------------------------------------------------------------


def test_a_glimpse_is_a_crop_and_its_coarser_scales_are_averaged():
    images = randn(2, 3, 24, 24)
    # centres between pixels 8|9 and 15|16 (rows, columns 0-based): crops align with the pixel grid
    location = torch.tensor([[9 / 12 - 1, 16 / 12 - 1], [0.0, 0.0]])
    g = glimpse(images, location, size=4, scales=3)  # (2, 3, 3, 4, 4)
    assert g.shape == (2, 3, 3, 4, 4)
    close(g[0, 0], images[0, :, 7:11, 14:18])
    close(g[0, 1], F.avg_pool2d(images[0:1, :, 5:13, 12:20], 2)[0])
    close(g[1, 2], F.avg_pool2d(images[1:2, :, 4:20, 4:20], 4)[0])
    corner = glimpse(images, torch.tensor([[-1.0, -1.0], [1.0, 1.0]]), size=4, scales=1)
    close(corner[0, 0, :, 2:, 2:], images[0, :, :2, :2])  # a quarter inside the image
    close(corner[0, 0, :, :2], torch.zeros(3, 2, 4))  # outside the image reads zero
    close(corner[1, 0, :, 2:], torch.zeros(3, 2, 4))
    boxes = glimpse_boxes(location, 24, size=4, scales=3)  # (2, 3, 4): top, left, height, width
    close(boxes[0, 0], torch.tensor([7.0, 14.0, 4.0, 4.0]))
    close(boxes[1, 2], torch.tensor([4.0, 4.0, 16.0, 16.0]))


def test_reinforce_estimates_the_gradient_of_the_expected_reward():
    """A toy policy: softmax(θ) over 3 actions with rewards r. E[R] = Σ π_k r_k, so dE[R]/dθ = π (r - E[R])."""
    theta = torch.tensor([0.2, -0.1, 0.4], requires_grad=True)
    r = torch.tensor([0.0, 1.0, 0.3])
    log_pi = torch.log_softmax(theta, 0)
    actions = torch.multinomial(
        log_pi.exp().detach(), 200_000, replacement=True, generator=torch.Generator().manual_seed(0)
    )
    rewards = r[actions]
    for baseline in (torch.zeros(len(actions), 1), torch.full((len(actions), 1), 0.4)):
        (grad,) = torch.autograd.grad(reinforce(log_pi[actions][:, None], rewards, baseline), theta, retain_graph=True)
        pi = log_pi.exp().detach()
        exact = pi * (r - (pi * r).sum())
        close(-grad, exact, atol=4e-3, rtol=0)  # minimising the surrogate climbs the expected reward
    assert exact[1] > 0 and -grad[1] > 0  # the rewarded action's probability goes up


def test_ram_looks_at_places_on_the_grid(scenes):
    with seeded(0):
        model = RecurrentAttention(RAMConfig(glimpses=3))
    out = model(scenes.images[:5], scenes.question[:5])  # training mode: sampled
    assert out.logits.shape == (5, 4) and out.locations.shape == (5, 3, 2) and out.policy.shape == (5, 3, 6, 6)
    assert out.log_probs.shape == out.baselines.shape == (5, 3)
    centres = (torch.arange(6) + 0.5) / 3 - 1
    assert torch.isin(out.locations, centres).all()
    close(out.policy.sum(dim=(2, 3)), torch.ones(5, 3))
    model.eval()
    first, second = model(scenes.images[:5], scenes.question[:5]), model(scenes.images[:5], scenes.question[:5])
    assert torch.equal(first.locations, second.locations)  # eval: the most likely place, every time
    chosen = first.policy[:, 0].flatten(1).argmax(1)
    close(first.locations[:, 0], torch.stack([centres[chosen // 6], centres[chosen % 6]], 1))


def test_ram_loss_trains_the_baseline_alone_with_its_squared_error(scenes):
    with seeded(0):
        model = RecurrentAttention(RAMConfig())
    out = model(scenes.images[:8], scenes.question[:8])
    reward = (out.logits.argmax(-1) == scenes.answer[:8]).float()
    error = F.mse_loss(out.baselines, reward[:, None].expand_as(out.baselines))
    core = torch.autograd.grad(error, model.core.weight_hh, allow_unused=True, retain_graph=True)[0]
    assert core is None  # the baseline reads a detached state
    (own,) = torch.autograd.grad(error, model.baseline.weight, retain_graph=True)
    (total,) = torch.autograd.grad(ram_loss(out, scenes.answer[:8]), model.baseline.weight)
    close(total, own)  # REINFORCE's advantage is detached: only the squared error trains the baseline
    with pytest.raises(ValueError, match="answer must be"):
        ram_loss(out, scenes.answer[:8].float())


def test_the_gradients_variance_and_what_a_model_looked_at(scenes):
    with seeded(0):
        model = RecurrentAttention(RAMConfig())
    with_baseline = policy_gradient_variance(model, scenes, 4, seed=0, batch_size=8)
    assert with_baseline > 0 and with_baseline == policy_gradient_variance(model, scenes, 4, seed=0, batch_size=8)
    with pytest.raises(ValueError, match="at least 2"):
        policy_gradient_variance(model, scenes, 1, seed=0)
    hard = look(model, scenes.images[0], int(scenes.question[0]))
    assert hard.attention.shape == (6, 6) and hard.boxes.shape == (2, 2, 4) and 0 <= hard.answer < 4
    soft = look(SoftAttentionNet(SpatialConfig()), scenes.images[0], 2)
    vit = look(ViT(ViTConfig(d_model=16, num_heads=2, d_ff=32)), scenes.images[0], 2)
    for seen in (hard, soft, vit):
        close(seen.attention.sum(), torch.tensor(1.0))
    assert soft.boxes is None and vit.boxes is None


# --- the Vision Transformer and rollout ----------------------------------------------------------------------


def test_vit_encoder_matches_torch_transformer_encoder(scenes):
    config = ViTConfig(d_model=16, num_heads=2, d_ff=32, num_layers=2)
    with seeded(0):
        model = ViT(config)
    with torch.no_grad():  # not the initial gains of 1 and biases of 0: a norm copied to the wrong place shows
        for name, p in model.named_parameters():
            if "norm" in name or name == "cls":
                p.add_(0.1 * randn(*p.shape, seed=len(name)))
    reference = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True, norm_first=True),
        num_layers=2, norm=nn.LayerNorm(16), enable_nested_tensor=False,
    )  # fmt: skip
    for ours, theirs in zip(model.encoder.layers, reference.layers, strict=True):
        copy_layer(ours, theirs)
    with torch.no_grad():
        reference.norm.weight.copy_(model.encoder.norm.gamma)
        reference.norm.bias.copy_(model.encoder.norm.beta)
    images, question = scenes.images[:3], scenes.question[:3]
    out = model(images, question)
    x = torch.cat(
        [
            model.cls + model.question(question)[:, None],
            patchify(images, 4) @ model.stem.E.weight.T + model.stem.E.bias,
        ],
        1,
    )  # noqa: E501
    x = x + model.positions.table[:37]  # eq. 1
    close(out.logits, model.head(reference(x)[:, 0]))
    assert len(out.attention) == 2 and out.attention[0].shape == (3, 2, 37, 37)
    close(out.attention[1].sum(-1), torch.ones(3, 2, 37))
    assert model(images, question, need_weights=False).attention is None


def test_vit_without_positions_sees_a_set_of_patches(scenes):
    images, question = scenes.images[:2], scenes.question[:2]
    swapped = images.clone()  # swap two patches: (0, 0) and (5, 5)
    swapped[..., :4, :4], swapped[..., 20:, 20:] = images[..., 20:, 20:], images[..., :4, :4]
    for positions, same in ((False, True), (True, False)):
        with seeded(1):
            model = ViT(ViTConfig(d_model=16, num_heads=2, d_ff=32, positions=positions))
        a, b = model(images, question).logits, model(swapped, question).logits
        assert torch.allclose(a, b, atol=1e-5) == same
    hybrid = ViT(ViTConfig(d_model=16, num_heads=2, d_ff=32, stem="conv"))
    assert hybrid(images, question).attention[0].shape == (2, 2, 37, 37)


def test_rollout_by_hand():
    A1 = torch.tensor([[1.0, 0.0], [0.5, 0.5]])
    A2 = torch.tensor([[0.5, 0.5], [0.0, 1.0]])
    # Â1 = [[1, 0], [.25, .75]], Â2 = [[.75, .25], [0, 1]]; Ã = Â2 Â1
    expected = torch.tensor([[0.8125, 0.1875], [0.25, 0.75]])
    close(attention_rollout([A1[None, None], A2[None, None]])[0], expected)
    heads_1 = torch.stack([torch.eye(2), torch.tensor([[1.0, 0.0], [1.0, 0.0]])])  # two heads averaging to A1
    heads_2 = torch.stack([torch.tensor([[1.0, 0.0], [0.0, 1.0]]), torch.tensor([[0.0, 1.0], [0.0, 1.0]])])  # to A2
    close(rollout_fn([heads_1[None], heads_2[None]])[0], expected)
    close(attention_rollout([A1[None, None]])[0], 0.5 * A1 + 0.5 * torch.eye(2))  # one layer: Â itself


def test_class_token_map_lays_row_zero_on_the_grid():
    weights = torch.zeros(1, 5, 5)
    weights[0, 0] = torch.tensor([0.5, 0.1, 0.2, 0.1, 0.1])  # the class token itself, then 2 x 2 patches
    close(class_token_map(weights, 2)[0], torch.tensor([[0.2, 0.4], [0.2, 0.2]]))


# --- training ------------------------------------------------------------------------------------------------


def test_training_lowers_the_loss_and_stops_at_a_goal():
    train, test = scene_splits(200, 100, seed=1)
    with seeded(0):
        model = SoftAttentionNet(SpatialConfig(d_model=8, d_attention=8))
    _, history = train_on_scenes(model, train, 60, seed=0, batch_size=16, progress=False)
    assert sum(history.loss[-10:]) < sum(history.loss[:10])
    _, history = train_on_scenes(model, train, 60, seed=0, held_out=test, goal=0.0, every=20, progress=False)
    assert len(history.loss) == 20 and history.checkpoints[0]["accuracy"] == accuracy(model, test)


def test_a_builder_trains_what_a_model_built_under_the_seed_gives():
    train, _ = scene_splits(100, 10, seed=1)
    config = SpatialConfig(d_model=8, d_attention=8)
    model, history = train_on_scenes(functools.partial(SoftAttentionNet, config), train, 5, seed=4, progress=False)
    with seeded(4):
        here = SoftAttentionNet(config)
    assert train_on_scenes(here, train, 5, seed=4, progress=False).history.loss == history.loss
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), here.state_dict().values(), strict=True))


# --- what a model reads and computes ----------------------------------------------------------------------


class _Blind(nn.Module):
    """Answers from the question alone: reads no pixel."""

    def __init__(self):
        super().__init__()
        self.answer = nn.Embedding(6, 4)

    def forward(self, images, question):
        return self.answer(question)


class _Linear(nn.Module):
    """One linear map of the whole image: C H W x 4 multiply-adds."""

    def __init__(self, size: int):
        super().__init__()
        self.map = nn.Linear(3 * size * size, 4)

    def forward(self, images, question):
        return self.map(images.flatten(1))


class _Conv(nn.Module):
    """One 3 x 3 convolution of stride 1, padded: C_out C_in 9 H W multiply-adds."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 5, 3, padding=1)

    def forward(self, images, question):
        return self.conv(images)


def test_values_read_counts_every_pixel_a_convolution_or_a_coarse_view_reads(scenes):
    with seeded(0):
        soft, hard = SoftAttentionNet(SpatialConfig()), RecurrentAttention(RAMConfig())
    every = torch.full((8,), 3 * 24 * 24)
    assert torch.equal(values_read(soft, scenes.images[:8], scenes.question[:8]), every)
    assert torch.equal(values_read(hard, scenes.images[:8], scenes.question[:8]), every)
    assert torch.equal(values_read(_Blind(), scenes.images[:8], scenes.question[:8]), torch.zeros(8, dtype=torch.long))


@pytest.mark.parametrize(("size", "seed"), [(24, 1), (24, 2), (48, 1), (96, 3)])
def test_values_read_without_a_coarse_view_are_the_glimpses_pixels(scenes, size, seed):
    """Mnih et al.'s model reads exactly the pixels its glimpses cover inside the image (the boxes, clipped)."""
    images = make_scenes(6, seed=5, size=size)
    with seeded(seed):
        model = RecurrentAttention(RAMConfig(image_size=size, context=False)).eval()
    with torch.no_grad():
        out = model(images.images, images.question)
    read = values_read(model, images.images, images.question)
    for i, boxes in enumerate(glimpse_boxes(out.locations, size, 6, 2)):  # (glimpses, scales, 4)
        covered = torch.zeros(size, size, dtype=torch.bool)
        for top, left, h, w in boxes.reshape(-1, 4).round().long().tolist():
            covered[max(top, 0) : max(top + h, 0), max(left, 0) : max(left + w, 0)] = True
        assert int(read[i]) == 3 * int(covered.sum()), i
    assert bool((read < 3 * size * size).all())


def test_multiply_adds_are_counted_as_by_hand():
    images, question = torch.rand(2, 3, 8, 8), torch.tensor([0, 1])
    assert multiply_adds(_Linear(8), images, question) == 3 * 8 * 8 * 4
    assert multiply_adds(_Conv(), images, question) == 5 * 3 * 9 * 8 * 8
    assert multiply_adds(_Blind(), images, question) == 0
    with seeded(0):
        hard = [RecurrentAttention(RAMConfig(image_size=S)) for S in (24, 96)]
    costs = [multiply_adds(m, torch.rand(1, 3, S, S), torch.tensor([0])) for m, S in zip(hard, (24, 96), strict=True)]
    assert costs[0] == costs[1] > 0  # the hard model's learned layers: the same work at any size


def test_without_a_coarse_view_the_first_place_comes_from_the_question_alone(scenes):
    images = scenes.images[:2]
    swapped = images.flip(0)  # the other image, the same questions
    question = scenes.question[:1].expand(2)
    for context in (True, False):
        with seeded(0):
            model = RecurrentAttention(RAMConfig(context=context)).eval()
        with torch.no_grad():
            first = model(images, question).policy[:, 0]
            again = model(swapped, question).policy[:, 0]
        assert torch.equal(first[0], again[1]) and torch.equal(first[1], again[0])
        assert torch.equal(first[0], first[1]) != context  # with a coarse view the image changes the policy


def test_training_stops_once_the_accuracy_stops_gaining():
    train, valid = scene_splits(200, 50, seed=1)
    with seeded(0):
        model = SoftAttentionNet(SpatialConfig(d_model=8, d_attention=8))
    _, history = train_on_scenes(model, train, 100, seed=0, held_out=valid, patience=2, min_gain=0.99, every=10,
                                 progress=False)  # fmt: skip
    assert len(history.checkpoints) == 3  # the first sets the best; two more cannot beat it by 0.99
    _, history = train_on_scenes(model, train, 30, seed=0, held_out=valid, patience=5, every=10, progress=False)
    assert len(history.loss) == 30  # not enough checkpoints to run out of patience


# --- errors --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: make_scenes(5, 0, objects=7), "at most 6"),
        (lambda: make_scenes(5, 0, size=10, objects=3), "do not fit"),
        (lambda: make_scenes(5, 0, ask="colour"), "ask must be one of"),
        (lambda: make_scenes(5, 0).target_cells(5), "grid=5 must divide"),
        (lambda: patchify(torch.zeros(1, 3, 10, 10), 4), "patch=4 must divide"),
        (lambda: patchify(torch.zeros(3, 10, 10), 2), "images"),
        (lambda: spatial_attention(torch.zeros(2, 5), torch.zeros(3, 4, 2, 2), *[torch.zeros(1)] * 3), "same B"),
        (lambda: glimpse(torch.zeros(2, 3, 8, 8), torch.zeros(2, 3), 2, 1), "locations must be (2, 2)"),
        (lambda: attention_rollout(torch.zeros(1, 1, 2, 2)), "sequence"),
        (lambda: attention_rollout([torch.zeros(1, 1, 2, 2), torch.zeros(1, 1, 3, 3)]), "attentions[1]"),
        (lambda: class_token_map(torch.zeros(1, 5, 5), 3), "T = 1 + grid² = 10"),
        (lambda: ViT(ViTConfig(stem="resnet")), "stem must be one of"),
        (lambda: ViT(ViTConfig(patch=5)), "patch=5 must divide"),
        (lambda: ViT(ViTConfig())(torch.zeros(2, 3, 24, 24), torch.zeros(2)), "question must be (2,) int64"),
        (lambda: ViT(ViTConfig())(torch.zeros(2, 1, 24, 24), torch.zeros(2, dtype=torch.long)), "3 channels"),
        (lambda: SoftAttentionNet(SpatialConfig())(torch.zeros(1, 3, 24, 24), torch.tensor([6])), "6 questions"),
        (lambda: RecurrentAttention(RAMConfig(grid=0)), "grid must be a positive int"),
        (lambda: RecurrentAttention(RAMConfig(grid=5)), "grid=5 must divide image_size=24"),
        (lambda: scene_splits(5, 0, 0), "test must be a positive int"),
        (lambda: reinforce(torch.zeros(2, 3), torch.zeros(3), torch.zeros(2, 3)), "rewards (B,)"),
        (lambda: mass_on_object(torch.zeros(2, 6, 6), make_scenes(3, 0)), "N = 3 scenes"),
        (lambda: train_on_scenes(PooledNet(SpatialConfig()), make_scenes(3, 0), 1, seed=0, goal=0.5), "held_out"),
        (lambda: train_on_scenes(PooledNet(SpatialConfig()), make_scenes(3, 0), 1, seed=0, patience=2), "held_out"),
        (lambda: train_on_scenes(PooledNet(SpatialConfig()), make_scenes(3, 0), 1, seed=0, min_gain=1), "min_gain"),
        (lambda: RecurrentAttention(RAMConfig(context="no")), "context must be True or False"),
        (lambda: values_read(torch.zeros(1), torch.zeros(1, 3, 24, 24), torch.zeros(1)), "model must be"),
        (lambda: values_read(_Blind(), torch.zeros(2, 3, 24, 24), torch.zeros(3)), "question must be a (2,)"),
        (lambda: multiply_adds(_Blind(), torch.zeros(0, 3, 24, 24), torch.zeros(0)), "at least one image"),
    ],
)
def test_bad_input_names_the_argument(call, words):
    with pytest.raises(ValueError, match=None) as error:
        call()
    assert words in str(error.value)
