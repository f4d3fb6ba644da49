"""Sphinx extension: chapter 11's model, exported for the reader's browser, in ``_static/live`` of the built book.

At every HTML build, :func:`attn.pretrained.export_onnx` writes ``model.onnx`` (attn's own BERT with every layer's
attention as an output) from the installed checkpoint package, with the tokenizer's ``vocab.txt`` and a
``manifest.json`` that the page reads first (the files, the model's size and hash, its layers, heads and length
limit), into a cache beside the html folder (``_build/.live-model``, kept while torch, the exporter, attn's code
and the checkpoint are unchanged); the files are then copied into the output. Nothing is kept in the repository.

Without the checkpoint package (``make venv`` warns when it cannot install it) or the exporter's packages, the book
builds without the files, and the live view says that the model is not part of this build.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

FILES = ("model.onnx", "vocab.txt", "manifest.json")


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_key(checkpoint: Path) -> str:
    """sha256 over what the exported file depends on: the versions of torch and of the exporter's packages, every
    source file of attn (the model, its layers, the checks the export passes through) and the checkpoint's files."""
    import attn

    digest = hashlib.sha256()
    for package in ("torch", "onnx", "onnxscript"):
        digest.update(f"{package} {metadata.version(package)}\n".encode())
    source = Path(attn.__file__).parent
    for file in sorted(source.rglob("*.py")):
        digest.update(file.relative_to(source).as_posix().encode() + file.read_bytes())
    for file in sorted(checkpoint.iterdir()):
        if file.is_file() and file.suffix in (".json", ".txt", ".safetensors"):
            content = sha256(file).encode() if file.suffix == ".safetensors" else file.read_bytes()
            digest.update(file.name.encode() + content)
    return digest.hexdigest()


def export(out: Path, key: str) -> dict[str, Any]:
    """The live model's three files, written into a new folder beside ``out`` and moved into ``out`` when complete
    (a build that stops halfway, or another running at the same time, never leaves half a model there)."""
    from attn.pretrained import MAX_TOKENS, export_onnx, load_bert, model_dir

    bert = load_bert()
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".live-model-", dir=out.parent))
    try:
        start = time.perf_counter()
        outputs = export_onnx(bert, work / "model.onnx")
        seconds = time.perf_counter() - start
        shutil.copyfile(model_dir() / "vocab.txt", work / "vocab.txt")
        manifest = {
            "model": "model.onnx",
            "bytes": (work / "model.onnx").stat().st_size,
            "sha256": sha256(work / "model.onnx"),
            "vocab": "vocab.txt",
            "layers": bert.config.num_layers,
            "heads": bert.config.num_heads,
            "max_tokens": min(MAX_TOKENS, bert.config.max_len),
            "inputs": ["input_ids"],
            "outputs": outputs,
            "export_seconds": round(seconds, 1),
            "key": key,
        }
        (work / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
        old = out.with_name(work.name + "-old")
        if out.exists():
            out.rename(old)
        work.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return manifest


def cached(cache: Path, key: str) -> dict[str, Any] | None:
    """The cache's manifest if it was made with ``key`` and its model file is the one it names."""
    try:
        manifest = json.loads((cache / "manifest.json").read_text())
        ok = manifest.get("key") == key and all((cache / name).is_file() for name in FILES)
        return manifest if ok and sha256(cache / manifest["model"]) == manifest["sha256"] else None
    except (OSError, ValueError, KeyError):
        return None


def build_live_model(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    cache = Path(app.outdir).parent / ".live-model"  # beside the html folder: _build/.live-model
    from attn.pretrained import ModelNotInstalledError, model_dir

    try:
        key = cache_key(model_dir())
        manifest = cached(cache, key)
        if manifest is None:
            manifest = export(cache, key)
            logger.info(f"live model: exported {manifest['bytes'] / 1e6:.1f} MB in {manifest['export_seconds']} s")
    except (ModelNotInstalledError, ImportError, FileNotFoundError, metadata.PackageNotFoundError) as e:
        logger.info(f"live model: not built ({e})")
        return
    target = Path(app.outdir) / "_static" / "live"
    target.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(cache / name, target / name)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("build-finished", build_live_model)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
