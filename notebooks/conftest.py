"""nbval runs every chapter; chapter 11 needs the pretrained model, so without
it that chapter is skipped."""

import pytest

from attn.pretrained import ModelNotInstalledError, model_dir


def pytest_collection_modifyitems(config, items):
    try:
        model_dir()
    except ModelNotInstalledError as error:
        reason = f"chapter 11 needs the pretrained model: {error}"
        skip = pytest.mark.skip(reason=reason)
        for item in items:
            if item.path.name == "11_pretrained.ipynb":
                item.add_marker(skip)
