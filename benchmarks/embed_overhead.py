"""What ncprobe adds around the forward passes, measured without a model (and without a GPU).

On a GPU the forward pass of a small model over the English stimuli takes about a second, so
what ``embed`` does besides it (item keys, tokenising, collating, the cache's writes, the
stages' bookkeeping) decides how close a run comes to the bare forward pass. This times
:func:`ncprobe.embed.embed` with an encoder that tokenises and collates with a real
tokenizer (minilm's) but runs no model, into an empty store, next to tokenising alone (which
the bare forward pass does too). Its vectors (``--views`` layer views of ``--dims`` width,
sentence and span) come back as the real encoder's do: in a host buffer that a pool hands
out as torch's pinned-memory cache does, read by this ncprobe's own code
(``ncprobe.encoders._stages.host_vectors``; an older ncprobe's copies otherwise), and are
stored in full (``--dims 2048 --views 17``: 3 GB of float32 for the 11,028 unique items).

``--device-ms`` adds a simulated device: each batch's forward pass becomes a sleep of that
many milliseconds per thousand padded tokens, on a thread of its own, in order, while the
caller goes on (as a CUDA stream runs queued kernels; a sleep holds no interpreter lock, as a
GPU does not); the copy of a batch's vectors back to the host takes its bytes at 25 GB/s,
in line on that thread (an older ncprobe: the compute stream) or on a second one after it
(this ncprobe's copy stream). Two floors: the floor does per batch what
``encode_throughput.py``'s floor does on a GPU (tokenise with transformers, wait for the
device, queue the batch); the devfloor tokenises every batch before the clock starts and
only queues them (the forward passes alone). So ``embed / floor`` here is what the stages'
overlap, the item keys, the copies back, the cache's writes and their last wait add to a
device of that speed, without the model's own kernel launches (the same on both sides).
Each case runs once untimed first (the pinned pool's buffers, the page cache), then
``--repeat`` times alternated with the floors and with the vectors' bytes written to new
files alone (no model, no tokenising: what the cache's writes cost this machine at the least;
on a virtual machine whose freed memory goes back to its host, that alone can exceed the
device's time); medians. The last line is the worst ``embed / floor`` of the cases run:
``worst N.NNx``.

Run: ``NCPROBE_DATA=../shared/ncimp/raw python benchmarks/embed_overhead.py [--dims 384,2048]
[--views 17] [--device-ms 2,6]``. It also runs on an older ncprobe (``PYTHONPATH=<older
checkout>``) that has staged encoders.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np


class Device:
    """A simulated device: :meth:`run` queues a batch of ``tokens`` padded tokens, which
    takes ``ms_per_ktoken`` per thousand, on one thread, in order; :meth:`copy_back` queues
    the copy of its results to the host at ``gbps`` GB/s, on that thread (in line before the
    next batch, as a copy on the compute stream waits) or, with ``stream``, on a second one
    once the batch is done (a copy stream: it overlaps the next batch)."""

    def __init__(self, ms_per_ktoken: float, gbps: float = 25.0) -> None:
        self.rate = ms_per_ktoken / 1e6  # seconds per token
        self.gbps = gbps
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="device")
        self.copies = ThreadPoolExecutor(max_workers=1, thread_name_prefix="device-copy")
        self.busy = 0.0  # seconds of work queued

    def run(self, tokens: int) -> Future:
        seconds = tokens * self.rate
        self.busy += seconds
        return self.pool.submit(time.sleep, seconds)

    def copy_back(self, after: Future, nbytes: int, stream: bool) -> Future:
        seconds = nbytes / (self.gbps * 1e9)
        if not stream:
            return self.pool.submit(time.sleep, seconds)
        return self.copies.submit(lambda: (after.result(), time.sleep(seconds)))


class NoModel:
    """minilm's tokenising and collation, no model: the staged encoder protocol with a
    ``launch`` that queues the batch on a simulated :class:`Device` (or does nothing) and
    ``views`` layer views of vectors of ones, handed back as the real encoder hands back its
    device's output (see :func:`host_side`)."""

    levels = ("sent", "nc")

    def __init__(self, real, dim: int, device: Device | None = None, views: int = 1) -> None:
        self.real, self.dim, self.device = real, dim, device
        self.views = tuple((i,) for i in range(views))
        self.pool = PINNED
        self.name = f"no-model-{dim}x{views}"

    def fingerprint(self) -> dict:
        return {"family": "no-model", "dim": self.dim, "views": len(self.views)}

    def load(self) -> None:
        self.real.load()

    def token_bytes(self) -> None:
        return None

    def tokenize(self, sentences):
        return self.real.tokenize(sentences)

    def collate(self, tokens, sentences, spans):
        return self.real.collate(tokens, sentences, spans)

    def launch(self, batch) -> tuple[int, Future | None]:
        _, n, width = batch.grid.shape
        if self.device is None:
            return n, None
        done = self.device.run(n * width)
        nbytes = 4 * n * (2 * len(self.views) * self.dim + 2)
        return n, self.device.copy_back(done, nbytes, stream=COPY_STREAM)

    def collect(self, launched):
        n, done = launched
        if done is not None:
            done.result()
        return host_side(self.pool, n, len(self.views), self.dim)

    def encode(self, sentences, spans):
        from ncprobe.encoders.base import encode_in_stages

        return encode_in_stages(self, sentences, spans)


