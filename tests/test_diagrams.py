"""The architecture schematics: committed files up to date, accessible self-contained SVG, labels that name
what the code really has, and a command line that never overwrites a hand-edited file by accident."""

import inspect
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import torch
from torch import nn

import attn
from attn.mixers import TokenMixer
from attn.transformer.layers import FeedForward
from attn.viz import diagrams

ROOT = Path(__file__).resolve().parents[1]
FIGURES_DIR = ROOT / "notebooks" / "figures"
SVG = "{http://www.w3.org/2000/svg}"
NAMES = sorted(diagrams.FIGURES)


def labels(name: str) -> str:
    """Every text element of a figure, one per line (tspans joined)."""
    root = ET.fromstring(diagrams.FIGURES[name]())
    return "\n".join("".join(t.itertext()) for t in root.iter(f"{SVG}text"))


@pytest.mark.parametrize("name", NAMES)
def test_committed_file_is_what_the_generator_draws(name):
    path = FIGURES_DIR / f"{name}.svg"
    assert path.is_file(), f"{path} is missing: run python -m attn.viz.diagrams notebooks/figures --force"
    assert path.read_bytes() == diagrams.FIGURES[name]().encode("utf-8"), (
        f"{path.relative_to(ROOT)} differs from attn/viz/diagrams.py: edit the generator, not the file, and run "
        "python -m attn.viz.diagrams notebooks/figures --force"
    )


def test_the_folder_holds_exactly_the_figures():
    assert sorted(p.stem for p in FIGURES_DIR.glob("*.svg")) == NAMES
    assert NAMES == sorted(["bahdanau", "memory_hops", "soft_dictionary", "multi_head", "transformer", "bert_vs_gpt"])


@pytest.mark.parametrize("name", NAMES)
def test_accessible_self_contained_and_deterministic(name):
    text = diagrams.FIGURES[name]()
    assert text == diagrams.FIGURES[name](), "the same bytes on every call"
    root = ET.fromstring(text)
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    assert re.fullmatch(r"0 0 \d+ \d+", root.get("viewBox")) and root.get("width") and root.get("height")
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    assert "sans-serif" in root.get("font-family")
    ids = {e.get("id"): e for e in root.iter() if e.get("id")}
    title_id, desc_id = root.get("aria-labelledby").split()
    assert ids[title_id].tag == f"{SVG}title" and ids[title_id].text.strip()
    assert ids[desc_id].tag == f"{SVG}desc" and len(ids[desc_id].text.split()) >= 20  # a real sentence or two
    assert root[0] is ids[title_id], "the title comes first"
    for element in root.iter():
        assert element.tag.split("}")[1] not in ("image", "script", "foreignObject", "style", "a", "use")
        assert not [key for key in element.attrib if key.endswith("href")]
        size = element.get("font-size")
        assert size is None or float(size) >= 11, f"text smaller than 11px in {name}"
    assert set(re.findall(r"url\(([^)]*)\)", text)) <= {f"#{i}" for i in ids}, "only references inside the file"
    assert text.count("http") == 1, "no address but the SVG namespace"
    assert 2_000 < len(text.encode()) < 25_000


def test_multi_head_names_the_projections_and_shapes_of_the_code():
    words = labels("multi_head")
    mha = attn.MultiHeadAttention(8, 2)
    for weight in ("W_q", "W_k", "W_v", "W_o"):
        assert weight in words and isinstance(getattr(mha, weight), nn.Linear)
    source = inspect.getsource(attn.MultiHeadAttention)
    for shape in ("(B, T, d_model)", "(B, H, T, d_k)", "(B, H, T, T)"):
        assert shape in words
    for shape in ("d_model", "(B, H, Tq, d_k)", "(B, H, Tq, Tk)", ".transpose(1, 2)", ".view(", ".reshape("):
        assert shape in source
    x = torch.randn(2, 5, 8)
    _, weights = mha(x, x, x)
    assert weights.shape == (2, mha.h, 5, 5)  # (B, H, T, T) as drawn


