"""Shared helpers for the chapter tests."""

from pathlib import Path

from attn.pretrained import ModelNotInstalledError, model_dir

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _model_missing() -> str | None:
    """Why the pretrained model of chapter 8 cannot be used here, or None when it is installed."""
    try:
        model_dir()
    except ModelNotInstalledError as error:
        return f"chapter 8's pretrained model is not installed: {error}"
    return None


MODEL_MISSING = _model_missing()
