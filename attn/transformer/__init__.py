"""The Transformer (Vaswani et al. 2017) and the language models made of the same blocks (:mod:`attn.blocks`):
whole models, their trainers (translation, tagging), the pretraining objectives of GPT and BERT, decoding, and the
mixers chapter 5 compares attention with."""

from attn.transformer.models import (
    Embedding,
    KeyValueCache,
    LanguageModel,
    LanguageModelConfig,
    LanguageModelOutput,
    Transformer,
    TransformerConfig,
    TransformerOutput,
)
from attn.transformer.pretraining import (
    OBJECTIVES,
    fill_in,
    language_model_batch,
    language_model_loss,
    token_losses,
    train_language_model,
)
from attn.transformer.tagging import tagging_accuracy, train_tagger
from attn.transformer.train import evaluate_transformer, train_transformer

__all__ = [
    "OBJECTIVES",
    "Embedding",
    "KeyValueCache",
    "LanguageModel",
    "LanguageModelConfig",
    "LanguageModelOutput",
    "Transformer",
    "TransformerConfig",
    "TransformerOutput",
    "evaluate_transformer",
    "fill_in",
    "language_model_batch",
    "language_model_loss",
    "tagging_accuracy",
    "token_losses",
    "train_language_model",
    "train_tagger",
    "train_transformer",
]
