"""Pooling transformer states: sub-token -> word -> sentence and span means.

The one pooling rule of :mod:`ncprobe.encoders.base`, for the families that return token
states (HF encoders and decoders, ELMo): special and padding tokens belong to no word and are
never pooled; a word without tokens is left out of the means and counted; a span with no word
left is NaN, never zeros.

:func:`pool_states` works on tensors where the states are (a GPU's pooling stays on the GPU,
with no copy to or from the host); :func:`pool_batch` is the same from Python lists to numpy.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .base import Encoded


def pool_states(states, word_ids, n_words, starts, ends, max_words: int):
    """Sub-token -> word -> sentence/span mean pooling, in float32, on ``states``' device.

    Args:
        states: ``(B, V, T, D)`` token vectors per view.
        word_ids: ``(B, T)`` word index of each token, -1 for special and pad tokens.
        n_words, starts, ends: ``(B,)`` integer tensors: words per sentence and each
            sentence's word span ``[start, end)``, on the states' device.
        max_words: the largest of ``n_words`` (a Python int: no read from the device).

    Returns:
        ``(sent, span, missing, missing_span)`` tensors on the states' device: ``(B, V, D)``
        means (NaN where no word is left) and ``(B,)`` counts of the words left out.
    """
    import torch

    ar = torch.arange(max_words, device=states.device)
    assign = (word_ids.unsqueeze(1) == ar.view(1, max_words, 1)).float()  # (B, W, T)
    counts = assign.sum(-1)  # (B, W)
    words = torch.einsum("bwt,bvtd->bvwd", assign, states) / counts.clamp(min=1)[:, None, :, None]
    valid = ar.unsqueeze(0) < n_words.unsqueeze(1)
    has = (counts > 0) & valid
    in_span = (ar.unsqueeze(0) >= starts.unsqueeze(1)) & (ar.unsqueeze(0) < ends.unsqueeze(1))

    def mean(mask):
        m = mask.float()[:, None, :, None]
        total = (words * m).sum(2)
        n = m.sum(2)
        out = total / n.clamp(min=1)
        return torch.where(n > 0, out, torch.full_like(out, float("nan")))
    return (mean(has), mean(has & in_span), (valid & ~has).sum(1),
            (valid & in_span & ~has).sum(1))


def pool_batch(states, word_ids, n_words: Sequence[int], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
    """:func:`pool_states` of a batch given as lists, returned as numpy arrays.

    Args:
        states: ``(B, V, T, D)`` token vectors per view.
        word_ids: ``(B, T)`` word index of each token, -1 for special and pad tokens.
        n_words: words per sentence.
        spans: word span per sentence.
    """
    import torch

    dev = states.device
    sent, span, missing, missing_span = pool_states(
        states, word_ids, torch.tensor(list(n_words), device=dev),
        torch.tensor([s for s, _ in spans], device=dev),
        torch.tensor([e for _, e in spans], device=dev), max(n_words))
    return Encoded(sent.cpu().numpy(), span.cpu().numpy(), missing.cpu().numpy().astype(np.int32),
                   missing_span.cpu().numpy().astype(np.int32))