try:  # this ncprobe copies results back on a stream of their own (an older one did not)
    from ncprobe.encoders._stages import Transfer  # noqa: F401

    COPY_STREAM = True
except ImportError:
    COPY_STREAM = False


class PinnedPool:
    """Host buffers as torch's caching allocator of pinned memory hands them out: sizes
    rounded up to a power of two, a buffer used again once nothing refers to it (the arrays
    that view it have been dropped), a new one (its pages touched, as pinning does) only when
    none of the size is free."""

    def __init__(self) -> None:
        self.blocks: dict[int, list[np.ndarray]] = {}

    def take(self, n: int) -> np.ndarray:
        size = 1 << max(0, (n - 1).bit_length())
        free = self.blocks.setdefault(size, [])
        for block in free:
            if sys.getrefcount(block) <= 3:  # the list, this loop and getrefcount's argument
                return block[:n]
        block = np.ones(size, np.float32)
        free.append(block)
        return block[:n]


#: One pool for the process, as torch's is.
PINNED = PinnedPool()


def host_side(pool: PinnedPool, n: int, views: int, dim: int):
    """What the host does with a batch's results once the device has copied them into
    (pinned) host memory, as the real encoder does it: this ncprobe's own code where it has it
    (``ncprobe.encoders._stages.host_vectors``: views of the buffer), else what an older one
    did (each part copied out of the buffer)."""
    from ncprobe.encoders.base import Encoded

    try:
        from ncprobe.encoders._stages import host_vectors
    except ImportError:  # an older ncprobe: each part copied out of the pinned buffer
        flat = pool.take(n * (2 * views * dim + 2)).reshape(n, 2 * views * dim + 2)
        sent = flat[:, :views * dim].reshape(n, views, dim).astype(np.float32)
        span = flat[:, views * dim:2 * views * dim].reshape(n, views, dim).astype(np.float32)
        return Encoded(sent, span, flat[:, -2].astype(np.int32), flat[:, -1].astype(np.int32))
    return host_vectors(pool.take(2 * views * n * dim + 2 * n), n, views, dim)


def simulated_floor(tokenizer, sentences, plan, device: Device) -> float:
    """The bare batched forward pass of ``encode_throughput.py`` against ``device``: per
    batch, tokenise with transformers, wait for the device, queue the batch."""
    t = time.perf_counter()
    last: Future | None = None
    for b, e in plan:
        ids = tokenizer([list(s) for s in sentences[b:e]], is_split_into_words=True,
                        padding=True, return_tensors="np")["input_ids"]
        if last is not None:
            last.result()
        last = device.run(int(ids.size))
    if last is not None:
        last.result()
    return time.perf_counter() - t


def simulated_devfloor(tokenizer, sentences, plan, device: Device) -> float:
    """The device-only floor: every batch tokenised before the clock starts, then each
    queued on ``device``, waiting only for the last (the time of the forward passes alone)."""
    batches = [tokenizer([list(s) for s in sentences[b:e]], is_split_into_words=True,
                         padding=True, return_tensors="np")["input_ids"] for b, e in plan]
    t = time.perf_counter()
    last = None
    for ids in batches:
        last = device.run(int(ids.size))
    if last is not None:
        last.result()
    return time.perf_counter() - t


