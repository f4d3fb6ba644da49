"""The benchmark scripts still run and print their tables (no timing is asserted here)."""

import os
import subprocess
import sys

import pytest
from notebook_utils import MODEL_MISSING, ROOT

sys.path.insert(0, str(ROOT / "tests" / "browser"))
from browser_utils import chromium_path  # noqa: E402


def run_benchmark(script: str, *args: str) -> str:
    """The stdout of ``benchmarks/<script> args``, after checking that it exited cleanly."""
    command = [sys.executable, str(ROOT / "benchmarks" / script), *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_attention_core_benchmark_prints_its_table():
    out = run_benchmark("attention_core.py", "--quick", "--threads", "1")
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "attn ms" in line)
    assert lines[header].split("|")[3:8] == [" attn ms ", " math ms ", " attn / math ", " fused ms ", " attn / fused "]
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines[header + 2 : header + 6]]
    assert [row[1] for row in rows] == ["none", "causal"] * 2
    for row in rows:
        attn_ms, math_ms, ratio = float(row[2]), float(row[3]), float(row[4])
        assert ratio == pytest.approx(attn_ms / math_ms, rel=0.05, abs=0.01)
    assert "attn's causal / unmasked time" in out


def test_alignment_benchmark_prints_both_tables():
    out = run_benchmark("alignment.py", "--quick")
    lines = out.splitlines()
    modules = lines[lines.index(next(line for line in lines if "attn ms" in line)) + 1 :][:3]
    assert [row.split()[0] for row in modules] == ["additive", "dot", "general"]
    assert all(float(row.split()[-1]) > 0 for row in modules)  # ratio column
    header = next(i for i, line in enumerate(lines) if "steps to 95%" in line)
    rows = [line.split() for line in lines[header + 1 : header + 5]]
    assert [row[0] for row in rows] == ["additive", "dot", "general", "none"]
    # one step of each model, stepped in turn in one process: parameters, ms per step and the ratio to dot's
    header = next(i for i, line in enumerate(lines) if "ms/step  / dot" in line)
    steps = {row[0]: row for row in (line.split() for line in lines[header + 1 : header + 5])}
    assert list(steps) == ["additive", "dot", "general", "none"]
    assert steps["dot"][1] == steps["none"][1]  # the matched control: the same number of parameters
    assert float(steps["dot"][3]) == 1.0 and all(float(row[2]) > 0 for row in steps.values())


BABI = ROOT.parent / "shared" / "babi" / "en"


@pytest.mark.skipif(not BABI.is_dir(), reason=f"the real bAbI 1k files are not at {BABI}")
def test_babi_table_benchmark_prints_its_tables():
    out = run_benchmark("babi_table.py", "--quick", "--jobs", "1")
    hop = next(line for line in out.splitlines() if line.strip().startswith("memory_read")).split()
    ours, theirs, ratio = float(hop[-3]), float(hop[-2]), float(hop[-1])
    assert ours > 0 and theirs > 0 and ratio == pytest.approx(ours / theirs, rel=0.05, abs=0.01)
    assert "MemN2N training step" in out
    rows = [line for line in out.splitlines() if line.startswith("| 1 |") or line.startswith("| 16 |")]
    assert len(rows) == 4 and out.count("| mean |") == 2  # one model per task, then the joint model
    assert "lowest train error (the paper's rule) %" in out and "paper PE LS RN joint %" in out


def test_transformer_benchmark_prints_both_tables():
    out = run_benchmark("transformer.py", "--quick", "--threads", "1")
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "attn ms" in line)
    attention = [line.split() for line in lines[header + 1 :]][:4]
    assert [row[-6] for row in attention] == ["weights", "fused"] * 2
    assert all(float(row[-3]) > 0 for row in attention)  # ratio column
    header = next(i for i, line in enumerate(lines) if "tokens/s" in line and "steps/s" in line)
    training = [line.split() for line in lines[header + 1 : header + 4]]
    assert [row[0] for row in training] == ["attn", "torch", "attn+weights"]
    assert all(float(row[-2]) > 0 for row in training)  # ratio column
    header = next(i for i, line in enumerate(lines) if "equation ms" in line)
    norms = [line.split() for line in lines[header + 1 : header + 4]]
    assert [row[:3] for row in norms] == [["64,", "12,", "64"], ["100,", "37,", "32"], ["32,", "37,", "32"]]
    assert all(float(x) > 0 for row in norms for x in row[3:])  # times and ratios


@pytest.mark.skipif(MODEL_MISSING is not None, reason=str(MODEL_MISSING))
def test_pretrained_benchmark_prints_its_table():
    out = run_benchmark("pretrained.py", "--quick", "--threads", "1")
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "load+embed s" in line)
    rows = [line.split() for line in lines[header + 1 : header + 5]]
    names = [row[0] for row in rows]  # transformers' default attention: sdpa in transformers 5
    assert names[:2] == ["attn", "attn-no-sha"] and names[2].startswith("transformers-")
    assert names[3] == "transformers-eager"
    reference = float(rows[2][4])  # load+embed s of transformers with its default attention
    for row in rows:
        load, embed, total, ratio = (float(x) for x in row[2:6])
        assert load > 0 and embed > 0 and total == pytest.approx(load + embed, abs=0.002)
        assert ratio == pytest.approx(total / reference, rel=0.05, abs=0.01)
    assert float(rows[2][5]) == 1.0
    goal = next(line for line in lines if line.startswith("goal met:"))
    assert goal.split()[2] in ("yes", "no") and "<= 1.2" in goal
    diffs = [float(line.split("=")[-1]) for line in lines if line.startswith("same embeddings:")]
    assert len(diffs) == 3 and max(diffs) < 1e-5


