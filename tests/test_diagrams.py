"""The book's figures: the schematics kept as SVG files and the figures drawn from data by book/diagrams.py
(committed files up to date), all accessible self-contained SVG whose labels name what the code really has, and a
command line that never overwrites a hand-edited file by accident."""

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
from attn.blocks.layers import FeedForward
from attn.transformer.mixers import TokenMixer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book"))  # the figures drawn from data are made by book/diagrams.py, not by attn
import diagrams  # noqa: E402

FIGURES_DIR = ROOT / "notebooks" / "figures"
SVG = "{http://www.w3.org/2000/svg}"
NAMES = sorted(p.stem for p in FIGURES_DIR.glob("*.svg"))  # every figure: the schematics and the drawn ones
DRAWN = sorted(diagrams.FIGURES)  # the figures drawn from data by book/diagrams.py


def svg(name: str) -> str:
    """A figure's committed SVG text."""
    return (FIGURES_DIR / f"{name}.svg").read_text(encoding="utf-8")


def labels(name: str) -> str:
    """Every text element of a figure, one per line (tspans joined)."""
    root = ET.fromstring(svg(name))
    return "\n".join("".join(t.itertext()) for t in root.iter(f"{SVG}text"))


@pytest.mark.parametrize("name", DRAWN)
def test_committed_file_is_what_the_generator_draws(name):
    path = FIGURES_DIR / f"{name}.svg"
    assert path.is_file(), f"{path} is missing: run python book/diagrams.py notebooks/figures --force"
    assert path.read_bytes() == diagrams.FIGURES[name]().encode("utf-8"), (
        f"{path.relative_to(ROOT)} differs from book/diagrams.py: edit the generator, not the file, and run "
        "python book/diagrams.py notebooks/figures --force"
    )


def test_the_folder_holds_exactly_the_figures():
    assert DRAWN == ["bert_vs_gpt", "positions", "soft_lookup", "tiles"]  # masks, waves, weights, tiles
    assert NAMES == sorted(
        ["bahdanau", "memory_hops", "soft_dictionary", "multi_head", "transformer", "bert_vs_gpt"]
        + ["soft_lookup", "ntm", "dnc_step", "glimpse_loop", "vit", "positions", "bert_mapping", "tiles", "explain"]
    )


@pytest.mark.parametrize(
    "name", ["soft_lookup", "ntm", "dnc_step", "glimpse_loop", "vit", "positions", "bert_mapping", "tiles", "explain"]
)
def test_fits_the_content_column(name):
    root = ET.fromstring(svg(name))
    assert int(root.get("width")) <= 680, "the book's column is 688 px wide: the figure is shown at 1:1"
    sizes = [float(e.get("font-size")) for e in root.iter() if e.get("font-size")]
    assert min(sizes) >= 12, "text at least 12 px"