def writes_alone(nbytes: int, folder: str, piece: int = 128 << 20) -> float:
    """Writing ``nbytes`` to new files in ``folder`` (pieces of ``piece`` bytes, no flush to
    disk), and nothing else: what the cache's writes of a run cost this machine at the
    least (timed; the files are deleted after)."""
    block = memoryview(np.ones(piece // 4, np.float32)).cast("B")
    t = time.perf_counter()
    written, names = 0, []
    while written < nbytes:
        n = min(piece, nbytes - written)
        names.append(f"{folder}/piece-{len(names)}")
        with open(names[-1], "wb") as fh:
            fh.write(block[:n])
        written += n
    took = time.perf_counter() - t
    for name in names:
        os.remove(name)
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="384,2048", help="vector widths (384: minilm, 2048: the "
                    "0.82B LLaMA)")
    ap.add_argument("--budgets", default="0,16384", help="--batch-tokens values (0: batches "
                    "of 32)")
    ap.add_argument("--device-ms", default="", help="simulated devices: milliseconds per "
                    "thousand padded tokens, comma-separated (empty: no device)")
    ap.add_argument("--views", type=int, default=1, help="layer views pooled and stored per "
                    "item (17: a 16-layer model's --layers all)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import ncprobe
    from ncprobe.batches import plan_batches
    from ncprobe.cache.store import EmbeddingStore
    from ncprobe.embed import embed
    from ncprobe.encoders import load_encoder

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        stim = ncprobe.load_stimuli("en", contexts="nat,neut")
    real = load_encoder("minilm", "en")
    real.load()
    tokenizer = real.tokens.tokenizer  # the transformer under the sentence-transformers model
    sentences = [s.tokens for s in stim]
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        real.tokenize(sentences)
        times.append(time.perf_counter() - t)
    print(f"{len(stim)} stimuli; tokenising alone {np.median(times):.2f} s (median of "
          f"{args.repeat})")
    unique = sorted({s.tokens for s in stim}, key=len)
    lengths = [len(x) for x in real.tokenize(unique)]
    rates = [float(x) for x in args.device_ms.split(",") if x] or [None]
    ratios: list[float] = []
    for dim in (int(d) for d in args.dims.split(",")):
        for budget in (int(b) for b in args.budgets.split(",")):
            plan = plan_batches(lengths, 32, budget or None)
            for rate in rates:
                def timed(rate=rate, dim=dim, budget=budget) -> tuple[float, float]:
                    device = Device(rate) if rate is not None else None
                    enc = NoModel(real, dim, device, args.views)
                    with tempfile.TemporaryDirectory() as tmp:
                        t = time.perf_counter()
                        embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp),
                              batch_tokens=budget, progress=False)
                        return time.perf_counter() - t, device.busy if device else 0.0

                timed()  # untimed: the pinned pool's buffers, the page cache, first calls
                runs, floors, devfloors, writes, busy = [], [], [], [], 0.0
                nbytes = 4 * len(unique) * (2 * args.views * dim + 2)
                for _ in range(args.repeat):  # alternated with the floors
                    took, busy = timed()
                    runs.append(took)
                    if rate is not None:
                        floors.append(simulated_floor(tokenizer, unique, plan, Device(rate)))
                        devfloors.append(simulated_devfloor(tokenizer, unique, plan,
                                                            Device(rate)))
                        with tempfile.TemporaryDirectory() as tmp:
                            writes.append(writes_alone(nbytes, tmp))
                what = (f"width {dim} x {args.views} views, batch tokens "
                        f"{budget or 'none (32 sentences)'}, {len(plan)} batches")
                listed = ", ".join(f"{x:.2f}" for x in runs)
                if rate is None:
                    print(f"{what}: embed without a model {np.median(runs):.2f} s (runs "
                          f"{listed})")
                    continue
                ratio = np.median(runs) / np.median(floors)
                ratios.append(ratio)
                print(f"{what}, device {rate:g} ms/1k tokens ({busy:.2f} s busy): embed "
                      f"{np.median(runs):.2f} s (runs {listed}); floor "
                      f"{np.median(floors):.2f} s (runs "
                      f"{', '.join(f'{x:.2f}' for x in floors)}); devfloor "
                      f"{np.median(devfloors):.2f} s; the vectors' {nbytes / 1e9:.2f} GB "
                      f"written alone {np.median(writes):.2f} s (runs "
                      f"{', '.join(f'{x:.2f}' for x in writes)}); ratio {ratio:.2f}x, to "
                      f"the devfloor {np.median(runs) / np.median(devfloors):.2f}x")

    if ratios:
        print(f"worst {max(ratios):.2f}x")


if __name__ == "__main__":
    main()