def test_viewer_benchmark_prints_its_table():
    if chromium_path() is None and os.environ.get("ATTN_REQUIRE_BROWSER") != "1":
        pytest.skip("Chromium is not installed (make test installs it where it can)")
    out = run_benchmark("viewer.py", "--quick")
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "draw ms" in line)
    attn_row, bertviz_row = (line.split() for line in lines[header + 1 : header + 3])
    assert (attn_row[1], bertviz_row[1]) == ("attn", "bertviz")
    assert float(attn_row[2]) < float(bertviz_row[2])  # the viewer's fragment is smaller than bertviz's
    assert all(float(x) > 0 for x in attn_row[7:])  # ratios


def test_memory_benchmark_prints_both_tables():
    out = run_benchmark("memory.py", "--quick", "--threads", "1")
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "L=16 <=1" in line)
    assert [line.split()[0] for line in lines[header + 1 : header + 3]] == ["NTM", "LSTM"]
    header = next(i for i, line in enumerate(lines) if "DNC ms/step" in line)
    rows = [line.split() for line in lines[header + 1 :] if line.strip()]
    assert [row[0] for row in rows] == ["16", "64"] and all(float(row[3]) > 0 for row in rows)  # ratio column


def test_vision_benchmark_prints_its_tables():
    out = run_benchmark("vision.py", "--quick", "--threads", "1")
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "to goal s" in line)
    names = [line[:16].strip() for line in lines[header + 1 : header + 6]]
    assert names == ["soft attention", "average pooling", "hard attention", "ViT", "hybrid"]
    assert lines[header + 3].split()[-1].replace(".", "").isdigit()  # the hard model's variance ratio
    header = next(i for i, line in enumerate(lines) if line.strip().startswith("training scenes"))
    assert [line[:16].strip() for line in lines[header + 1 : header + 4]] == ["ViT", "hybrid", "CNN + attention"]
    header = next(i for i, line in enumerate(lines) if "fused ms" in line)
    row = lines[header + 1].split()
    assert row[-7] == "37" and float(row[-3]) > 0  # tokens, ratio against torch
    header = next(i for i, line in enumerate(lines) if "values read" in line)
    costs = {(line[:9].strip(), line[10:31].strip()): line[31:].split() for line in lines[header + 1 : header + 7]}
    read = {key: (int(row[0].replace(",", "")), int(row[1].replace(",", ""))) for key, row in costs.items()}
    assert read["24 x 24", "soft"] == read["24 x 24", "hard"] == (1728, 1728)  # every pixel value, both
    assert read["48 x 48", "hard, no coarse view"][0] <= 2 * 3 * (6**2 + 12**2) < 6912  # only its glimpses


def test_generation_benchmark_prints_its_table():
    out = run_benchmark("generation.py", "--quick", "--threads", "1")
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "no cache s" in line and "speed-up" in line)
    rows = [line.split() for line in lines[header + 1 :] if line.strip()]
    assert [(row[0], int(row[-5])) for row in rows] == [("chapter", 8), ("chapter", 32)]  # model, tokens
    for row in rows:
        without, cached, speed_up = (float(x) for x in row[-4:-1])
        assert without > 0 and cached > 0
        half = 0.0005  # the seconds are printed to 3 decimals: at the quick sizes that rounding is most of a ratio
        low, high = (without - half) / (cached + half), (without + half) / max(cached - half, 1e-9)
        assert low - 0.05 <= speed_up <= high + 0.05, (row, low, high)  # the speed-up is printed to 1 decimal
        assert row[-1] == "yes"  # the same tokens with and without the cache


def test_decoding_benchmark_prints_its_table():
    out = run_benchmark("decoding.py", "--quick", "--repeat", "1")
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if "whole batch every step s" in line)
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[header + 2 :] if line.strip()]
    assert [row[0] for row in rows] == ["greedy", "beam search, 1 beam", "beam search, 4 beams"]
    library, reference, ratio = (float(x) for x in rows[0][1:4])
    assert library > 0 and reference > 0 and rows[0][4] == "True"  # the same tokens as the whole-batch loop
    half = 0.0005  # seconds printed to 3 decimals
    assert (library - half) / (reference + half) - 0.01 <= ratio <= (library + half) / (reference - half) + 0.01
    assert all(float(row[1]) > 0 for row in rows[1:])