def test_bahdanau_names_the_additive_score_parameters():
    words = labels("bahdanau")
    additive = attn.AdditiveAttention(6, 4, 5)
    for name in ("W_a", "U_a", "v_a"):
        assert name in words and isinstance(getattr(additive, name), nn.Parameter)
    assert "e\u1d62\u2c7c = v_aᵀ tanh(W_a s\u1d62\u208b\u2081 + U_a h\u2c7c)" in words
    assert "e_ij = v_aᵀ tanh(W_a s_{i-1} + U_a h_j)" in attn.AdditiveAttention.__doc__
    assert "AdditiveAttention.score" in words and callable(attn.AdditiveAttention.score)
    model = attn.Seq2Seq(attn.Seq2SeqConfig(source_vocab=7, target_vocab=7))
    assert "nn.GRU," in words and isinstance(model.encoder, nn.GRU) and model.encoder.bidirectional
    assert "nn.GRUCell" in words and isinstance(model.decoder, nn.GRUCell)
    assert "(B, S, D)" in words and "(B, S, D)" in attn.Seq2Seq.encode.__doc__
    assert "alignments (B, T, S)" in words and "(B, T, S)" in attn.additive.Seq2SeqOutput.__doc__


def test_memory_hops_names_the_tables_memn2n_has():
    words = labels("memory_hops")
    config = attn.MemN2NConfig(vocab_size=10)
    model = attn.MemN2N(config)
    K = config.hops
    assert f"K = {K} hops" in words and words.count("hop ") >= K
    assert len(model.E) == K + 1 and all(isinstance(table, nn.Embedding) for table in model.E)
    for k in range(K + 1):
        assert f"E[{k}]" in words
    assert f"E[{K + 1}]" not in words
    assert "T[k]" in words and len(model.T) == K + 1  # the temporal tables
    assert "(B, M, J)" in words and "story (B, M, J)" in attn.MemN2N.__doc__
    for tying in ("A^{k+1} = C^k", "B = A^1", "Wᵀ = C^K"):  # the ties the code implements, as its docstring says
        assert tying in attn.MemN2N.__doc__
    for drawn in ("A² = C¹", "A³ = C²", "B = A¹", "Wᵀ = C³", "W = E[K].weight (V, d)"):
        assert drawn in words
    assert tuple(model.E[K].weight.shape) == (10, config.d)  # (V, d): logits = u @ W.T


def test_soft_dictionary_names_the_projections():
    words = labels("soft_dictionary")
    mixer = TokenMixer("attention", 8, 4)
    for name in ("W_q", "W_k", "W_v"):
        assert f"X {name}" in words and isinstance(getattr(mixer, name), nn.Linear)
    assert "softmax(q·kⱼ / √d_k)" in words
    assert "softmax(Q Kᵀ / √d_k)" in attn.scaled_dot_product_attention.__doc__


def test_transformer_names_the_sublayers_masks_and_output():
    words = labels("transformer")
    encoder, decoder = attn.EncoderLayer(8, 2, 16), attn.DecoderLayer(8, 2, 16)
    for name in ("self_attention", "norm1", "feed_forward", "norm2"):
        assert name in words and hasattr(encoder, name) and hasattr(decoder, name)
    for name in ("cross_attention", "norm3"):
        assert name in words and hasattr(decoder, name)
    assert "W_2 relu(W_1 x)" in words and {"W_1", "W_2"} <= set(dict(FeedForward(8, 16).named_children()))
    model = attn.Transformer(attn.TransformerConfig(source_vocab=9, target_vocab=9))
    for name in ("source_embedding", "target_embedding", "source_mask", "target_mask", "out"):
        assert name in words and hasattr(model, name)
    assert "out: Linear(d_model, V)" in words and isinstance(model.out, nn.Linear)
    assert "num_layers" in words and "norm_first=False" in words and model.config.norm_first is False
    assert "mask: source_mask (B, 1, 1, S)" in words and "(B, 1, 1, S)" in model.source_mask.__doc__
    assert "mask: target_mask (B, 1, T, T)" in words and "(B, 1, T, T)" in model.target_mask.__doc__
    target = torch.tensor([[5, 6, 7, 0]])  # the last token is padding
    expected = attn.causal_mask(4) & (target != 0)[:, None, None, :]
    assert "causal_mask ∧ padding" in words and torch.equal(model.target_mask(target), expected)


