"""Sphinx extension: chapter 11's model, exported for the reader's browser, in ``_static/live`` of the built book.

At every HTML build, :func:`attn.pretrained.export_onnx` writes ``model.onnx`` (attn's own BERT with every layer's
attention as an output) from the installed checkpoint package, with the tokenizer's ``vocab.txt`` and a
``manifest.json`` that the page reads first (the files, the model's size and hash, its layers, heads and length
limit), into a cache beside the book's sources (``_build/.live-model``, kept while torch, the weights and the code
that computes them are unchanged); the files are then copied into the output. Nothing is kept in the repository.

Without the checkpoint package (``make venv`` warns when it cannot install it) or the exporter's packages, the book
builds without the files, and the live view says that the model is not part of this build.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

# The code whose change changes the exported graph: the model's layers, the attention function, the export.
SOURCES = ("attn/pretrained.py", "attn/functional.py", "attn/blocks", "book/_ext/live_model.py")
FILES = ("model.onnx", "vocab.txt", "manifest.json")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_key(root: Path, weights: Path) -> str:
    """sha256 over torch's version, the weights' hash and the model's source files."""
    import torch

    digest = hashlib.sha256(f"{torch.__version__} {sha256(weights)}".encode())
    for name in SOURCES:
        path = root / name
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            digest.update(file.read_bytes())
    return digest.hexdigest()


def export(out: Path, key: str) -> dict[str, Any]:
    """The live model's three files in ``out``; returns the manifest."""
    from attn.pretrained import MAX_TOKENS, export_onnx, load_bert, model_dir

    bert = load_bert()
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    outputs = export_onnx(bert, out / "model.onnx")
    seconds = time.perf_counter() - start
    shutil.copyfile(model_dir() / "vocab.txt", out / "vocab.txt")
    manifest = {
        "model": "model.onnx",
        "bytes": (out / "model.onnx").stat().st_size,
        "sha256": sha256(out / "model.onnx"),
        "vocab": "vocab.txt",
        "layers": bert.config.num_layers,
        "heads": bert.config.num_heads,
        "max_tokens": MAX_TOKENS,
        "inputs": ["input_ids"],
        "outputs": outputs,
        "export_seconds": round(seconds, 1),
        "key": key,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def build_live_model(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    root = Path(app.confdir)
    cache = root / "_build" / ".live-model"
    from attn.pretrained import ModelNotInstalledError, model_dir

    try:
        key = cache_key(root, model_dir() / "model.safetensors")
        manifest = json.loads((cache / "manifest.json").read_text()) if (cache / "manifest.json").is_file() else {}
        if manifest.get("key") != key or not all((cache / name).is_file() for name in FILES):
            manifest = export(cache, key)
            logger.info(f"live model: exported {manifest['bytes'] / 1e6:.1f} MB in {manifest['export_seconds']} s")
    except (ModelNotInstalledError, ImportError) as e:
        logger.info(f"live model: not built ({e})")
        return
    target = Path(app.outdir) / "_static" / "live"
    target.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(cache / name, target / name)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("build-finished", build_live_model)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
