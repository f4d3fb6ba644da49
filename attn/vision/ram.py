"""The recurrent attention model (Mnih et al. 2014): hard attention that chooses where to look, trained by REINFORCE.

At each step the model chooses a place, takes a glimpse there and folds it into a recurrent state. Mnih et al.
sample a continuous location from a Gaussian; here the policy is a softmax over a ``grid x grid`` lattice of
places, each scored by Bahdanau's additive score of the state against what the periphery (the image averaged
down to ``grid x grid``, Ba et al. 2015's "context network"; Mnih et al. had none: ``RAMConfig(context=False)``)
shows there: the scores of soft attention, sampled instead of averaged (Xu et al. 2015's "hard" attention).
Sampling is not differentiable, so the policy is trained by REINFORCE (Williams 1992): raise the log-probability
of the places it chose in proportion to how much better the reward (1 for a right answer) was than a learned
baseline. The classifier, the core and the glimpse network are trained by backpropagation, and the REINFORCE term
reaches them too, through the state the policy reads (eq. 2 of Mnih et al. covers all parameters); only the
baseline reads a detached state, so that its squared error trains it alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from attn._checks import check, check_images, check_positive_ints, check_question, checked, require_tensor, shape_of
from attn._random import sample
from attn.functional import additive_scores
from attn.vision.glimpse import glimpse

__all__ = ["RAMConfig", "RAMOutput", "RecurrentAttention", "reinforce", "ram_loss"]


@dataclass
class RAMConfig:
    """``glimpses`` glimpses of ``scales`` crops of ``glimpse x glimpse`` pixels; a GRU core of ``hidden`` units; a
    location policy over the centres of a ``grid x grid`` partition of the image, with additive scores of size
    ``d_attention``. With ``context`` (Ba et al. 2015's context network) the policy scores each place against a
    coarse view of the whole image, the image averaged down to ``grid x grid``; without it (Mnih et al. 2014) the
    model sees nothing but its glimpses, and each place's key is a learned vector."""

    image_size: int = 24
    channels: int = 3
    glimpse: int = 6
    scales: int = 2
    glimpses: int = 2
    hidden: int = 128
    num_questions: int = 6
    num_classes: int = 4
    grid: int = 6
    d_attention: int = 32
    context: bool = True

    def __post_init__(self) -> None:
        check_positive_ints(self, "image_size", "channels", "glimpse", "scales", "glimpses", "hidden", "num_questions",
                            "num_classes", "grid", "d_attention")  # fmt: skip
        check(isinstance(self.context, bool), f"context must be True or False, got {self.context!r}")
        check(self.image_size % self.grid == 0,
              f"grid={self.grid} must divide image_size={self.image_size}: one place per cell")  # fmt: skip


@dataclass
class RAMOutput:
    """``logits (B, classes)``; ``locations (B, glimpses, 2)`` where it looked, ``(row, column)`` in [-1, 1];
    ``policy (B, glimpses, grid, grid)``, the distribution each location was drawn from; ``log_probs (B,
    glimpses)`` of the locations drawn and ``baselines (B, glimpses)``, the reward expected when each was chosen."""

    logits: torch.Tensor
    locations: torch.Tensor
    policy: torch.Tensor
    log_probs: torch.Tensor
    baselines: torch.Tensor


class RecurrentAttention(nn.Module):
    """Glimpse network, GRU core, location policy, baseline and classifier (Mnih et al. 2014, Fig. 1). The question
    sets the initial state, so the model knows what to look for. In training the locations are sampled; in eval
    mode the most likely place is taken."""

    def __init__(self, config: RAMConfig):
        super().__init__()
        self.config = config
        n, sensed = config.hidden, config.scales * config.channels * config.glimpse**2
        self.what = nn.Linear(sensed, n)  # h_g: the glimpse's content
        self.where = nn.Linear(2, n)  # h_l: where it was taken
        self.glimpse_net = nn.Linear(2 * n, n)  # g = f_g(ρ(x, l), l)
        self.core = nn.GRUCell(n, n)
        self.question = nn.Embedding(config.num_questions, n)
        d_a = config.d_attention  # the policy: additive scores of the state against each place's periphery
        self.W_h = nn.Parameter(torch.randn(d_a, n) * n**-0.5)
        self.W_p = nn.Parameter(torch.randn(d_a, config.channels) * config.channels**-0.5)
        self.v = nn.Parameter(torch.randn(d_a) * d_a**-0.5)
        if not config.context:  # no coarse view: a learned key per place, (grid², C)
            self.place_keys = nn.Parameter(torch.randn(config.grid**2, config.channels))
        centres = (torch.arange(config.grid) + 0.5) / config.grid * 2 - 1  # (grid,) cell centres in [-1, 1]
        rows, cols = torch.meshgrid(centres, centres, indexing="ij")
        self.register_buffer("places", torch.stack([rows, cols], -1).view(-1, 2), persistent=False)  # (grid², 2)
        self.baseline = nn.Linear(n, 1)
        self.classifier = nn.Linear(n, config.num_classes)

    def _glimpse_features(self, images: torch.Tensor, location: torch.Tensor) -> torch.Tensor:
        c = self.config
        seen = glimpse(images, location, c.glimpse, c.scales).flatten(1)  # (B, scales C size²)
        return F.relu(self.glimpse_net(torch.cat([F.relu(self.what(seen)), F.relu(self.where(location))], -1)))

    def _forward_args(self, images: torch.Tensor, question: torch.Tensor) -> None:
        c = self.config
        B, *_ = check_images(images, c.channels, c.image_size, model=self)
        check_question(question, B, c.num_questions)

    @checked(_forward_args)
    def forward(self, images: torch.Tensor, question: torch.Tensor) -> RAMOutput:
        """images ``(B, C, S, S)``, question ``(B,)`` -> :class:`RAMOutput`."""
        c = self.config
        B = len(images)
        h = torch.tanh(self.question(question))  # (B, hidden): what to look for
        if c.context:  # the coarse view: every pixel averaged into its cell, (B, grid², C)
            periphery = F.adaptive_avg_pool2d(images, c.grid).flatten(2).transpose(1, 2)
        else:  # nothing seen yet: each place's learned key, (B, grid², C)
            periphery = self.place_keys.expand(B, -1, -1)
        locations, policies, log_probs, baselines = [], [], [], []
        for _ in range(c.glimpses):
            scores = additive_scores(h[:, None], periphery, self.W_h, self.W_p, self.v)[:, 0]  # (B, grid²)
            log_pi = torch.log_softmax(scores, dim=-1)  # (B, grid²)
            # (B,): sampled in training (hard attention, by torch's CPU generator on any device), the most likely
            # place in eval mode
            place = sample(log_pi.exp(), None)[:, 0] if self.training else log_pi.argmax(-1)
            location = self.places[place]  # (B, 2)
            log_probs.append(log_pi.gather(1, place[:, None])[:, 0])  # (B,)
            baselines.append(self.baseline(h.detach())[:, 0])  # (B,): the reward expected from here
            policies.append(log_pi.exp().view(B, c.grid, c.grid))
            locations.append(location)
            h = self.core(self._glimpse_features(images, location), h)
        stack = lambda xs: torch.stack(xs, dim=1)  # noqa: E731
        return RAMOutput(self.classifier(h), stack(locations), stack(policies), stack(log_probs), stack(baselines))


def _reinforce_args(log_probs: torch.Tensor, rewards: torch.Tensor, baselines: torch.Tensor) -> None:
    require_tensor("log_probs", log_probs, 2)
    require_tensor("rewards", rewards, 1)
    require_tensor("baselines", baselines, 2)
    check(log_probs.dim() == 2 and baselines.shape == log_probs.shape and rewards.shape == log_probs.shape[:1],
          f"log_probs and baselines must be (B, T) and rewards (B,), got log_probs {shape_of(log_probs)}, "
          f"baselines {shape_of(baselines)}, rewards {shape_of(rewards)}")  # fmt: skip


@checked(_reinforce_args)
def reinforce(log_probs: torch.Tensor, rewards: torch.Tensor, baselines: torch.Tensor) -> torch.Tensor:
    """A surrogate whose gradient is minus the REINFORCE estimate ``E[Σ_t ∇ log π(l_t) (R - b_t)]`` (Williams
    1992; Mnih et al. 2014, eq. 2): log_probs, baselines ``(B, T)``, rewards ``(B,)`` -> a scalar to minimise.
    The advantage ``R - b_t`` is a constant here: the baseline only lowers the estimate's variance."""
    advantage = (rewards[:, None] - baselines).detach()  # (B, T)
    return -(advantage * log_probs).sum(1).mean()


def _ram_loss_args(output: RAMOutput, answer: torch.Tensor) -> None:
    B, classes = output.logits.shape[0], output.logits.shape[-1]
    check(isinstance(answer, torch.Tensor) and answer.shape == (B,) and answer.dtype == torch.int64,
          lambda: f"answer must be ({B},) int64 class ids, got {_described(answer)}")  # fmt: skip
    check(not B or (int(answer.min()) >= 0 and int(answer.max()) < classes),
          lambda: f"answer must hold class ids in [0, {classes - 1}], got {answer.min()} to "
          f"{answer.max()}")  # fmt: skip


def _described(x: object) -> str:
    return f"{x.dtype} {shape_of(x)}" if isinstance(x, torch.Tensor) else type(x).__name__


@checked(_ram_loss_args)
def ram_loss(output: RAMOutput, answer: torch.Tensor) -> torch.Tensor:
    """The hybrid loss: cross-entropy for the classifier and core, REINFORCE for the policy with reward 1 for a
    right answer, and the baseline's squared error (Mnih et al. 2014, §3.3)."""
    reward = (output.logits.argmax(-1) == answer).to(output.logits.dtype)  # (B,)
    baseline_error = F.mse_loss(output.baselines, reward[:, None].expand_as(output.baselines))
    return (
        F.cross_entropy(output.logits, answer) + reinforce(output.log_probs, reward, output.baselines) + baseline_error
    )
