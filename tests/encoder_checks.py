"""Checks that every encoder family must pass, shared by the encoder tests."""

from __future__ import annotations

import numpy as np


def assert_padding_invariant(enc, sentences, spans, atol: float = 1e-5) -> None:
    """Each sentence's vectors are the same alone as inside a batch of longer sentences."""
    batch = enc.encode(sentences, spans)
    for i in range(len(sentences)):
        alone = enc.encode([sentences[i]], [spans[i]])
        np.testing.assert_allclose(alone.span[0], batch.span[i], atol=atol)
        np.testing.assert_allclose(alone.sent[0], batch.sent[i], atol=atol)
