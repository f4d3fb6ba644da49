"""Learning to align (chapter 2): Bahdanau's additive score and Luong's dot and general scores, the GRU
encoder-decoder that attends with them, its trainer, its held-out scores, and translating a typed sentence."""

from attn.seq2seq.measures import evaluate_translation
from attn.seq2seq.model import Decoded, Seq2Seq, Seq2SeqConfig, Seq2SeqOutput
from attn.seq2seq.scores import SCORES, AdditiveAttention, Attention, BlurredAttention, DotAttention, GeneralAttention
from attn.seq2seq.train import train_translator
from attn.seq2seq.translate import translate

__all__ = [
    "SCORES",
    "AdditiveAttention",
    "Attention",
    "BlurredAttention",
    "Decoded",
    "DotAttention",
    "GeneralAttention",
    "Seq2Seq",
    "Seq2SeqConfig",
    "Seq2SeqOutput",
    "evaluate_translation",
    "train_translator",
    "translate",
]