def _drawn_mask(which: str) -> torch.Tensor:
    root = ET.fromstring(diagrams.bert_vs_gpt())
    (group,) = [g for g in root.iter(f"{SVG}g") if g.get("id") == f"bert_vs_gpt-{which}-mask"]
    cells = [int(t.text) for t in group.iter(f"{SVG}text")]
    T = int(len(cells) ** 0.5)
    return torch.tensor(cells, dtype=torch.bool).view(T, T)


@pytest.mark.parametrize(("which", "causal"), [("gpt", True), ("bert", False)])
def test_bert_vs_gpt_draws_the_masks_language_model_builds(which, causal):
    words = labels("bert_vs_gpt")
    drawn = _drawn_mask(which)
    T = drawn.shape[0]
    model = attn.LanguageModel(attn.LanguageModelConfig(vocab_size=10, causal=causal))
    built = model.mask(torch.arange(1, T + 1)[None]).expand(1, 1, T, T)[0, 0]  # no padding: (T, T)
    assert torch.equal(drawn, built)
    assert f"LanguageModel(causal={causal})" in words
    assert torch.equal(_drawn_mask("gpt"), attn.causal_mask(T)) and "causal_mask(T)" in words
    assert "[MASK]" in words and "next token" in words


def test_cli_writes_leaves_equal_files_alone_and_refuses_to_overwrite(tmp_path, capsys):
    assert diagrams.main([str(tmp_path)]) == 0
    files = {name: tmp_path / f"{name}.svg" for name in NAMES}
    assert all(files[name].read_bytes() == diagrams.FIGURES[name]().encode() for name in NAMES)
    stamps = {name: path.stat().st_mtime_ns for name, path in files.items()}
    os.utime(files["bahdanau"], ns=(1, 1))  # an old stamp: rewriting it would show
    assert diagrams.main([str(tmp_path)]) == 0
    assert files["bahdanau"].stat().st_mtime_ns == 1 and all(
        files[n].stat().st_mtime_ns == stamps[n] for n in NAMES if n != "bahdanau"
    )
    capsys.readouterr()

    files["transformer"].write_text("hand-edited", encoding="utf-8")
    files["multi_head"].unlink()
    assert diagrams.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "transformer.svg" in err and "--force" in err
    assert files["transformer"].read_text(encoding="utf-8") == "hand-edited"
    assert not files["multi_head"].exists(), "a refused run writes nothing"

    assert diagrams.main([str(tmp_path), "--force"]) == 0
    assert files["transformer"].read_bytes() == diagrams.transformer().encode()
    assert files["multi_head"].read_bytes() == diagrams.multi_head().encode()
    assert "transformer.svg" in capsys.readouterr().out


def test_cli_as_a_module_exits_1_on_a_differing_file(tmp_path):
    (tmp_path / "bert_vs_gpt.svg").write_text("<svg/>", encoding="utf-8")
    command = [sys.executable, "-m", "attn.viz.diagrams", str(tmp_path)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert result.returncode == 1 and result.stderr.startswith("error: ") and "bert_vs_gpt.svg" in result.stderr
    assert (tmp_path / "bert_vs_gpt.svg").read_text(encoding="utf-8") == "<svg/>"
    assert not (tmp_path / "bahdanau.svg").exists()


def test_cli_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        diagrams.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "OUTDIR" in out and "--force" in out and "overwrite" in out
