"""The Transformer (Vaswani et al. 2017) and the language models made of the same blocks (:mod:`attn.blocks`):
whole models (:mod:`~attn.transformer.model`), their trainers (translation, tagging, pretraining:
:mod:`~attn.transformer.train`), what is measured on them (:mod:`~attn.transformer.measures`; the scores the
trainers check are in :mod:`~attn.transformer.train`), the pretraining
objectives of GPT and BERT, decoding, and the mixers chapter 5 compares attention with."""

from attn.transformer.measures import fill_in, fill_in_by_likelihood
from attn.transformer.mixers import MixerTagger, TaggerOutput
from attn.transformer.model import (
    Embedding,
    KeyValueCache,
    LanguageModel,
    LanguageModelConfig,
    LanguageModelOutput,
    Transformer,
    TransformerConfig,
    TransformerOutput,
)
from attn.transformer.pretraining import OBJECTIVES, language_model_batch, language_model_loss
from attn.transformer.train import (
    evaluate_transformer,
    tagging_accuracy,
    token_losses,
    train_language_model,
    train_mixer_tagger,
    train_tagger,
    train_transformer,
)

__all__ = [
    "OBJECTIVES",
    "Embedding",
    "KeyValueCache",
    "LanguageModel",
    "LanguageModelConfig",
    "LanguageModelOutput",
    "MixerTagger",
    "TaggerOutput",
    "Transformer",
    "TransformerConfig",
    "TransformerOutput",
    "evaluate_transformer",
    "fill_in",
    "fill_in_by_likelihood",
    "language_model_batch",
    "language_model_loss",
    "tagging_accuracy",
    "token_losses",
    "train_language_model",
    "train_mixer_tagger",
    "train_tagger",
    "train_transformer",
]
