"""The stages of a transformer batch (see :class:`~ncprobe.encoders.base.StagedEncoder`):
tokenised items, their collation into padded tensors, and the copy of the device's results
back to the host without waiting for them.

Collation pads on the right exactly as the tokenizer's own ``padding=True`` does (the pad
token, attention 0, the pad token type), so a batch collated here feeds the model the same
tensors as ``tokenizer(batch, padding=True)`` (tested), and the vectors are unchanged.

The host does no work per sentence beyond reading the tokenizer's output: a tokenizer call's
tokens go into one array (:class:`TokenChunk`) and a batch is collated with a few array
operations, so that a small model on a GPU is not held up by the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from operator import attrgetter, is_
from typing import Any, Sequence

import numpy as np

from .base import Encoded

#: The tokenizer outputs a transformer model takes (others, e.g. offsets, are not passed).
MODEL_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


class TokenChunk:
    """The tokens of the sentences of one tokenizer call, end to end in one array, so that a
    batch's items are collated with a few array operations, not one per item.

    Attributes:
        rows: ``(k, N)`` int64, the ``N`` tokens of every sentence, one after the other, one
            row per row of :attr:`Batch.grid`: token ids, attention (ones), token type ids
            (where the tokenizer gives them), word ids (-1 for special tokens).
        types: whether there is a row of token type ids.
        starts, lengths: ``(n,)`` int64: where each sentence's tokens begin in the rows, and
            how many there are.
    """

    __slots__ = ("rows", "types", "starts", "lengths")

    def __init__(self, rows: np.ndarray, types: bool, lengths: np.ndarray) -> None:
        self.rows, self.types, self.lengths = rows, types, lengths
        self.starts = np.cumsum(lengths) - lengths


class Tokens:
    """One pre-split sentence, tokenised (special tokens included, no padding): the
    ``index``-th sentence of a :class:`TokenChunk`; its arrays are views of the chunk's.

    ``len()`` is its number of tokens.

    Attributes:
        chunk, index: where its tokens are.
    """

    __slots__ = ("chunk", "index", "_n")

    def __init__(self, chunk: TokenChunk, index: int, n: int) -> None:
        self.chunk, self.index, self._n = chunk, index, n

    def __len__(self) -> int:
        return self._n

    def _row(self, row: int) -> np.ndarray:
        start = int(self.chunk.starts[self.index])
        return self.chunk.rows[row, start:start + self._n]

    @property
    def ids(self) -> np.ndarray:
        """Token ids."""
        return self._row(0)

    @property
    def word_ids(self) -> np.ndarray:
        """The word each token belongs to, -1 for special tokens."""
        return self._row(-1)

    @property
    def type_ids(self) -> np.ndarray | None:
        """Token type ids, where the tokenizer gives them."""
        return self._row(2) if self.chunk.types else None


_IDS, _WORD_IDS, _TYPE_IDS = (attrgetter(a) for a in ("ids", "word_ids", "type_ids"))


def tokenize_words(tokenizer, sentences: Sequence[Sequence[str]]) -> list[Tokens]:
    """Tokenise pre-split sentences, one :class:`Tokens` each: what
    ``tokenizer(sentences, is_split_into_words=True)`` gives (special tokens added, no
    truncation, no padding; token types where the tokenizer returns them), read straight from
    the fast tokenizer's backend, whose batch runs outside the interpreter lock, without
    transformers' per-sentence conversion to Python lists (half the time, all of it under the
    lock). The sentences' tokens land in one :class:`TokenChunk` (a few array operations for
    the whole call, none per sentence)."""
    backend = tokenizer.backend_tokenizer
    # the state transformers would set for this call (another call may have changed it)
    if backend.truncation is not None:
        backend.no_truncation()
    if backend.padding is not None:
        backend.no_padding()
    split = bool(getattr(tokenizer, "split_special_tokens", False))
    if backend.encode_special_tokens != split:
        backend.encode_special_tokens = split
    # the backend takes a sentence as a list or a tuple of words
    words = (list(sentences) if set(map(type, sentences)) <= {list, tuple}
             else list(map(list, sentences)))
    encodings = backend.encode_batch(words, add_special_tokens=True, is_pretokenized=True)
    types = "token_type_ids" in tokenizer.model_input_names
    n = len(encodings)
    lengths = np.fromiter(map(len, encodings), dtype=np.int64, count=n)
    total = int(lengths.sum())
    rows = np.empty((4 if types else 3, total), dtype=np.int64)
    rows[0] = np.fromiter(chain.from_iterable(map(_IDS, encodings)), np.int64, total)
    rows[1] = 1
    if types:
        rows[2] = np.fromiter(chain.from_iterable(map(_TYPE_IDS, encodings)), np.int64, total)
    # a special token's word is None: NaN as a float (word indices are exact in float64)
    word_ids = np.array(list(chain.from_iterable(map(_WORD_IDS, encodings))), dtype=np.float64)
    rows[-1] = np.where(np.isnan(word_ids), -1.0, word_ids)
    chunk = TokenChunk(rows, types, lengths)
    return list(map(Tokens, [chunk] * n, range(n), lengths.tolist()))


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


_CHUNK, _INDEX = attrgetter("chunk"), attrgetter("index")


def _runs(tokens: Sequence[Tokens]) -> list[tuple[TokenChunk, np.ndarray]]:
    """The items as runs of items of one chunk: ``(chunk, their indices in it)`` each. A batch
    is one run, or two where it spans two calls of the tokenizer."""
    b = len(tokens)
    if not b:
        raise ValueError("a batch needs at least one item")
    chunks = list(map(_CHUNK, tokens))
    index = np.fromiter(map(_INDEX, tokens), dtype=np.intp, count=b)
    if chunks.count(chunks[0]) == b:  # TokenChunk compares by identity
        return [(chunks[0], index)]
    same = np.fromiter(map(is_, chunks[1:], chunks[:-1]), dtype=bool, count=b - 1)
    cuts = [0, *(np.flatnonzero(~same) + 1).tolist(), b]
    return [(chunks[a], index[a:z]) for a, z in zip(cuts[:-1], cuts[1:], strict=True)]


def first_too_long(tokens: Sequence[Tokens], limit: int) -> tuple[int, int] | None:
    """The first item of more than ``limit`` tokens: its position and its number of tokens
    (``None``: there is none)."""
    counts = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    over = np.flatnonzero(counts > limit)
    return (int(over[0]), int(counts[over[0]])) if over.size else None


def _gathered(tokens: Sequence[Tokens]) -> tuple[np.ndarray, np.ndarray, bool]:
    """The items' numbers of tokens, their tokens' rows (:attr:`TokenChunk.rows`) item after
    item, and whether there are token type ids."""
    runs = _runs(tokens)
    types = runs[0][0].types
    counts, parts = [], []
    for chunk, index in runs:
        if chunk.types != types:
            raise ValueError("a batch mixes items with and without token type ids")
        n, start = chunk.lengths[index], chunk.starts[index]
        if (np.diff(index) == 1).all():  # consecutive items (as batches are): a view
            parts.append(chunk.rows[:, start[0]:start[0] + n.sum()])
        else:  # each token's position in the chunk: its item's start, plus its place in it
            ends = np.cumsum(n)
            parts.append(chunk.rows[:, np.arange(ends[-1]) + np.repeat(start - (ends - n), n)])
        counts.append(n)
    if len(parts) == 1:
        return counts[0], parts[0], types
    return np.concatenate(counts), np.concatenate(parts, axis=1), types


def collate(tokens: Sequence[Tokens], sentences: Sequence[Sequence[str]],
            spans: Sequence[tuple[int, int]], *, pad_id: int, pad_type_id: int, pin: bool
            ) -> Batch:
    """Pad tokenised items on the right into one :class:`Batch`, with a few array operations
    for the whole batch (none per item).

    Args:
        tokens: the items, as :func:`tokenize_words` gives them.
        sentences, spans: the same items' words and word spans.
        pad_id, pad_type_id: the tokenizer's pad token and pad token type.
        pin: put the tensors in pinned (page-locked) memory, for copies to a GPU that do not
            wait (filled there, not copied into it).
    """
    import torch

    counts, rows, types = _gathered(tokens)
    b, t = len(tokens), int(counts.max())
    inputs = MODEL_INPUTS if types else MODEL_INPUTS[:2]
    grid_t = torch.empty((len(inputs) + 1, b, t), dtype=torch.int64, pin_memory=pin)
    grid = grid_t.numpy()
    # each item's tokens fill the start of its row, in order: the mask's True cells, row
    # after row, are the items' tokens one after the other, as ``rows`` holds them
    mask = np.arange(t) < counts[:, None]
    for k, pad in enumerate([pad_id, 0, pad_type_id, -1] if types else [pad_id, 0, -1]):
        grid[k].fill(pad)
        grid[k][mask] = rows[k]  # one field at a time: numpy's fastest masked assignment
    meta_t = torch.empty((3, b), dtype=torch.int64, pin_memory=pin)
    meta = meta_t.numpy()
    meta[0] = np.fromiter(map(len, sentences), dtype=np.int64)
    meta[1:] = np.array(spans, dtype=np.int64).reshape(b, 2).T
    return Batch(grid_t, meta_t, inputs, max_words=int(meta[0].max()))


def to_device(batch: Batch, device) -> tuple[dict, list]:
    """The batch's model inputs and ``[word_ids, n_words, starts, ends]`` on ``device`` (two
    copies, which do not wait when the batch is pinned)."""
    grid = batch.grid.to(device, non_blocking=True)
    meta = batch.meta.to(device, non_blocking=True)
    inputs = {name: grid[i] for i, name in enumerate(batch.inputs)}
    return inputs, [grid[-1], meta[0], meta[1], meta[2]]


def host_vectors(flat: np.ndarray, n: int, views: int, dim: int, own: int = 0) -> Encoded:
    """The vectors of a batch from the flat float32 array that
    :func:`~ncprobe.encoders._pool.pool_layers` lays out (sentence vectors ``(views, n, dim)``,
    span vectors, the two counts, the own sentence embedding ``(n, own)`` where ``own``), as
    views of it, not copies: ``sent`` and ``span`` are ``(n, views, dim)`` arrays whose rows
    of one view are contiguous (the store writes them as they are)."""
    block = views * n * dim
    sent = flat[:block].reshape(views, n, dim).transpose(1, 0, 2)
    span = flat[block:2 * block].reshape(views, n, dim).transpose(1, 0, 2)
    missing = flat[2 * block:2 * block + n].astype(np.int32)
    missing_span = flat[2 * block + n:2 * block + 2 * n].astype(np.int32)
    mine = flat[2 * block + 2 * n:].reshape(n, own) if own else None
    return Encoded(sent, span, missing, missing_span, own=mine)


#: One stream per CUDA device for the copies back to the host (see :class:`Transfer`).
_COPY_STREAMS: dict = {}


def _copy_stream(device):
    import torch

    key = str(device)
    if key not in _COPY_STREAMS:
        _COPY_STREAMS[key] = torch.cuda.Stream(device=device)
    return _COPY_STREAMS[key]


class Transfer:
    """A batch's pooled results (the flat float32 tensor of
    :func:`~ncprobe.encoders._pool.pool_layers`) on their way to the host.

    On a CUDA device the copy runs on a stream of its own, into pinned memory, once the
    compute stream has pooled the batch: it overlaps the next batch's forward pass instead of
    waiting in line before it, and nothing waits for it until :meth:`get`. The vectors
    :meth:`get` returns are views of that pinned memory (no copy out of it): it goes back to
    torch's pool when they are dropped (the store has written them). On the CPU the tensor is
    the host memory already.

    Args:
        flat: the pooled results.
        layout: ``(n, views, dim, own)`` of :func:`host_vectors`.
    """

    def __init__(self, flat, layout: tuple[int, int, int, int]) -> None:
        self.layout = layout
        self._done = None
        if flat.device.type != "cuda":
            self._host = flat
            return
        import torch

        stream = _copy_stream(flat.device)
        ready = torch.cuda.Event()
        ready.record(torch.cuda.current_stream(flat.device))
        host = torch.empty(flat.shape, dtype=flat.dtype, pin_memory=True)
        with torch.cuda.stream(stream):
            stream.wait_event(ready)
            host.copy_(flat, non_blocking=True)
            # the allocator must not hand the device tensor to the compute stream before the
            # copy has read it
            flat.record_stream(stream)
            done = torch.cuda.Event()
            done.record(stream)
        self._host, self._done = host, done

    def get(self) -> Encoded:
        """The batch's vectors (waits for the copy)."""
        if self._done is not None:
            self._done.synchronize()
        return host_vectors(self._host.numpy(), *self.layout)
