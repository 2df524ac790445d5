"""The batches of an encoding run: how they are cut, and how their stages overlap.

:func:`plan_batches` cuts items (in the order given: :func:`ncprobe.embed.embed` sorts them by
length) into batches of a fixed count, or, with a token budget, into batches whose padded size
(items x the longest item's tokens) stays within the budget: many short sentences in one
forward pass, few long ones.

:func:`run_batches` encodes them. An encoder that splits a batch into stages
(:class:`~ncprobe.encoders.base.StagedEncoder`: transformer models) has them overlapped: a
worker thread tokenises and collates the next batches (into pinned memory, on a GPU) while the
model runs the current one, the device pools its own output and copies it back without waiting,
and the previous batch's vectors are taken while the device works on the next. Any other
encoder runs its batches one after the other. :class:`BackgroundWriter` writes the embedding
cache's shards on other threads (two at once: a GPU's batches of many layer views outpace one
writer), and they are named and indexed in order on the encoding thread.

The vectors do not depend on the overlap: each batch is the same computation as one
``encode`` call on it (tested byte for byte on the CPU).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Generator, Iterable, Iterator, Sequence

import numpy as np

from .encoders.base import Encoded, Encoder, SentenceTooLongError, StagedEncoder
from .errors import NcprobeError

log = logging.getLogger(__name__)

#: How many batches the worker thread prepares ahead of the model.
PREFETCH = 2
#: The automatic token budget on a CUDA device: the batch's device memory per token at its
#: peak (:meth:`~ncprobe.encoders.base.StagedEncoder.token_bytes`: the hidden states of one
#: forward pass, one layer's activations and one pass of pooling) times the budget stays
#: within this many bytes, and the budget within :data:`AUTO_TOKENS`.
AUTO_BYTES = 2 << 30
AUTO_TOKENS = (256, 16384)
#: Sentences tokenised in one call of the tokenizer (batches are cut from them in order):
#: the first call takes :data:`FIRST_CHUNK`, each next one twice as many, up to
#: :data:`TOKENIZE_CHUNK`, so that the first batch reaches the model soon.
FIRST_CHUNK = 64
TOKENIZE_CHUNK = 1024


class Batcher:
    """Cuts a stream of items into batches: ``batch_size`` items each, or, with
    ``batch_tokens``, as many as keep ``items x longest item`` within that many tokens (an
    item longer than the budget alone is a batch of one).

    :meth:`add_all` takes the next items' sizes and returns the batches they closed
    (:meth:`add`: one item, the batch it closed, if any); :meth:`finish` returns the last one.
    Batches are ``(start, stop)`` positions.
    """

    def __init__(self, batch_size: int, batch_tokens: int | None = None) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if batch_tokens is not None and batch_tokens < 1:
            raise ValueError("batch_tokens must be at least 1")
        self.batch_size, self.batch_tokens = batch_size, batch_tokens
        self.start = self.stop = 0
        self.width = 0  # the longest item of the open batch

    def add(self, size: int) -> tuple[int, int] | None:
        """The next item, of ``size`` tokens; returns the batch it closed (before it), if any
        (:meth:`add_all` of one item)."""
        closed = self.add_all((size,))
        return closed[0] if closed else None

    def add_all(self, sizes: Sequence[int] | np.ndarray) -> list[tuple[int, int]]:
        """The next items, of ``sizes`` tokens, in turn: the batches they closed, found with a
        few array operations a batch rather than a step an item (a GPU's batch holds hundreds).

        An item closes the open batch (which then holds the items before it) when the batch
        already holds ``batch_size`` items or, with a budget, when the batch with it, its
        count times its widest item, would pass the budget; an empty batch takes any item.
        Both grow with each item, so the items that join the open batch are a run from the
        first one on.
        """
        rest = np.asarray(sizes, dtype=np.int64)
        closed: list[tuple[int, int]] = []
        look = 64  # items looked at a time (by a token budget): doubled while they all join
        while len(rest):
            n = self.stop - self.start
            if self.batch_tokens is None:
                join = min(self.batch_size - n, len(rest))
                full = join < len(rest)
            else:
                ahead = rest[:look]
                widest = np.maximum.accumulate(np.maximum(ahead, self.width))
                fits = (n + np.arange(1, len(ahead) + 1)) * widest <= self.batch_tokens
                fits[0] |= n == 0  # an empty batch takes the item, however long
                join = len(ahead) if fits.all() else int(fits.argmin())
                full = join < len(ahead)
                look *= 1 if full else 2
            if join:
                self.width = max(self.width, int(rest[:join].max()))
                self.stop += join
                rest = rest[join:]
            if full:  # the next item closes the batch
                closed.append((self.start, self.stop))
                self.start, self.width = self.stop, 0
        return closed

    def finish(self) -> tuple[int, int] | None:
        """The open batch, if it holds anything."""
        if self.stop > self.start:
            closed, self.start = (self.start, self.stop), self.stop
            return closed
        return None


def plan_batches(sizes: Iterable[int], batch_size: int, batch_tokens: int | None = None
                 ) -> list[tuple[int, int]]:
    """Every batch :class:`Batcher` cuts from items of these sizes, in order."""
    cut = Batcher(batch_size, batch_tokens)
    out = cut.add_all(np.fromiter((int(s) for s in sizes), dtype=np.int64))
    last = cut.finish()
    return out + [last] if last is not None else out


def is_staged(encoder: Encoder) -> bool:
    """Whether the encoder runs a batch in stages that :func:`run_batches` overlaps."""
    return isinstance(encoder, StagedEncoder)


def token_budget(encoder: Encoder, batch_tokens: int | None) -> int | None:
    """The token budget :func:`run_batches` uses (``None``: batches of a count).

    ``batch_tokens`` ``None`` (the default) is automatic: a staged encoder whose model runs
    on a CUDA device gets :data:`AUTO_BYTES` over its memory per token, within
    :data:`AUTO_TOKENS` (in half precision: minilm 16,384 tokens; a 0.8B LLaMA about 10,600
    with the last four layers and 10,900 with ``--layers all``, as a run layer by layer holds
    no more per token; LLaMA-2 13B about 2,900); other encoders, and any on the CPU, get
    batches of a count (the same batches, and so the same vectors, as before token
    budgets existed). ``0``: batches of a count; a positive number: that budget.
    """
    if batch_tokens is not None:
        return batch_tokens or None
    per_token = encoder.token_bytes() if is_staged(encoder) else None  # type: ignore[attr-defined]
    if not per_token:
        return None
    low, high = AUTO_TOKENS
    return max(low, min(high, AUTO_BYTES // per_token))


def run_batches(encoder: Encoder, sentences: Sequence[Sequence[str]],
                spans: Sequence[tuple[int, int]], done: Callable[[int, int, Encoded], None], *,
                batch_size: int = 32, batch_tokens: int | None = None) -> None:
    """Encode ``sentences`` in batches, in order, calling ``done(start, stop, vectors)`` for each.

    Args:
        encoder: any encoder; a :class:`~ncprobe.encoders.base.StagedEncoder` has its stages
            overlapped (see the module's description).
        sentences, spans: the items, in the order they are batched.
        done: called on this thread with each batch's positions and vectors, in order.
        batch_size: items per batch (without a token budget).
        batch_tokens: the token budget of a batch (its items x its longest item's tokens);
            only an encoder that tokenises (a staged one) can be batched by it. ``None``:
            automatic, ``0``: none (see :func:`token_budget`).

    Raises:
        SentenceTooLongError: with ``index`` the position of the sentence in ``sentences``.
    """
    if not sentences:
        return
    budget = token_budget(encoder, batch_tokens)
    if not is_staged(encoder):
        if budget is not None:
            log.warning("%s does not tokenise into sub-words: batches of %d sentences, not "
                        "by a token budget", encoder.name, batch_size)
        for start, stop in plan_batches([1] * len(sentences), batch_size):
            with _from(start):
                enc = encoder.encode(sentences[start:stop], spans[start:stop])
            done(start, stop, enc)
        return
    staged: StagedEncoder = encoder  # type: ignore[assignment]
    staged.load()  # the weights: here, before two threads use the model
    log.info("%s: batches of %s", encoder.name,
             f"up to {budget} tokens" if budget else f"{batch_size} sentences")
    inflight: deque = deque()
    start = stop = 0
    try:
        with Prefetch(_prepared(staged, sentences, spans, batch_size, budget)) as ready:
            for start, stop, batch in ready:
                inflight.append((start, stop, staged.launch(batch)))
                if len(inflight) > 1:  # the device has the next batch: take the previous one's
                    a, b, launched = inflight.popleft()
                    done(a, b, staged.collect(launched))
            while inflight:
                a, b, launched = inflight.popleft()
                done(a, b, staged.collect(launched))
    except BaseException as e:
        _keep(staged, inflight, done)
        if type(e).__name__ != "OutOfMemoryError":  # torch's, by name: torch is not imported here
            raise
        how = f"--batch-tokens {budget}" if budget else f"--batch-size {batch_size}"
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
        raise NcprobeError(
            f"{encoder.name}: the device ran out of memory on a batch of {stop - start} "
            f"sentences ({how}). Run again with a smaller token budget (--batch-tokens N) or "
            "--batch-size (with --batch-tokens 0); the batches encoded before it are kept in "
            f"the embedding cache [{first}]") from e


def _keep(encoder: StagedEncoder, inflight: deque, done: Callable[[int, int, Encoded], None]
          ) -> None:
    """When a run stops (an error, an interrupt): hand on the batches already launched, so
    that their vectors are stored too; a failure here leaves the rest (the run's own error
    is what is raised)."""
    while inflight:
        a, b, launched = inflight.popleft()
        try:
            done(a, b, encoder.collect(launched))
        except Exception:  # noqa: BLE001 - the error that stopped the run is raised instead
            log.debug("batch %d-%d not kept after the run stopped", a, b, exc_info=True)
            return


@contextlib.contextmanager
def _from(start: int) -> Iterator[None]:
    """A batch starting at position ``start``: a too-long sentence's index, which the
    encoder gives within the batch, becomes its position among all the sentences."""
    try:
        yield
    except SentenceTooLongError as e:
        e.index += start
        raise


def _prepared(encoder: StagedEncoder, sentences: Sequence[Sequence[str]],
              spans: Sequence[tuple[int, int]], batch_size: int, batch_tokens: int | None
              ) -> Iterator[tuple[int, int, object]]:
    """On the worker thread: tokenise in chunks, cut batches, collate them."""
    cut = Batcher(batch_size, batch_tokens)
    tokens: list = []  # the tokenised items from ``offset`` on
    offset = 0

    def collate(start: int, stop: int):
        nonlocal tokens, offset
        with _from(start):
            batch = encoder.collate(tokens[start - offset:stop - offset], sentences[start:stop],
                                    spans[start:stop])
        tokens, offset = tokens[stop - offset:], stop
        return start, stop, batch

    chunks = _tokenized_ahead(encoder, sentences)
    try:
        for chunk in chunks:
            tokens += chunk
            for closed in cut.add_all(np.fromiter(map(len, chunk), np.int64, len(chunk))):
                yield collate(*closed)
    finally:  # stopped early: its thread stops now
        chunks.close()
    last = cut.finish()
    if last is not None:
        yield collate(*last)


def _tokenized_ahead(encoder: StagedEncoder, sentences: Sequence[Sequence[str]]
                     ) -> Generator[list, None, None]:
    """The sentences tokenised, chunk by chunk (:data:`FIRST_CHUNK` sentences, then twice as
    many each time, up to :data:`TOKENIZE_CHUNK`), each next chunk tokenised on a thread of
    its own while this one's batches are collated and wait for the model: the worker's
    queue holds only :data:`PREFETCH` batches, and without this the device would wait for
    every chunk's tokenising (the two would take turns instead of overlapping)."""
    bounds, lo, size = [], 0, min(FIRST_CHUNK, TOKENIZE_CHUNK)
    while lo < len(sentences):
        bounds.append((lo, lo + size))
        lo, size = lo + size, min(2 * size, TOKENIZE_CHUNK)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ncprobe-tokenize") as pool:
        ahead: deque[Future] = deque()
        try:
            for a, b in bounds:
                ahead.append(pool.submit(encoder.tokenize, sentences[a:b]))
                if len(ahead) > 1:  # the next chunk is under way: hand on the one before
                    yield ahead.popleft().result()
            while ahead:
                yield ahead.popleft().result()
        finally:
            for f in ahead:  # stopped early: nothing more is tokenised
                f.cancel()


class Prefetch:
    """Runs a generator on a worker thread, up to :data:`PREFETCH` items ahead of the loop
    that iterates this object. An exception in the generator is raised in that loop; leaving
    the ``with`` block (at the end, or on an exception or interrupt) stops the worker."""

    def __init__(self, items: Iterator, depth: int = PREFETCH) -> None:
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(items,), daemon=True,
                                        name="ncprobe-prepare")

    def __enter__(self) -> "Prefetch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        while self._thread.is_alive():
            try:  # make room, so that a worker waiting to put sees the stop
                self._queue.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, items: Iterator) -> None:
        try:
            for item in items:
                if not self._put(("item", item)):
                    return
            self._put(("end", None))
        except BaseException as e:  # noqa: BLE001 - handed to the consuming thread
            self._put(("error", e))
        finally:  # stopped early: the generator's own clean-up runs here, not when collected
            close = getattr(items, "close", None)
            if close is not None:
                close()

    def __iter__(self) -> Iterator:
        while True:
            kind, item = self._queue.get()
            if kind == "end":
                return
            if kind == "error":
                raise item
            yield item


class BackgroundWriter:
    """Runs writes on up to ``workers`` threads at once, and hands what each returns, in the
    order they were submitted, to its ``then`` on the thread that submits (a shard written on
    a worker is then named and indexed under the lock that thread holds).

    :meth:`submit` waits only when ``workers`` writes are under way: it takes the oldest (its
    error raised, its ``then`` run) before handing over the next, so at most ``workers``
    batches of shards are held beside the one being filled. With one worker, the writes run
    one at a time, in order.
    """

    def __init__(self, workers: int = 1) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ncprobe-write")
        self._under_way: deque[tuple[Future, Callable | None]] = deque()

    def submit(self, write: Callable, *args, then: Callable | None = None) -> None:
        """Run ``write(*args)`` on a worker; later, on this thread, ``then(its result)``."""
        while len(self._under_way) >= self.workers:
            self._take()
        self._under_way.append((self._pool.submit(write, *args), then))

    def _take(self) -> None:
        done, then = self._under_way.popleft()
        got = done.result()
        if then is not None:
            then(got)

    def wait(self) -> None:
        """Wait for every write under way and hand each on, in order; the first error is
        raised once the others have been taken (what they wrote is not lost to it)."""
        first: BaseException | None = None
        while self._under_way:
            try:
                self._take()
            except BaseException as e:  # noqa: BLE001 - raised below, after the others
                first = first or e
        if first is not None:
            raise first

    def close(self) -> None:
        """Wait for the writes under way (the first error raised) and stop the threads."""
        try:
            self.wait()
        finally:
            self._pool.shutdown(wait=True)

    def __enter__(self) -> "BackgroundWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
