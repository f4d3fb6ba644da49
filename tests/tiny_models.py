"""Small models, their inputs and slow references that the tests of several files share: tiny language models
(the text corpus they read is the ``corpus`` fixture of conftest.py, of N_TRAIN and N_TEST sentences), a prompt for
them, and greedy decoding written out one sentence at a time."""

import torch

from attn.training import seeded
from attn.transformer import LanguageModel, LanguageModelConfig

N_TRAIN, N_TEST = 300, 40


def tiny_lm(vocab_size, causal=True, seed=0, **kw):
    args = {"d_model": 16, "num_heads": 2, "num_layers": 1, "d_ff": 32, "dropout": 0.0, "max_len": 24, **kw}
    with seeded(seed):
        return LanguageModel(LanguageModelConfig(vocab_size, causal=causal, **args)).eval()


PROMPT = torch.tensor([[1, 4, 5], [1, 6, 6]])


def _reference_greedy(model, source, bos, eos, steps):
    """One sentence at a time, re-reading the whole prefix each step; stops after eos."""
    prefix = torch.tensor([[bos]])
    for _ in range(steps):
        token = model(source, prefix).logits[:, -1].argmax(-1)
        prefix = torch.cat([prefix, token[:, None]], dim=1)
        if int(token) == eos:
            break
    return prefix[0, 1:].tolist()
