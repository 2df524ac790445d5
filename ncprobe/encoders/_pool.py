"""Pooling transformer states: sub-token -> word -> sentence and span means.

The one pooling rule of :mod:`ncprobe.encoders.base`, for the families that return token
states (HF encoders and decoders, ELMo): special and padding tokens belong to no word and are
never pooled; a word without tokens is left out of the means and counted; a span with no word
left is NaN, never zeros.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .base import Encoded


def pool_batch(states, word_ids, n_words: Sequence[int], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
    """Sub-token -> word -> sentence/span mean pooling for a batch, in float32.

    Args:
        states: ``(B, V, T, D)`` token vectors per view.
        word_ids: ``(B, T)`` word index of each token, -1 for special and pad tokens.
        n_words: words per sentence.
        spans: word span per sentence.
    """
    import torch

    w = max(n_words)
    ar = torch.arange(w, device=states.device)
    assign = (word_ids.unsqueeze(1) == ar.view(1, w, 1)).float()  # (B, W, T)
    counts = assign.sum(-1)  # (B, W)
    words = torch.einsum("bwt,bvtd->bvwd", assign, states) / counts.clamp(min=1)[:, None, :, None]
    valid = ar.unsqueeze(0) < torch.tensor(n_words, device=states.device).unsqueeze(1)
    has = (counts > 0) & valid
    starts = torch.tensor([s for s, _ in spans], device=states.device).unsqueeze(1)
    ends = torch.tensor([e for _, e in spans], device=states.device).unsqueeze(1)
    in_span = (ar.unsqueeze(0) >= starts) & (ar.unsqueeze(0) < ends)

    def mean(mask):
        m = mask.float()[:, None, :, None]
        total = (words * m).sum(2)
        n = m.sum(2)
        out = total / n.clamp(min=1)
        return torch.where(n > 0, out, torch.full_like(out, float("nan")))
    sent = mean(has)
    span = mean(has & in_span)
    missing = (valid & ~has).sum(1)
    missing_span = (valid & in_span & ~has).sum(1)
    return Encoded(sent.cpu().numpy(), span.cpu().numpy(), missing.cpu().numpy().astype(np.int32),
                   missing_span.cpu().numpy().astype(np.int32))
