"""Pooling transformer states: sub-token -> word -> sentence and span means.

The one pooling rule of :mod:`ncprobe.encoders.base`, for the families that return token
states (HF encoders and decoders, ELMo): special and padding tokens belong to no word and are
never pooled; a word without tokens is left out of the means and counted; a span with no word
left is NaN, never zeros.

:func:`pool_states` works on tensors where the states are (a GPU's pooling stays on the GPU,
with no copy to or from the host); :func:`pool_batch` is the same from Python lists to numpy;
:func:`pool_layers` pools a transformer's layer views from its hidden states a few views at a
time (the memory of a layer-wise run stays that of the hidden states) into one flat tensor
that goes to the host in one copy.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .base import Encoded

#: Bytes of device memory per token, per view and per unit of width, that pooling a chunk
#: of views holds at its peak (the views' float32 states, the einsum's operand copy, the word
#: vectors and their divided copy): :func:`pool_layers` pools as many views at a time as keep
#: this within what the hidden states themselves hold (:func:`views_per_pass`).
POOL_BYTES = 16


def views_per_pass(n_layers: int, width: int) -> int:
    """How many views :func:`pool_layers` pools in one pass: as many as keep the pooling's
    memory (:data:`POOL_BYTES` per view and token and unit of width) within that of the
    ``n_layers + 1`` hidden states of ``width`` bytes a value, at least one."""
    return max(1, (n_layers + 1) * width // POOL_BYTES)


def _word_masks(word_ids, n_words, starts, ends, max_words: int):
    """What pooling a batch needs whatever the view: ``(assign, counts, has, span_has,
    missing, missing_span)`` (see :func:`pool_states`)."""
    import torch

    ar = torch.arange(max_words, device=word_ids.device)
    assign = (word_ids.unsqueeze(1) == ar.view(1, max_words, 1)).float()  # (B, W, T)
    counts = assign.sum(-1)  # (B, W)
    valid = ar.unsqueeze(0) < n_words.unsqueeze(1)
    has = (counts > 0) & valid
    in_span = (ar.unsqueeze(0) >= starts.unsqueeze(1)) & (ar.unsqueeze(0) < ends.unsqueeze(1))
    return (assign, counts, has, has & in_span, (valid & ~has).sum(1),
            (valid & in_span & ~has).sum(1))


def _means(states, assign, counts, has, span_has):
    """``(sent, span)``, ``(B, V, D)``: the means of the word vectors of ``states``
    ``(B, V, T, D)`` over the words of ``has`` and of ``span_has`` (NaN where none)."""
    import torch

    words = torch.einsum("bwt,bvtd->bvwd", assign, states) / counts.clamp(min=1)[:, None, :, None]

    def mean(mask):
        m = mask.float()[:, None, :, None]
        total = (words * m).sum(2)
        n = m.sum(2)
        out = total / n.clamp(min=1)
        return torch.where(n > 0, out, torch.full_like(out, float("nan")))
    return mean(has), mean(span_has)


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
    assign, counts, has, span_has, missing, missing_span = _word_masks(
        word_ids, n_words, starts, ends, max_words)
    sent, span = _means(states, assign, counts, has, span_has)
    return sent, span, missing, missing_span


def pool_layers(hidden, views, word_ids, n_words, starts, ends, max_words: int, *,
                per_pass: int, own=None):
    """Every layer view of a batch pooled as :func:`pool_states` pools them, ``per_pass``
    views at a time (:func:`views_per_pass`), into one flat float32 tensor laid out for the
    host (:func:`ncprobe.encoders._stages.host_vectors`): the sentence vectors ``(V, B, D)``,
    the span vectors ``(V, B, D)``, the two ``(B,)`` counts, then ``own`` ``(B, E)`` where
    given (a model's own sentence embedding). One copy takes it all to the host, and each
    view's rows are contiguous there, as the store writes them.

    Each view's vectors are the same float operations on the same values as pooling every
    view at once (the layers averaged in float32, then the word means): only the memory
    held at a time differs, that of ``per_pass`` views instead of all.

    Args:
        hidden: the model's hidden states, one ``(B, T, D)`` tensor per layer (0 = the
            embeddings), on the device of the last one (where pooling runs) or moved there.
        views: the layer views, one tuple of layer indices each.
        word_ids, n_words, starts, ends, max_words: as :func:`pool_states` takes them.
        per_pass: views pooled at a time.
        own: ``(B, E)``, appended as it is (cast to float32).
    """
    import torch

    at = hidden[-1].device
    b, d, v = hidden[-1].shape[0], hidden[-1].shape[-1], len(views)
    extra = 0 if own is None else own.shape[1]
    block = v * b * d
    flat = torch.empty(2 * block + 2 * b + b * extra, dtype=torch.float32, device=at)
    sent_out, span_out = flat[:block].view(v, b, d), flat[block:2 * block].view(v, b, d)
    assign, counts, has, span_has, missing, missing_span = _word_masks(
        word_ids.to(at), n_words.to(at), starts.to(at), ends.to(at), max_words)
    for first in range(0, v, per_pass):
        chunk = views[first:first + per_pass]
        states = torch.stack([torch.stack([hidden[i].to(at) for i in view]).float().mean(0)
                              for view in chunk], dim=1)  # (B, chunk, T, D)
        sent, span = _means(states, assign, counts, has, span_has)
        del states
        sent_out[first:first + len(chunk)].copy_(sent.transpose(0, 1))
        span_out[first:first + len(chunk)].copy_(span.transpose(0, 1))
    flat[2 * block:2 * block + b].copy_(missing)
    flat[2 * block + b:2 * block + 2 * b].copy_(missing_span)
    if own is not None:
        flat[2 * block + 2 * b:].view(b, extra).copy_(own)
    return flat


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