@pytest.mark.parametrize("name", NAMES)
def test_accessible_self_contained_and_deterministic(name):
    text = svg(name)
    if name in DRAWN:
        assert diagrams.FIGURES[name]() == diagrams.FIGURES[name](), "the same bytes on every call"
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
    assert "alignments (B, T, S)" in words and "(B, T, S)" in attn.seq2seq.Seq2SeqOutput.__doc__


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
    files = {name: tmp_path / f"{name}.svg" for name in DRAWN}
    assert sorted(p.stem for p in tmp_path.iterdir()) == DRAWN, "the schematics are files, not drawn"
    assert all(files[name].read_bytes() == diagrams.FIGURES[name]().encode() for name in DRAWN)
    stamps = {name: path.stat().st_mtime_ns for name, path in files.items()}
    os.utime(files["tiles"], ns=(1, 1))  # an old stamp: rewriting it would show
    assert diagrams.main([str(tmp_path)]) == 0
    assert files["tiles"].stat().st_mtime_ns == 1 and all(
        files[n].stat().st_mtime_ns == stamps[n] for n in DRAWN if n != "tiles"
    )
    capsys.readouterr()

    files["positions"].write_text("hand-edited", encoding="utf-8")
    files["soft_lookup"].unlink()
    assert diagrams.main([str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "positions.svg" in err and "--force" in err
    assert files["positions"].read_text(encoding="utf-8") == "hand-edited"
    assert not files["soft_lookup"].exists(), "a refused run writes nothing"

    assert diagrams.main([str(tmp_path), "--force"]) == 0
    assert files["positions"].read_bytes() == diagrams.positions().encode()
    assert files["soft_lookup"].read_bytes() == diagrams.soft_lookup().encode()
    assert "positions.svg" in capsys.readouterr().out


def test_cli_as_a_module_exits_1_on_a_differing_file(tmp_path):
    (tmp_path / "bert_vs_gpt.svg").write_text("<svg/>", encoding="utf-8")
    command = [sys.executable, str(ROOT / "book" / "diagrams.py"), str(tmp_path)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    assert result.returncode == 1 and result.stderr.startswith("error: ") and "bert_vs_gpt.svg" in result.stderr
    assert (tmp_path / "bert_vs_gpt.svg").read_text(encoding="utf-8") == "<svg/>"
    assert not (tmp_path / "tiles.svg").exists()


def test_cli_help(capsys):
    with pytest.raises(SystemExit) as exit_info:
        diagrams.main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "OUTDIR" in out and "--force" in out and "overwrite" in out


def _group_texts(name: str, group: str) -> list[str]:
    root = ET.fromstring(svg(name))
    (g,) = [g for g in root.iter(f"{SVG}g") if g.get("id") == group]
    return [t.text for t in g.iter(f"{SVG}text")]


def test_soft_lookup_draws_what_softmax_and_attend_compute():
    words = labels("soft_lookup").replace("\u2002", "  ")
    F = attn.functional
    for call in ("dot_product_scores(query, key)", "softmax(scores, temperature=τ)", "weights @ V", "argmax"):
        assert call in words
    assert list(inspect.signature(F.dot_product_scores).parameters) == ["query", "key"]
    assert "temperature" in inspect.signature(F.softmax).parameters
    assert list(inspect.signature(F.attend).parameters)[:2] == ["scores", "value"]
    assert "attend(scores, value) returns (output, weights)" in words
    scores = torch.tensor(diagrams._SCORES)
    drawn_hard = [float(v) for v in _group_texts("soft_lookup", "soft_lookup-hard")[::2]]
    assert drawn_hard == nn.functional.one_hot(scores.argmax(), len(scores)).tolist()  # the argmax, one-hot
    for tau in diagrams._TEMPERATURES:
        drawn = [float(v) for v in _group_texts("soft_lookup", f"soft_lookup-tau-{tau:g}")[::2]]
        assert drawn == [round(w, 2) for w in F.softmax(scores.double(), temperature=tau).tolist()]
        assert f"τ = {tau:g}" in words
    q, K, V = torch.randn(1, 5), torch.randn(4, 5), torch.randn(4, 3)  # Tk = 4 keys of d_k = 5
    output, weights = F.attend(F.dot_product_scores(q, K), V)
    assert torch.allclose(output, weights @ V) and torch.allclose(weights.sum(-1), torch.ones(1))
    expected = F.softmax(q @ K.T, temperature=5**0.5) @ V  # "scaled_dot_product_attention uses τ = √d_k"
    assert torch.allclose(F.scaled_dot_product_attention(q, K, V)[0], expected, atol=1e-6)
    assert "τ = √d_k" in words


def test_ntm_names_the_modules_and_addressing_functions_of_the_code():
    from attn import memory
    from attn.memory import NTM, NTMConfig

    words = labels("ntm").replace("\u2002", "  ")
    config = NTMConfig(input_size=3, output_size=2)
    model = NTM(config)
    assert "nn.LSTMCell" in words and isinstance(model.controller, nn.LSTMCell)
    for name in ("controller", "read_head", "write_head", "output"):
        assert name in words and hasattr(model, name)
    W, S, H = config.memory_width, 2 * config.shift_range + 1, config.hidden
    assert model.controller.input_size == config.input_size + W and "reads [xₜ; rₜ₋₁]" in words
    assert model.output.in_features == H + W and "[hₜ; rₜ] → logits" in words
    assert model.read_head.out_features == W + 1 + 1 + S + 1 and "k, β, g, s, γ" in words  # key, β, g, s, γ
    assert model.write_head.out_features == W + 1 + 1 + S + 1 + 2 * W and "erase e, add a" in words
    for name, eq in (("content_addressing", "eq. 5"), ("interpolate", "eq. 7"), ("shift", "eq. 8"),
                     ("sharpen", "eq. 9"), ("write", "eqs. 3-4"), ("read", "eq. 2")):  # fmt: skip
        assert f"{name}  {eq}" in words and name in memory.__all__
        documented = memory.addressing.__doc__ + getattr(memory, name).__doc__  # the module names eq. 5 of eqs. 5-6
        assert f":func:`{name}` ({eq})" in documented or f"(NTM {eq}" in documented
    assert re.findall(r"\baddress\b", words) == ["address"] * 2  # address = the four stages, for each head
    assert "address" in memory.__all__
    source = inspect.getsource(memory.address)
    assert source.index("content_addressing(") < source.index("sharpen(shift(interpolate(")
    forward = inspect.getsource(NTM.forward)
    assert forward.index("self.write_head(h)") < forward.index("write(memory") < forward.index("self.read_head(h)")
    for carried in ("Mₜ₋₁", "wʷₜ₋₁", "wʳₜ₋₁", "rₜ₋₁", "(h, c)ₜ₋₁"):  # what step t takes from step t - 1
        assert carried in words


def test_dnc_step_names_the_bookkeeping_functions_in_the_order_forward_calls_them():
    from attn.memory import DNC, dynamic_allocation, temporal_linkage

    words = labels("dnc_step").replace("\u2002", "  ")
    drawn = ("retention", "usage", "allocation", "write_weighting", "link_matrix", "precedence",
             "directional_weightings", "read_weighting")  # fmt: skip
    for name in drawn:
        assert name in words and name in dynamic_allocation.__all__ + temporal_linkage.__all__
    assert "cʷ = C(Mₜ₋₁, kʷ, βʷ)" in words and "cʳ = C(Mₜ, kʳ, βʳ)" in words  # before and after the write
    # the paper's C(M, k, β) and the function's own argument order, side by side
    assert (
        "C(M, k, β) = content_addressing(k, M, β)" in words and "C(M, k, β)" in attn.memory.content_addressing.__doc__
    )
    assert list(inspect.signature(attn.memory.content_addressing).parameters)[:3] == ["key", "memory", "strength"]
    assert "write → Mₜ" in words and "read → rₜ" in words
    forward = inspect.getsource(DNC.forward)
    calls = (
        "usage(u, w_write, retention(free, w_read))",
        "content_addressing(k_w, memory",
        "write_weighting(allocation(u), c_w, g_a, g_w)",
        "write(memory",
        "link_matrix(links, w_write, p)",
        "precedence(p, w_write)",
        "content_addressing(k_r.view(B, R, W), memory.unsqueeze(1)",
        "directional_weightings(links, w_read)",
        "read_weighting(backward, c_r, forward, modes)",
        "read(memory, w_read)",
    )
    assert [forward.index(call) for call in calls] == sorted(forward.index(call) for call in calls)
    for carried in ("uₜ₋₁", "wʷₜ₋₁", "wʳₜ₋₁", "pₜ₋₁", "Lₜ₋₁", "Mₜ₋₁"):
        assert carried in words
    B, R, N, W = 2, 3, 5, 4  # the shapes drawn on the left edge go through the functions
    w_read, u, w_write = torch.rand(B, R, N).softmax(-1), torch.rand(B, N), torch.rand(B, N).softmax(-1)
    links, p, memory = torch.rand(B, N, N), torch.rand(B, N).softmax(-1), torch.randn(B, N, W)
    for shape in ("(B, R, N)", "(B, N, N)", "(B, N)", "(B, N, W)"):
        assert shape in words
    psi = dynamic_allocation.retention(torch.rand(B, R), w_read)
    u_t = dynamic_allocation.usage(u, w_write, psi)
    _, c_w = attn.memory.content_addressing(torch.randn(B, W), memory, torch.ones(B))
    w_t = dynamic_allocation.write_weighting(dynamic_allocation.allocation(u_t), c_w, 0.5, 1.0)
    L_t = temporal_linkage.link_matrix(links, w_t, p)
    forward_w, backward_w = temporal_linkage.directional_weightings(L_t, w_read)
    assert torch.allclose(forward_w, (L_t @ w_read.transpose(1, 2)).transpose(1, 2))  # f = L_t w^r_{t-1}
    assert torch.allclose(backward_w, (L_t.transpose(1, 2) @ w_read.transpose(1, 2)).transpose(1, 2))  # b = Lᵀ w
    assert "f = Lₜ wʳₜ₋₁,  b = Lₜᵀ wʳₜ₋₁" in words
    c_r = torch.rand(B, R, N).softmax(-1)
    for k, mode in enumerate((backward_w, c_r, forward_w)):  # π[1] picks b, π[2] cʳ, π[3] f
        modes = nn.functional.one_hot(torch.full((B, R), k), 3).float()
        assert torch.allclose(temporal_linkage.read_weighting(backward_w, c_r, forward_w, modes), mode)
    assert "π[1] b + π[2] cʳ + π[3] f" in words
    assert "L_t uses p_{t-1}" in forward and "from Lₜ₋₁, wʷₜ, pₜ₋₁" in words


def test_glimpse_loop_names_the_parts_of_recurrent_attention():
    from attn.vision.glimpse import glimpse, glimpse_boxes
    from attn.vision.model import RAMConfig, RecurrentAttention
    from attn.vision.ram import ram_loss

    words = labels("glimpse_loop").replace("\u2002", "  ")
    config = RAMConfig()
    model = RecurrentAttention(config)
    for name in ("core", "baseline", "classifier", "glimpse_net", "W_h", "W_p", "v", "question"):
        assert name in words and hasattr(model, name)
    assert "nn.GRUCell" in words and isinstance(model.core, nn.GRUCell)
    assert all(isinstance(getattr(model, name), nn.Parameter) for name in ("W_h", "W_p", "v"))
    assert "what(ρ)" in words and "where(lₜ)" in words and {"what", "where"} <= set(dict(model.named_children()))
    forward = inspect.getsource(RecurrentAttention.forward)
    for call in ("adaptive_avg_pool2d", "additive_scores", "h.detach()", "argmax", "sample(log_pi.exp()"):
        assert call in forward
    for drawn in ("adaptive_avg_pool2d", "additive_scores", "h.detach()", "argmax (eval)", "sampled from π"):
        assert drawn in words
    assert f"each glimpse ({config.glimpses} in RAMConfig)" in words
    widths = glimpse_boxes(torch.zeros(2), config.image_size, config.glimpse, config.scales)[:, 2]
    assert widths.tolist() == [6, 12] and "crops of 6, 12 px" in words and "→ 6 × 6 each" in words
    seen = glimpse(torch.rand(1, 3, 24, 24), torch.zeros(1, 2), config.glimpse, config.scales)
    assert seen.shape == (1, config.scales, 3, 6, 6)
    assert "ram_loss" in words and callable(ram_loss) and "REINFORCE" in words
    root = ET.fromstring(svg("glimpse_loop"))
    assert any(p.get("stroke-dasharray") for p in root.iter(f"{SVG}polyline")), "the sampled step is dashed"
    model.eval()
    out = model(torch.rand(2, 3, 24, 24), torch.tensor([0, 1]))
    assert out.policy.shape == (2, config.glimpses, config.grid, config.grid) and "softmax over grid²" in words


def test_vit_names_the_attributes_and_shapes_of_the_code():
    from attn.vision import ConvStem, PatchEmbedding, ViT, ViTConfig, attention_rollout, class_token_map, patchify

    words = labels("vit").replace("\u2002", "  ")
    model = ViT(ViTConfig())
    for name in ("stem", "cls", "question", "positions", "encoder", "head"):
        assert name in words and hasattr(model, name)
    assert "stem: PatchEmbedding" in words and isinstance(model.stem, PatchEmbedding)
    assert "E: Linear(48, d_model)" in words and model.stem.E.in_features == 48
    hybrid = ViT(ViTConfig(stem="conv", positions=False))
    assert "hybrid: ConvStem" in words and isinstance(hybrid.stem, ConvStem) and hybrid.positions is None
    assert "hybrid: positions=False" in words
    assert patchify(torch.rand(2, 3, 24, 24), 4).shape == (2, 36, 48) and "(B, 36, 48) = (B, N, C·P·P)" in words
    assert "positions: LearnedPositions" in words and tuple(model.positions.table.shape) == (37, model.config.d_model)
    assert "E_pos = table (37, d_model)" in words
    assert "norm_first=True" in words and all(layer.norm_first for layer in model.encoder.layers)
    assert "final LayerNorm" in words and model.encoder.norm is not None
    out = model(torch.rand(2, 3, 24, 24), torch.tensor([0, 1]))
    H = model.config.num_heads
    assert all(a.shape == (2, H, 37, 37) for a in out.attention) and "(B, H, 37, 37)" in words
    assert "attention_rollout" in words and "class_token_map(·, grid=6)" in words
    assert class_token_map(attention_rollout(out.attention), 6).shape == (2, 6, 6) and "(B, 6, 6)" in words
    assert "x[:, 0]" in inspect.getsource(ViT.forward) and "x[:, 0]" in words
    assert "cls + question(q)" in words and "self.cls + self.question(question)" in inspect.getsource(ViT.forward)


def test_positions_names_the_tables_and_the_scaling_of_the_code():
    from attn.blocks import LearnedPositions, SinusoidalPositions, sinusoidal_positions
    from attn.transformer import Embedding
    from attn.transformer.model import POSITIONS

    words = labels("positions").replace("\u2002", "  ")
    sinusoidal = Embedding(10, 16, 8, "sinusoidal", 0.0, 0)
    learned = Embedding(10, 16, 8, "learned", 0.0, 0)
    assert "tokens: nn.Embedding" in words and isinstance(sinusoidal.tokens, nn.Embedding)
    assert "× √d_model" in words and "math.sqrt(self.d_model)" in inspect.getsource(Embedding.forward)
    assert "SinusoidalPositions" in words and isinstance(sinusoidal.positions, SinusoidalPositions)
    assert "LearnedPositions" in words and isinstance(learned.positions, LearnedPositions)
    assert not list(sinusoidal.positions.parameters()) and "table" in dict(sinusoidal.positions.named_buffers())
    assert isinstance(learned.positions.table, nn.Parameter) and "table = nn.Parameter (max_len, d_model)" in words
    assert inspect.signature(LearnedPositions).parameters["std"].default == 0.5 and "N(0, 0.5²)" in words
    assert "table = sinusoidal_positions(max_len, d_model)" in words
    assert list(inspect.signature(SinusoidalPositions.forward).parameters)[1:] == ["x", "start"]
    assert "positions(x, start)" in words and "+ table[start : start + T]" in words
    assert "PE(pos, 2i) = sin(pos / 10000^{2i/d_model})" in sinusoidal_positions.__doc__
    assert "PE(pos, 2i) = sin(pos / ωᵢ)" in words and "ωᵢ = 10000" in words
    table = sinusoidal_positions(41, 16)  # the drawn columns 0, 1, 4, 5: sin, cos pairs of lower frequency
    pos = torch.arange(41.0)
    assert torch.allclose(table[:, 4], torch.sin(pos / 10000 ** (4 / 16)), atol=1e-5)
    assert torch.allclose(table[:, 5], torch.cos(pos / 10000 ** (4 / 16)), atol=1e-5)
    for module in (SinusoidalPositions(8, max_len=4), LearnedPositions(8, max_len=4)):
        with pytest.raises(ValueError, match="max_len"):
            module(torch.zeros(1, 5, 8))
    assert "T > max_len (a ValueError)" in words
    for choice in ('positions="sinusoidal"', '"learned"', 'positions="none"'):
        assert choice in words and choice.split('"')[1] in POSITIONS


_LAYER = "encoder.layer.i."  # a Hugging Face layer's prefix; attn's is encoder.layers.i.
_BERT_ROWS = (  # (Hugging Face name, attn name) as the figure draws them, i the layer
    ("embeddings.word_embeddings", "embedding.tokens"),
    ("embeddings.position_embeddings", "embedding.positions"),
    ("embeddings.token_type_embeddings", "embedding.segments"),
    ("embeddings.LayerNorm", "embedding.norm"),
    (_LAYER + "attention.self.query", "encoder.layers.i.self_attention.W_q"),
    (_LAYER + "attention.self.key", "encoder.layers.i.self_attention.W_k"),
    (_LAYER + "attention.self.value", "encoder.layers.i.self_attention.W_v"),
    (_LAYER + "attention.output.dense", "encoder.layers.i.self_attention.W_o"),
    (_LAYER + "attention.output.LayerNorm", "encoder.layers.i.norm1"),
    (_LAYER + "intermediate.dense", "encoder.layers.i.feed_forward.W_1"),
    (_LAYER + "output.dense", "encoder.layers.i.feed_forward.W_2"),
    (_LAYER + "output.LayerNorm", "encoder.layers.i.norm2"),
)


def test_bert_mapping_draws_what_checkpoint_names_maps():
    from attn.pretrained import Bert, BertConfig, checkpoint_names, embed_sentences, load_bert, mean_pool

    words = labels("bert_mapping").replace("\u2002", "  ")
    drawn = {}  # every tensor the figure names: .weight (and .bias but for the three tables); LayerNorm: gamma, beta
    for theirs, ours in _BERT_ROWS:
        assert theirs in words
        norm, table_only = theirs.endswith("LayerNorm"), theirs.endswith("_embeddings")
        for i in range(6):
            hf, attn_name = theirs.replace(".i.", f".{i}."), ours.replace(".i.", f".{i}.")
            drawn[f"{hf}.weight"] = f"{attn_name}.{'gamma' if norm else 'weight'}"
            if not table_only:
                drawn[f"{hf}.bias"] = f"{attn_name}.{'beta' if norm else 'bias'}"
    assert drawn == checkpoint_names(6), "the figure draws the whole mapping table, as the code has it"
    assert "each name + .weight and .bias (the three tables: .weight only)" in words
    for short in ("tokens (", "+ positions (", "+ segments (", "embedding.norm", "W_q:", "W_k:", "W_v:", "W_o:",
                  "add & norm1", "W_1:", "GELU", "W_2:", "add & norm2", "self_attention", "feed_forward"):  # fmt: skip
        assert short in words
    config = BertConfig()  # its defaults are all-MiniLM-L6-v2's sizes
    model = Bert(BertConfig(vocab_size=50, max_len=16))
    layer = model.encoder.layers[0]
    for name in ("tokens", "positions", "segments", "norm"):
        assert hasattr(model.embedding, name)
    assert layer.norm_first is False and layer.feed_forward.activation == "gelu" and "Post-LN" in words
    assert f"tokens ({config.vocab_size}, {config.d_model})" in words
    assert f"+ positions ({config.max_len}, {config.d_model})" in words
    assert f"+ segments ({config.type_vocab_size}, {config.d_model})" in words
    assert f"W_1: Linear({config.d_model}, {config.d_ff})" in words and f"({config.num_heads} heads)" in words
    assert f"hidden (B, T, {config.d_model})" in words and f"sentence embedding (B, {config.d_model})" in words
    assert "mean_pool" in words and callable(mean_pool) and callable(load_bert) and callable(embed_sentences)
    assert "load_bert()" in words and "embed_sentences(model, tokenizer, sentences)" in words
    assert list(inspect.signature(embed_sentences).parameters)[:3] == ["model", "tokenizer", "sentences"]


def test_bert_mapping_sizes_are_the_installed_models():
    from attn.pretrained import BertConfig, ModelNotInstalledError, model_dir

    try:
        directory = model_dir()
    except ModelNotInstalledError:
        pytest.skip("the pretrained model's package is not installed")
    installed = BertConfig.from_json(directory / "config.json")
    assert installed == BertConfig(), "the figure draws BertConfig()'s sizes: they must be all-MiniLM-L6-v2's"
    assert installed.num_layers == 6 and "i = 0 … 5" in labels("bert_mapping")


def test_tiles_names_the_functions_and_state_of_the_code():
    from attn.scale import tiled

    words = labels("tiles")
    for name in ("online_softmax_update", "block_q", "block_k"):
        assert name in words
    assert "block_q" in inspect.signature(tiled.tiled_attention).parameters
    assert "block_k" in inspect.signature(tiled.tiled_attention).parameters
    assert "L = m + log ℓ" in words and hasattr(tiled.OnlineSoftmaxState, "logsumexp")


def test_explain_names_the_functions_and_computes_what_it_draws():
    from attn import analysis

    words = labels("explain").replace("\u2002", "  ")
    drawn = ("occlusion", "gradient_x_input", "attention_x_gradient", "deletion_curve", "deletion_area",
             "map_order", "random_map", "average_precision", "mass_on_truth", "excess_mass",
             "adversarial_attention")  # fmt: skip
    for name in drawn:
        assert name in words and name in analysis.__all__ and callable(getattr(analysis, name))
    assert "p = answer(s)" in words and "answer(scale (B, N)) -> (B,)" in analysis.__doc__
    assert "(aᵢ ∂p/∂aᵢ)⁺" in words and "(A ⊙ ∂p/∂A)⁺" in analysis.attention_x_gradient.__doc__
    assert "∂p/∂sᵢ at s = 1" in words and "∂p/∂s_i`` at ``s = 1``" in analysis.gradient_x_input.__doc__
    assert "p(s = 1) − p(sᵢ = 0)" in words and "map (B, N)" in words
    w = torch.tensor([[3.0, 0.5, -1.0, 0.0]])  # a toy answer: element 0 matters most, element 2 counts against
    answer = lambda scale: torch.sigmoid(scale @ w.T).squeeze(1)  # noqa: E731
    valid = torch.ones(1, 4, dtype=torch.bool)
    ones = torch.ones(1, 4)
    for i, drop in enumerate(analysis.occlusion(answer, valid)[0]):  # p(s = 1) - p(s_i = 0)
        assert torch.isclose(drop, answer(ones)[0] - answer(ones.index_fill(1, torch.tensor([i]), 0.0))[0])
    scale = ones.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(answer(scale).sum(), scale)  # dp/ds_i at s = 1
    assert torch.allclose(analysis.gradient_x_input(answer, valid), grad)
    a = torch.tensor([[0.1, 0.6, 0.3]], requires_grad=True)  # attention a read out as p = Σᵢ aᵢ vᵢ: ∂p/∂aᵢ = vᵢ
    v = torch.tensor([[1.0, -2.0, 0.5]])
    assert torch.allclose(analysis.attention_x_gradient(a, (a * v).sum(-1)), (a * v).clamp_min(0))  # (aᵢ ∂p/∂aᵢ)⁺
    truth = torch.tensor([[True, False, False, False]])
    good, bad = torch.tensor([[4.0, 3.0, 2.0, 1.0]]), torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    assert "rank_of_truth" not in words, "the chapter scores agreement by AP, mass and excess"
    assert analysis.average_precision(good, truth, valid).item() == 1
    assert analysis.average_precision(bad, truth, valid).item() == pytest.approx(0.25)  # the true element 4th
    assert analysis.mass_on_truth(good, truth, valid).item() == pytest.approx(0.4)
    assert analysis.excess_mass(good, truth, valid).item() == pytest.approx((0.4 - 0.25) / 0.75)  # above chance
    areas = [analysis.deletion_area(analysis.deletion_curve(answer, analysis.map_order(m, valid), valid), valid)
             for m in (good, bad)]  # fmt: skip
    assert areas[0] < areas[1], "deleting the important element first: p falls sooner, a smaller area"
