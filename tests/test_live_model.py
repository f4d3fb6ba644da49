"""book/_ext/live_model.py, the build step that puts chapter 11's exported model into the book: what its cache keeps,
when it exports again, and a build without the model (the export itself is tested in test_pretrained.py)."""

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from notebook_utils import ROOT

import attn.pretrained

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import live_model  # noqa: E402


def checkpoint(folder: Path, vocab: str = "[PAD]\nhello\n") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text('{"num_attention_heads": 2}')
    (folder / "vocab.txt").write_text(vocab)
    (folder / "model.safetensors").write_bytes(b"weights")
    return folder


def app(tmp_path: Path) -> SimpleNamespace:
    return SimpleNamespace(outdir=str(tmp_path / "_build" / "html"), builder=SimpleNamespace(format="html"))


@pytest.fixture
def exports(tmp_path, monkeypatch):
    """live_model.export replaced by a quick one that writes the three files; the list of its calls."""
    calls = []
    folder = checkpoint(tmp_path / "checkpoint")
    monkeypatch.setattr(attn.pretrained, "model_dir", lambda: folder)

    def export(out: Path, key: str) -> dict:
        calls.append(key)
        out.mkdir(parents=True, exist_ok=True)
        (out / "model.onnx").write_bytes(b"graph")
        (out / "vocab.txt").write_text("[PAD]\n")
        manifest = {"model": "model.onnx", "sha256": live_model.sha256(out / "model.onnx"), "key": key, "bytes": 5,
                    "export_seconds": 0.0}  # fmt: skip
        (out / "manifest.json").write_text(json.dumps(manifest))
        return manifest

    monkeypatch.setattr(live_model, "export", export)
    return calls, folder


def test_the_cache_key_follows_the_checkpoint_and_the_code(tmp_path):
    folder = checkpoint(tmp_path / "a")
    key = live_model.cache_key(folder)
    assert live_model.cache_key(folder) == key
    (folder / "vocab.txt").write_text("[PAD]\nworld\n")
    assert live_model.cache_key(folder) != key
    changed = live_model.cache_key(folder)
    (folder / "model.safetensors").write_bytes(b"other weights")
    assert live_model.cache_key(folder) != changed


def test_a_build_exports_once_and_copies_the_files_into_the_book(tmp_path, exports):
    calls, folder = exports
    live_model.build_live_model(app(tmp_path), None)
    live_model.build_live_model(app(tmp_path), None)
    assert len(calls) == 1  # the second build found the cache
    served = tmp_path / "_build" / "html" / "_static" / "live"
    assert sorted(p.name for p in served.iterdir()) == ["manifest.json", "model.onnx", "vocab.txt"]
    (folder / "vocab.txt").write_text("[PAD]\nchanged\n")
    live_model.build_live_model(app(tmp_path), None)
    assert len(calls) == 2 and calls[0] != calls[1]
    (tmp_path / "_build" / ".live-model" / "model.onnx").write_bytes(b"damaged")  # not the file the manifest names
    live_model.build_live_model(app(tmp_path), None)
    assert len(calls) == 3


def test_a_book_without_the_model_builds_without_the_files(tmp_path, monkeypatch):
    def missing():
        raise attn.pretrained.ModelNotInstalledError("the model package is not installed")

    monkeypatch.setattr(attn.pretrained, "model_dir", missing)
    live_model.build_live_model(app(tmp_path), None)
    assert not (tmp_path / "_build" / "html" / "_static" / "live").exists()
    live_model.build_live_model(app(tmp_path), RuntimeError("the build failed"))  # nothing to do after a failure
