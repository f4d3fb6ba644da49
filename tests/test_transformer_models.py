"""attn.transformer's stacks and whole models against torch.nn.Transformer*, with copied weights; greedy decoding
and learned positions.

Masks: attn's are bool with True = may attend; torch's (``*_mask``, ``*_key_padding_mask``) have True = masked out,
so torch gets ``~mask``. Every comparison is in eval mode with dropout 0.0, in float32, and only on real
(unpadded) positions, whose values torch's fast paths leave as they are.
"""

import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch_reference import close, copy_layer, copy_norm, randn

from attn.blocks import Decoder, Encoder, sinusoidal_positions
from attn.masks import causal_mask
from attn.training import seeded
from attn.transformer import LanguageModel, LanguageModelConfig, Transformer, TransformerConfig

D, H, D_FF, LAYERS = 16, 4, 32, 2


def randomize(module: nn.Module, seed: int = 0, std: float = 0.3) -> nn.Module:
    """Every parameter random (biases and β too, each LayerNorm gain γ near 1), so a wrongly copied, unused or
    swapped one shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            noise = torch.randn(p.shape, generator=g) * std
            p.copy_(1 + noise if name.endswith("gamma") else noise)
    return module


def differ(actual, expected, by=1e-3):
    """The check that a comparison would fail: the two differ by far more than its tolerance."""
    assert float((actual - expected).detach().abs().max()) > by


# ---------------------------------------------------------------- copying weights into torch


def copy_stack(ours: Encoder | Decoder, theirs: nn.TransformerEncoder | nn.TransformerDecoder) -> None:
    """Every layer and the final LayerNorm, which a pre-LN stack has and a post-LN one has not, on both sides."""
    assert (ours.norm is None) == (theirs.norm is None)
    for a, b in zip(ours.layers, theirs.layers, strict=True):
        copy_layer(a, b)
    if ours.norm is not None:
        copy_norm(ours.norm, theirs.norm)


def torch_encoder(norm_first: bool, activation: str = "relu") -> nn.TransformerEncoder:
    layer = nn.TransformerEncoderLayer(
        D, H, D_FF, dropout=0.0, activation=activation, batch_first=True, norm_first=norm_first
    )
    final = nn.LayerNorm(D) if norm_first else None
    return nn.TransformerEncoder(layer, LAYERS, norm=final, enable_nested_tensor=False).eval()


def torch_decoder(norm_first: bool) -> nn.TransformerDecoder:
    layer = nn.TransformerDecoderLayer(D, H, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first)
    return nn.TransformerDecoder(layer, LAYERS, norm=nn.LayerNorm(D) if norm_first else None).eval()


# ---------------------------------------------------------------- Encoder and Decoder stacks vs torch


SOURCE_KEEP = torch.tensor([[1] * 7, [1] * 4 + [0] * 3, [1, 1] + [0] * 5], dtype=torch.bool)  # (B, S) real
TARGET_KEEP = torch.tensor([[1] * 5, [1, 1, 1, 0, 0], [1] + [0] * 4], dtype=torch.bool)  # (B, T) real


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
@pytest.mark.parametrize("grad", [True, False], ids=["grad", "no-grad"])  # no_grad: torch's fast path
def test_encoder_matches_torch_transformer_encoder(norm_first, grad):
    ours = randomize(Encoder(LAYERS, D, H, D_FF, dropout=0.0, norm_first=norm_first), seed=1).eval()
    theirs = torch_encoder(norm_first)
    copy_stack(ours, theirs)
    x, keep = randn(3, 7, D, seed=2), SOURCE_KEEP
    with torch.set_grad_enabled(grad):
        out, weights = ours(x, keep[:, None, None, :])
        ref = theirs(x, src_key_padding_mask=~keep)
        close(out[keep], ref[keep])
        assert len(weights) == LAYERS and all(w.shape == (3, H, 7, 7) for w in weights)
        # The comparison sees the final norm: torch without it (pre-LN) or with one (post-LN) differs.
        theirs.norm = None if norm_first else nn.LayerNorm(D)
        differ(out[keep], theirs(x, src_key_padding_mask=~keep)[keep])


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_decoder_matches_torch_transformer_decoder(norm_first):
    ours = randomize(Decoder(LAYERS, D, H, D_FF, dropout=0.0, norm_first=norm_first), seed=1).eval()
    theirs = torch_decoder(norm_first)
    copy_stack(ours, theirs)
    T = TARGET_KEEP.shape[1]
    x, memory = randn(3, T, D, seed=2), randn(3, 7, D, seed=3)
    self_mask = causal_mask(T) & TARGET_KEEP[:, None, None, :]  # (B, 1, T, T)
    out, self_weights, cross_weights = ours(x, memory, self_mask, SOURCE_KEEP[:, None, None, :])

    def reference():
        return theirs(
            x, memory, tgt_mask=~causal_mask(T), tgt_key_padding_mask=~TARGET_KEEP,
            memory_key_padding_mask=~SOURCE_KEEP,
        )  # fmt: skip

    keep = TARGET_KEEP
    close(out[keep], reference()[keep])
    assert len(self_weights) == len(cross_weights) == LAYERS
    assert all(w.shape == (3, H, T, T) for w in self_weights) and all(w.shape == (3, H, T, 7) for w in cross_weights)
    # The comparison sees which norm is which: swapping norm2 and norm3 of the last layer on torch's side differs.
    last = theirs.layers[-1]
    last.norm2, last.norm3 = last.norm3, last.norm2
    differ(out[keep], reference()[keep])


# ---------------------------------------------------------------- whole models vs torch


class TorchTransformer(nn.Module):
    """``nn.Transformer`` between copies of the embeddings (× √d_model, + the same sinusoidal table) and the
    output layer of ``ours``. A post-LN stack has no final LayerNorm, so nn.Transformer's are removed; a
    pre-LN one has, so ours are copied into them."""

    def __init__(self, ours: Transformer):
        super().__init__()
        c = self.config = ours.config
        self.source_tokens = nn.Embedding(c.source_vocab, c.d_model)
        self.target_tokens = nn.Embedding(c.target_vocab, c.d_model)
        self.register_buffer("positions", sinusoidal_positions(c.max_len, c.d_model), persistent=False)
        with warnings.catch_warnings():  # pre-LN: "enable_nested_tensor is True, but ... norm_first was True"
            warnings.simplefilter("ignore", UserWarning)
            self.transformer = nn.Transformer(
                d_model=c.d_model, nhead=c.num_heads, num_encoder_layers=c.num_layers,
                num_decoder_layers=c.num_layers, dim_feedforward=c.d_ff, dropout=0.0, activation=c.activation,
                batch_first=True, norm_first=c.norm_first,
            )  # fmt: skip
        if not c.norm_first:
            self.transformer.encoder.norm = self.transformer.decoder.norm = None
        self.out = nn.Linear(c.d_model, c.target_vocab)
        with torch.no_grad():
            self.source_tokens.weight.copy_(ours.source_embedding.tokens.weight)
            self.target_tokens.weight.copy_(ours.target_embedding.tokens.weight)
            self.out.load_state_dict(ours.out.state_dict())
        copy_stack(ours.encoder, self.transformer.encoder)
        copy_stack(ours.decoder, self.transformer.decoder)

    def embed(self, table: nn.Embedding, tokens: torch.Tensor) -> torch.Tensor:
        return table(tokens) * math.sqrt(self.config.d_model) + self.positions[: tokens.shape[1]]

    def forward(self, source: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        source_pad, target_pad = source == self.config.pad, target == self.config.pad  # True = masked out
        x = self.transformer(
            self.embed(self.source_tokens, source), self.embed(self.target_tokens, target),
            tgt_mask=~causal_mask(target.shape[1]), src_key_padding_mask=source_pad,
            tgt_key_padding_mask=target_pad, memory_key_padding_mask=source_pad,
        )  # fmt: skip
        return self.out(x)


class TorchLanguageModel(nn.Module):
    """``nn.TransformerEncoder`` (a final LayerNorm when pre-LN) between copies of the embeddings, positions and
    output layer of ``ours``: a causal mask when ``causal``, else a key padding mask."""

    def __init__(self, ours: LanguageModel):
        super().__init__()
        c = self.config = ours.config
        self.causal = c.causal
        self.tokens = nn.Embedding(c.vocab_size, c.d_model)
        self.register_buffer("positions", sinusoidal_positions(c.max_len, c.d_model), persistent=False)
        layer = nn.TransformerEncoderLayer(
            c.d_model, c.num_heads, c.d_ff, dropout=0.0, activation=c.activation, batch_first=True,
            norm_first=c.norm_first,
        )  # fmt: skip
        final = nn.LayerNorm(c.d_model) if c.norm_first else None
        self.encoder = nn.TransformerEncoder(layer, c.num_layers, norm=final, enable_nested_tensor=False)
        self.out = nn.Linear(c.d_model, c.vocab_size)
        with torch.no_grad():
            self.tokens.weight.copy_(ours.embedding.tokens.weight)
            self.out.load_state_dict(ours.out.state_dict())
        copy_stack(ours.layers, self.encoder)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.tokens(tokens) * math.sqrt(self.config.d_model) + self.positions[: tokens.shape[1]]
        if self.causal:
            x = self.encoder(x, mask=~causal_mask(tokens.shape[1]))
        else:
            x = self.encoder(x, src_key_padding_mask=tokens == self.config.pad)
        return self.out(x)


def small_transformer(norm_first=False, positions="sinusoidal", seed=1, random=True) -> Transformer:
    config = TransformerConfig(11, 13, d_model=D, num_heads=H, num_layers=LAYERS, d_ff=D_FF, dropout=0.0,
                               max_len=16, positions=positions, norm_first=norm_first)  # fmt: skip
    with seeded(seed):
        model = Transformer(config)
    return (randomize(model, seed) if random else model).eval()


def small_lm(causal, norm_first, seed=1) -> LanguageModel:
    config = LanguageModelConfig(11, d_model=D, num_heads=H, num_layers=LAYERS, d_ff=D_FF, dropout=0.0,
                                 max_len=16, positions="sinusoidal", norm_first=norm_first, activation="gelu",
                                 causal=causal)  # fmt: skip
    with seeded(seed):
        return randomize(LanguageModel(config), seed).eval()


# A padded batch (pad = 0): sentence 0 is full length, the others are padded at the end.
SOURCE = torch.tensor([[4, 5, 6, 7, 8, 9], [3, 10, 4, 0, 0, 0], [7, 0, 0, 0, 0, 0]])
TARGET = torch.tensor([[1, 12, 5, 6, 7], [1, 8, 0, 0, 0], [1, 2, 3, 0, 0]])
TOKENS = torch.tensor([[3, 4, 5, 6, 7, 8], [9, 10, 3, 0, 0, 0], [5, 0, 0, 0, 0, 0]])


@pytest.mark.parametrize("norm_first", [False, True], ids=["post-LN", "pre-LN"])
def test_transformer_matches_torch_transformer(norm_first):
    ours = small_transformer(norm_first)
    theirs = TorchTransformer(ours).eval()
    keep = TARGET != 0
    ref = theirs(SOURCE, TARGET)
    for need_weights in (True, False):
        close(ours(SOURCE, TARGET, need_weights=need_weights).logits[keep], ref[keep])
    logits = ours(SOURCE, TARGET).logits[keep]
    # The comparison tells the encoder's final norm from the decoder's (pre-LN), and sees a final norm that a
    # post-LN model must not have.
    if norm_first:
        encoder, decoder = theirs.transformer.encoder, theirs.transformer.decoder
        encoder.norm, decoder.norm = decoder.norm, encoder.norm
    else:
        theirs.transformer.decoder.norm = nn.LayerNorm(D)
    differ(logits, theirs(SOURCE, TARGET)[keep])


@pytest.mark.parametrize("norm_first", [True, False], ids=["pre-LN", "post-LN"])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "bidirectional"])
def test_language_model_matches_torch_transformer_encoder(causal, norm_first):
    ours = small_lm(causal, norm_first)
    theirs = TorchLanguageModel(ours).eval()
    keep = TOKENS != 0
    ref = theirs(TOKENS)
    for need_weights in (True, False):
        close(ours(TOKENS, need_weights=need_weights).logits[keep], ref[keep])
    # The comparison sees the mask: the other kind of model (causal vs bidirectional) differs.
    theirs.causal = not causal
    differ(ours(TOKENS).logits[keep], theirs(TOKENS)[keep])


# ---------------------------------------------------------------- learned positions


def step_by_step(model: Transformer, source: list[int], bos: int, eos: int | None, steps: int) -> list[int]:
    """One sentence alone: the argmax of ``model(source, prefix).logits[:, -1]``, re-reading the whole prefix
    each step; stops after ``eos``."""
    prefix = torch.tensor([[bos]])
    for _ in range(steps):
        token = model(torch.tensor([source]), prefix).logits[:, -1].argmax(-1)  # (1,)
        prefix = torch.cat([prefix, token[:, None]], dim=1)
        if int(token) == eos:
            break
    return prefix[0, 1:].tolist()


def test_greedy_decode_with_learned_positions_equals_a_step_by_step_loop():
    model = small_transformer(positions="learned", seed=2, random=False)
    sources = [[4, 5, 6, 7, 8, 9], [3, 10, 4], [7, 9], [10, 9, 8, 7]]
    source = torch.tensor([s + [0] * (6 - len(s)) for s in sources])
    steps = 8
    with torch.no_grad():
        free = [step_by_step(model, s, 1, None, steps) for s in sources]  # never stops
    # An eos that ends some sentences early and not others, so both the padding and the early stop show.
    stops = {}
    for eos in range(13):
        ends = [row.index(eos) + 1 if eos in row else steps for row in free]
        if min(ends) < steps and len(set(ends)) > 1:
            stops[eos] = ends
    assert stops, f"no usable eos in {free}"
    for eos, ends in stops.items():
        decoded = model.greedy_decode(source, bos=1, eos=eos, max_len=steps)
        assert decoded.dtype == torch.long and decoded.shape == (4, max(ends))
        for row, free_row, end in zip(decoded.tolist(), free, ends, strict=True):
            assert row == free_row[:end] + [0] * (max(ends) - end)


def test_learned_position_tables_are_parameters_that_receive_gradient():
    model = small_transformer(positions="learned", seed=3)
    parameters, buffers = dict(model.named_parameters()), dict(model.named_buffers())
    S, T = SOURCE.shape[1], TARGET.shape[1]
    for side in ("source", "target"):
        name = f"{side}_embedding.positions.table"
        assert name in parameters and name not in buffers and name in model.state_dict()
        assert parameters[name].shape == (16, D) and parameters[name].requires_grad
    keep = TARGET != 0
    labels = torch.randint(13, (int(keep.sum()),), generator=torch.Generator().manual_seed(0))
    F.cross_entropy(model(SOURCE, TARGET).logits[keep], labels).backward()
    for side, length in (("source", S), ("target", T)):
        grad = parameters[f"{side}_embedding.positions.table"].grad
        assert grad is not None and bool((grad[:length].abs().sum(-1) > 0).all())  # every position used
        assert torch.equal(grad[length:], torch.zeros(16 - length, D))  # positions beyond T: none
    # ... and it is used: moving one position vector moves the logits there.
    with torch.no_grad():
        before = model(SOURCE, TARGET).logits
        model.target_embedding.positions.table[2] += 1.0
        after = model(SOURCE, TARGET).logits
    close(after[:, :2], before[:, :2])  # causal: earlier positions do not see it
    differ(after[0, 2], before[0, 2])
