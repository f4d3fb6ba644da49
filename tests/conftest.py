import os

import torch
from hypothesis import settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(1)

# CI runs on 2 slow cores: no per-example deadline; a fixed number of examples.
settings.register_profile("book", deadline=None, max_examples=60, print_blob=True)
settings.load_profile("book")
