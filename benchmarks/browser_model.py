"""Which file the live view ships (issue 51): chapter 11's BERT exported to ONNX as float32, float16 and int8, each
against attn's own model in torch on the same sentences.

    python benchmarks/browser_model.py [--threads 1] [--page _build/html] [--loads 3]

Columns: the file's size and gzip size (what a static host sends); the largest absolute difference of any attention
weight from torch's over three sentences (19 tokens with word pieces, one with accents, 256 tokens: the model's
limit), all 6 x 12 heads; the share of the (layer, head, query) rows whose most-attended token is torch's; the time
of one 19-token sentence in onnxruntime (Python, CPU) against torch's forward measured in the same run. The book's
bound for the view is 1e-4 (the browser test compares the page's weights with Python's at that bound).

- float16 weights: every float initializer stored as float16, cast to float32 where it is used (compute float32).
- float16: onnxruntime's ``convert_float_to_float16`` (compute in float16; inputs and outputs stay float32).
- int8: ``quant_pre_process`` (constant folding, shapes) then ``quantize_dynamic`` (int8 weights of MatMul/Gemm).

With ``--page`` (a built book's html folder: ``make book``), the shipped file in the page: chapter 11 served from
that folder on a local server, opened in headless Chromium (every other request blocked) ``--loads`` times, each
in a fresh context; per load, the model's download, the session's creation (the WebAssembly compiles) and the first
run on the view's sentence, as the page times them; then a 17-token and a 256-token run; before the click and after
the three runs, the JavaScript heap (Chrome DevTools Protocol: objects only, not the WebAssembly memory or the
ArrayBuffers that hold the model) and the resident memory of the browser's processes (Linux /proc: every process
this script started). The download is from a local server: a reader's takes the files' size over their bandwidth.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from common import ROOT, paired_medians
from onnx import helper, numpy_helper

from attn.pretrained import encode, export_onnx, load_bert, load_tokenizer

SENTENCES = [
    "The unaffable tokenizer splits uncommon words like gastroenterologist into pieces.",
    "Ångström, naïve café crème: accents are stripped before the word pieces.",
    " ".join(["attention"] * 300),  # truncated at the model's limit
]


def float16_weights(source: Path, target: Path) -> None:
    """Store float32 initializers as float16 and cast them back to float32 in the graph."""
    model = onnx.load(str(source))
    graph = model.graph
    casts, kept = [], []
    for init in graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT or np.prod(init.dims) < 16:
            kept.append(init)
            continue
        half = numpy_helper.from_array(numpy_helper.to_array(init).astype(np.float16), init.name + "_fp16")
        kept.append(half)
        casts.append(helper.make_node("Cast", [half.name], [init.name], to=onnx.TensorProto.FLOAT))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = casts + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.save(model, str(target))


def float16_compute(source: Path, target: Path) -> None:
    from onnxruntime.transformers.float16 import convert_float_to_float16

    onnx.save(convert_float_to_float16(onnx.load(str(source)), keep_io_types=True), str(target))


def int8(source: Path, target: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    folded = target.with_suffix(".pre.onnx")
    quant_pre_process(str(source), str(folded), skip_symbolic_shape=True)
    quantize_dynamic(str(folded), str(target), weight_type=QuantType.QInt8)
    folded.unlink()


def compare(path: Path, reference: list[list[np.ndarray]], ids: list[np.ndarray]) -> tuple[float, float]:
    """Largest |difference| of any weight, and the share of rows whose argmax agrees."""
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    worst, same, rows = 0.0, 0, 0
    for x, ref in zip(ids, reference, strict=True):
        got = session.run(None, {"input_ids": x})[1:]
        for g, r in zip(got, ref, strict=True):
            worst = max(worst, float(np.abs(g - r).max()))
            same += int((g.argmax(-1) == r.argmax(-1)).sum())
            rows += r[..., 0].size
    return worst, same / rows


PAGE = "notebooks/11_pretrained.html"
SHORT = "The quick brown fox jumps over the lazy dog near the riverbank today."  # 17 tokens


def descendants_rss_mb(root: int) -> float:
    """Resident memory of the processes started by process ``root`` (Playwright's driver and its Chromium), MB."""
    parent, rss = {}, {}
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
        except OSError:
            continue
        pid = int(status.parent.name)
        parent[pid] = int(fields["PPid"])
        rss[pid] = int(fields.get("VmRSS", "0 kB").split()[0])
    total = 0
    for pid in rss:
        up = parent.get(pid)
        while up and up != root:
            up = parent.get(up)
        total += rss[pid] if up == root else 0
    return total / 1024


def js_heap_mb(cdp) -> float:
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return metrics["JSHeapUsedSize"] / 1e6


def run_in_page(page, text: str, runs: int) -> dict:
    live = page.locator(".attn-live")
    live.locator("textarea.al-text").fill(text)
    live.locator("button.al-go").click()
    state = "document.querySelector('.attn-live').dataset"
    page.wait_for_function(f"{state}.runs === '{runs}' || {state}.state === 'error'", timeout=300_000)
    if live.get_attribute("data-state") != "ready":
        sys.exit(f"the page could not run the model: {live.locator('.al-status').text_content()}")
    return live.evaluate("r => ({timing: r.attnLive.timing, T: r.attnLive.tokens.length})")


def measure_page(folder: Path, loads: int) -> None:
    sys.path[:0] = [str(ROOT / "tests" / "browser")]
    from browser_utils import CHROMIUM_FLAGS, chromium_path, open_page, start_server
    from playwright.sync_api import sync_playwright

    manifest = json.loads((folder / "_static" / "live" / "manifest.json").read_text())
    server = start_server(folder)
    base = f"http://127.0.0.1:{server.server_port}/"
    executable = chromium_path()
    if executable is None:
        sys.exit("Chromium is not installed (make chromium)")
    print(f"\nThe page: {PAGE}, model {manifest['bytes'] / 1e6:.1f} MB, {loads} fresh loads\n")
    print(
        "| load | download ms | session ms | first run ms (T) | short ms (T) | 256 tokens ms "
        "| JS heap MB before → after | browser RSS MB before → after |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS)
        for k in range(1, loads + 1):
            visit = open_page(browser, base, PAGE)
            page = visit.page
            cdp = page.context.new_cdp_session(page)
            cdp.send("Performance.enable")

            heap0, rss0 = js_heap_mb(cdp), descendants_rss_mb(os.getpid())
            first = run_in_page(page, page.locator(".attn-live textarea.al-text").input_value(), 1)
            short = run_in_page(page, SHORT, 2)
            long = run_in_page(page, " ".join(["attention"] * 300), 3)
            t = first["timing"]
            heap1, rss1 = js_heap_mb(cdp), descendants_rss_mb(os.getpid())
            later = [r["timing"]["run_ms"] for r in (short, long)]
            runs = f"{t['run_ms']:.0f} ({first['T']}) | {later[0]:.0f} ({short['T']}) | {later[1]:.0f}"
            print(f"| {k} | {t['download_ms']:.0f} | {t['session_ms']:.0f} | {runs} | {heap0:.1f} → {heap1:.1f} "
                  f"| {rss0:.0f} → {rss1:.0f} |")  # fmt: skip
            page.context.close()
        browser.close()
    server.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--page", type=Path, help="a built book's html folder: time the model in chapter 11's page")
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--page-only", action="store_true", help="skip the file comparison")
    args = parser.parse_args()
    if args.page_only and args.page is None:
        parser.error("--page-only needs --page (a built book's html folder)")
    if args.page_only:
        measure_page(args.page, args.loads)
        return
    torch.set_num_threads(args.threads)
    ort.set_default_logger_severity(3)  # its constant-folding notes
    bert, tokenizer = load_bert(), load_tokenizer()
    ids = [encode(tokenizer, s).ids for s in SENTENCES]
    with torch.no_grad():
        reference = [[a.numpy() for a in bert(x).attention] for x in ids]
    arrays = [x.numpy() for x in ids]
    print(f"tokens per sentence: {[x.shape[1] for x in ids]}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        float32 = folder / "model.onnx"
        start = time.perf_counter()
        export_onnx(bert, float32)
        export_seconds = time.perf_counter() - start
        files = {"float32 (shipped)": float32}
        for name, convert in [("float16 weights", float16_weights), ("float16", float16_compute), ("int8", int8)]:
            files[name] = folder / f"{name.replace(' ', '_')}.onnx"
            convert(float32, files[name])
        options = ort.SessionOptions()
        options.intra_op_num_threads = args.threads
        session = ort.InferenceSession(str(float32), options, providers=["CPUExecutionProvider"])
        short = arrays[0]
        with torch.no_grad():
            ort_s, torch_s = paired_medians(
                [lambda: session.run(None, {"input_ids": short}), lambda: bert(ids[0])], args.repeats
            )
        print(f"export: {export_seconds:.1f} s; one {short.shape[1]}-token sentence, {args.threads} thread(s):")
        print(f"onnxruntime {ort_s * 1e3:.1f} ms, torch {torch_s * 1e3:.1f} ms, ratio {ort_s / torch_s:.2f}\n")
        print("| file | MB | gzip MB | max abs diff | top token kept | within 1e-4 |")
        print("| --- | --- | --- | --- | --- | --- |")
        for name, path in files.items():
            size = path.stat().st_size / 1e6
            packed = len(gzip.compress(path.read_bytes(), compresslevel=6)) / 1e6
            worst, kept = compare(path, reference, arrays)
            within = "yes" if worst <= 1e-4 else "no"
            print(f"| {name} | {size:.1f} | {packed:.1f} | {worst:.1e} | {kept:.2%} | {within} |")
    if args.page:
        measure_page(args.page, args.loads)


if __name__ == "__main__":
    main()
