"""The stages of a transformer batch (see :class:`~ncprobe.encoders.base.StagedEncoder`):
tokenised items, their collation into padded tensors, and the copy of the device's results
back to the host without waiting for them.

Collation pads on the right exactly as the tokenizer's own ``padding=True`` does (the pad
token, attention 0, the pad token type), so a batch collated here feeds the model the same
tensors as ``tokenizer(batch, padding=True)`` (tested), and the vectors are unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

#: The tokenizer outputs a transformer model takes (others, e.g. offsets, are not passed).
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True)
class Tokens:
    """One pre-split sentence, tokenised (special tokens included, no padding).

    Attributes:
        ids: token ids.
        word_ids: the word each token belongs to, -1 for special tokens.
        type_ids: token type ids, where the tokenizer gives them.
    """

    ids: np.ndarray
    word_ids: np.ndarray
    type_ids: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.ids)


def tokenize_words(tokenizer, sentences: Sequence[Sequence[str]]) -> list[Tokens]:
    """Tokenise pre-split sentences, one :class:`Tokens` each: what
    ``tokenizer(sentences, is_split_into_words=True)`` gives (special tokens added, no
    truncation, no padding; token types where the tokenizer returns them), read straight from
    the fast tokenizer's backend, whose batch runs outside the interpreter lock, without
    transformers' per-sentence conversion to Python lists (half the time, all of it under the
    lock)."""
    backend = tokenizer.backend_tokenizer
    # the state transformers would set for this call (another call may have changed it)
    if backend.truncation is not None:
        backend.no_truncation()
    if backend.padding is not None:
        backend.no_padding()
    split = bool(getattr(tokenizer, "split_special_tokens", False))
    if backend.encode_special_tokens != split:
        backend.encode_special_tokens = split
    encodings = backend.encode_batch([list(s) for s in sentences], add_special_tokens=True,
                                     is_pretokenized=True)
    types = "token_type_ids" in tokenizer.model_input_names
    return [Tokens(np.array(e.ids, dtype=np.int64),
                   np.array([-1 if w is None else w for w in e.word_ids], dtype=np.int64),
                   np.array(e.type_ids, dtype=np.int64) if types else None)
            for e in encodings]


@dataclass
class Batch:
    """A collated batch: two CPU tensors (pinned when the model runs on CUDA), so that a
    batch goes to the device in two copies.

    Attributes:
        grid: ``(k, B, T)`` int64: the model's inputs named in ``inputs`` (of
            :data:`MODEL_INPUTS`, those the tokenizer gives), then the word ids (-1 for
            special and padding tokens).
        meta: ``(3, B)`` int64: words per sentence, each one's word span start and end.
        inputs: the names of the model's inputs, in ``grid`` order.
        max_words: the most words of a sentence in the batch.
    """

    grid: Any
    meta: Any
    inputs: tuple[str, ...]
    max_words: int


def collate(tokens: Sequence[Tokens], sentences: Sequence[Sequence[str]],
            spans: Sequence[tuple[int, int]], *, pad_id: int, pad_type_id: int, pin: bool
            ) -> Batch:
    """Pad tokenised items on the right into one :class:`Batch`.

    Args:
        tokens: the items, as :func:`tokenize_words` gives them.
        sentences, spans: the same items' words and word spans.
        pad_id, pad_type_id: the tokenizer's pad token and pad token type.
        pin: put the tensors in pinned (page-locked) memory, for copies to a GPU that do not
            wait.
    """
    import torch

    b, t = len(tokens), max(len(x) for x in tokens)
    types = tokens[0].type_ids is not None
    inputs = ("input_ids", "attention_mask", "token_type_ids") if types else (
        "input_ids", "attention_mask")
    grid = np.empty((len(inputs) + 1, b, t), dtype=np.int64)
    grid[0], grid[1], grid[-1] = pad_id, 0, -1
    if types:
        grid[2] = pad_type_id
    for i, x in enumerate(tokens):
        n = len(x)
        grid[0, i, :n], grid[1, i, :n], grid[-1, i, :n] = x.ids, 1, x.word_ids
        if types and x.type_ids is not None:
            grid[2, i, :n] = x.type_ids
    meta = np.array([[len(s) for s in sentences], [s for s, _ in spans], [e for _, e in spans]],
                    dtype=np.int64).reshape(3, b)
    grid_t, meta_t = torch.from_numpy(grid), torch.from_numpy(meta)
    if pin:
        grid_t, meta_t = grid_t.pin_memory(), meta_t.pin_memory()
    return Batch(grid_t, meta_t, inputs, max_words=int(meta[0].max()))


def to_device(batch: Batch, device) -> tuple[dict, list]:
    """The batch's model inputs and ``[word_ids, n_words, starts, ends]`` on ``device`` (two
    copies, which do not wait when the batch is pinned)."""
    grid = batch.grid.to(device, non_blocking=True)
    meta = batch.meta.to(device, non_blocking=True)
    inputs = {name: grid[i] for i, name in enumerate(batch.inputs)}
    return inputs, [grid[-1], meta[0], meta[1], meta[2]]


class HostCopy:
    """Device tensors on their way to the host. On a CUDA device, they are packed into one
    float32 tensor (integer counts are exact in it) and copied into pinned memory without
    waiting; :meth:`get` waits for the copy and returns numpy arrays of the original shapes
    and dtypes."""

    def __init__(self, tensors: dict) -> None:
        import torch

        self._event = None
        first = next(iter(tensors.values()))
        if first.device.type != "cuda":
            self._host = {k: v.cpu() for k, v in tensors.items()}
            return
        self._layout = [(k, tuple(v.shape), v.dtype) for k, v in tensors.items()]
        flat = torch.cat([v.reshape(len(v), -1).to(device=first.device, dtype=torch.float32)
                          for v in tensors.values()], dim=1)
        self._flat = torch.empty(flat.shape, dtype=torch.float32, pin_memory=True)
        self._flat.copy_(flat, non_blocking=True)
        self._event = torch.cuda.Event()
        self._event.record(torch.cuda.current_stream(first.device))

    def get(self) -> dict[str, np.ndarray]:
        """The arrays (copied out of pinned memory, which goes back to its pool)."""
        if self._event is None:
            return {k: v.numpy() for k, v in self._host.items()}
        import torch

        self._event.synchronize()
        flat = self._flat.numpy()
        out, at = {}, 0
        for name, shape, dtype in self._layout:
            width = int(np.prod(shape[1:], dtype=np.int64))
            part = flat[:, at:at + width].reshape(shape)
            at += width
            out[name] = part.astype(torch.empty(0, dtype=dtype).numpy().dtype)
        return out