def test_scale_benchmark_prints_memory_and_time_tables():
    out = run_benchmark("scale.py", "--quick", "--threads", "1")
    lines = out.splitlines()
    header = lines.index("| T | attn MiB | tiled MiB | fused MiB | tiled / attn |")
    rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines[header + 2 : header + 4]]
    assert [row[0] for row in rows] == ["1024", "2048"]
    for row in rows:
        if "n/a" not in row:
            assert float(row[4]) == pytest.approx(float(row[2]) / float(row[1]), rel=0.05, abs=0.01)
    assert "attn's peak memory grows as T^" in out and "tiled / fused forward time at most" in out


def test_fast_weights_benchmark_prints_generation_and_cache_tables():
    out = run_benchmark("fast_weights.py", "--quick", "--threads", "1")
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| T | softmax + cache s"))
    assert [line.split("|")[1].strip() for line in lines[header + 2 : header + 5]] == ["128", "256", "512"]
    assert "linear attention p = " in out
    cache = lines[lines.index("| key/value heads | bytes per token | vs full heads |") + 2 :][:3]
    assert [row.split("|")[3].strip() for row in cache] == ["1.00", "0.50", "0.25"]


def test_explain_benchmark_prints_every_models_table():
    out = run_benchmark("explain.py", "--quick", "--seeds", "2", "--examples", "20")
    lines = out.splitlines()
    header = (
        "| map | mass on truth | rank of truth | top-1 | deletion area | left after |truth| removed | ms"
        " | AP | excess |"
    )
    starts = [i for i, line in enumerate(lines) if line == header]
    maps = [
        [
            "last hop",
            "hops summed",
            "A x grad last",
            "A x grad hops",
            "grad x input",
            "occlusion",
            "the truth itself",
            "random",
        ],
        ["attention", "A x grad", "grad x input", "occlusion", "the truth itself", "random"],
        ["last layer", "rollout", "A x grad last", "grad x input", "occlusion", "the truth itself", "random"],
    ]
    assert len(starts) == 3
    spreads = []
    for start, names in zip(starts, maps, strict=True):
        rows = [[cell.strip() for cell in line.split("|")[1:-1]] for line in lines[start + 2 : start + 2 + len(names)]]
        assert [row[0] for row in rows] == names
        for row in rows:
            cells = (map(float, cell.split(" ± ")) for cell in row[1:6])
            (mass, sd_mass), (rank, _), (top1, _), (area, _), (left, _) = cells
            assert 0 <= mass <= 1 and rank >= 1 and 0 <= top1 <= 1 and area > 0 and left >= 0 and float(row[6]) >= 0
            (ap, _), (excess, _) = (map(float, cell.split(" ± ")) for cell in row[7:9])
            assert 0 <= ap <= 1 and excess <= 1  # average precision; mass corrected for chance (negative below it)
            if row[0] == "the truth itself":
                assert ap == 1.0 and excess == 1.0
            spreads.append(sd_mass)
    assert any(sd > 0 for sd in spreads)  # two seeds: a spread
    jain_wallace = lines[lines.index("| measure | value |") + 2 :][:8]
    values = {row.split("|")[1].strip(): float(row.split("|")[2].split("±")[0]) for row in jain_wallace}
    assert list(values)[:3] == ["JSD mean", "JSD median", "JSD > 0.3"]
    assert 0 <= values["JSD median"] <= 0.6932 and 0 <= values["permuted TVD median"] <= 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--chapters", "99"], "--chapters 99: no chapter with a 'SEED = 0' parameter matches"),
        (["--chapters", "01"], "--chapters 01: no chapter with a 'SEED = 0' parameter matches"),
        (["--chapters", "02", "--json", "/nonexistent/claims.json"], "--json /nonexistent/claims.json: cannot write"),
    ],
)
def test_claims_refuses_a_selection_that_measures_nothing_before_running(args, message):
    """A filter that matches no chapter with a seed, or a --json it cannot write, is a usage error at once."""
    command = [sys.executable, str(ROOT / "benchmarks" / "claims.py"), "--seeds", "0", *args]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 2 and message in result.stderr, result.stderr[-500:]


def test_claims_counts_the_nulls_of_the_committed_chapters():
    out = run_benchmark("claims.py", "--nulls")
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| ")]
    assert [c.strip() for c in rows[0]] == ["chapter", "claims", "with a null", "no null, with a reason", "neither"]
    counts = {r[0].strip(): [int(x) for x in r[1:]] for r in rows[2:]}
    assert counts["01_softmax"] == [0, 0, 0, 0] and len(counts) == 14
    assert all(total == a + b + c for total, a, b, c in counts.values())
    assert counts["all"][0] == sum(v[0] for k, v in counts.items() if k != "all")


def test_browser_model_benchmark_weighs_the_three_files():
    if MODEL_MISSING:
        pytest.skip(MODEL_MISSING)
    out = run_benchmark("browser_model.py", "--repeats", "2")
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in out.splitlines() if line.startswith("| ")}
    assert set(rows) >= {"float32 (shipped)", "float16 weights", "float16", "int8"}
    assert rows["float32 (shipped)"][-1].strip() == "yes"  # the shipped file is within the view's bound
    sizes = {name: float(cells[0]) for name, cells in rows.items() if name not in ("file", "---")}
    assert sizes["int8"] < sizes["float16"] < sizes["float32 (shipped)"]
