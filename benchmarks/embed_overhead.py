"""What ncprobe adds around the forward passes, measured without a model (and without a GPU).

On a GPU the forward pass of a small model over the English stimuli takes about a second, so
what ``embed`` does besides it (item keys, tokenising, collating, the cache's writes, the
stages' bookkeeping) decides how close a run comes to the bare forward pass. This times
:func:`ncprobe.embed.embed` with an encoder that tokenises and collates with a real
tokenizer (minilm's) but runs no model (its vectors are zeros of the given width), into an
empty store, next to tokenising alone (which the bare forward pass does too).

``--device-ms`` adds a simulated device: each batch's forward pass becomes a sleep of that
many milliseconds per thousand padded tokens, on a thread of its own, in order, while the
caller goes on (as a CUDA stream runs queued kernels; a sleep holds no interpreter lock, as a
GPU does not). The floor is then simulated as the bare forward pass of
``encode_throughput.py`` runs on a GPU: per batch, tokenise with transformers, wait for the
device (its copy of the inputs waits for the previous batch), queue the batch. So
``ncprobe / floor`` here is what the stages' overlap, the item keys, the cache's writes and
their last wait add to a device of that speed, without the model's own kernel launches (the
same on both sides).

Run: ``NCPROBE_DATA=../shared/ncimp/raw python benchmarks/embed_overhead.py [--dims 384,2048]
[--device-ms 2,6]``. It also runs on an older ncprobe (``PYTHONPATH=<older checkout>``) that
has staged encoders.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np


class Device:
    """A simulated device: :meth:`run` queues a batch of ``tokens`` padded tokens, which
    takes ``ms_per_ktoken`` per thousand, on one thread, in order."""

    def __init__(self, ms_per_ktoken: float) -> None:
        self.rate = ms_per_ktoken / 1e6  # seconds per token
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="device")
        self.busy = 0.0  # seconds of work queued

    def run(self, tokens: int) -> Future:
        seconds = tokens * self.rate
        self.busy += seconds
        return self.pool.submit(time.sleep, seconds)


class NoModel:
    """minilm's tokenising and collation, no model: the staged encoder protocol with a
    ``launch`` that queues the batch on a simulated :class:`Device` (or does nothing) and
    vectors of zeros."""

    levels = ("sent", "nc")
    views = ((-1,),)

    def __init__(self, real, dim: int, device: Device | None = None) -> None:
        self.real, self.dim, self.device = real, dim, device
        self.name = f"no-model-{dim}"

    def fingerprint(self) -> dict:
        return {"family": "no-model", "dim": self.dim}

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
        return n, self.device.run(n * width) if self.device is not None else None

    def collect(self, launched):
        from ncprobe.encoders.base import Encoded

        n, done = launched
        if done is not None:
            done.result()
        vectors = np.zeros((n, 1, self.dim), np.float32)
        return Encoded(vectors, vectors, np.zeros(n, np.int32), np.zeros(n, np.int32))

    def encode(self, sentences, spans):
        from ncprobe.encoders.base import encode_in_stages

        return encode_in_stages(self, sentences, spans)


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="384,2048", help="vector widths (384: minilm, 2048: the "
                    "0.82B LLaMA)")
    ap.add_argument("--budgets", default="0,16384", help="--batch-tokens values (0: batches "
                    "of 32)")
    ap.add_argument("--device-ms", default="", help="simulated devices: milliseconds per "
                    "thousand padded tokens, comma-separated (empty: no device)")
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
    for dim in (int(d) for d in args.dims.split(",")):
        for budget in (int(b) for b in args.budgets.split(",")):
            plan = plan_batches(lengths, 32, budget or None)
            for rate in rates:
                runs, floors, busy = [], [], 0.0
                for _ in range(args.repeat):  # alternated with the floor
                    device = Device(rate) if rate is not None else None
                    enc = NoModel(real, dim, device)
                    with tempfile.TemporaryDirectory() as tmp:
                        t = time.perf_counter()
                        embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp),
                              batch_tokens=budget, progress=False)
                        runs.append(time.perf_counter() - t)
                    if device is not None:
                        busy = device.busy
                        floors.append(simulated_floor(tokenizer, unique, plan,
                                                      Device(rate)))
                what = (f"width {dim}, batch tokens {budget or 'none (32 sentences)'}, "
                        f"{len(plan)} batches")
                listed = ", ".join(f"{x:.2f}" for x in runs)
                if rate is None:
                    print(f"{what}: embed without a model {np.median(runs):.2f} s (runs "
                          f"{listed})")
                    continue
                ratio = np.median(runs) / np.median(floors)
                print(f"{what}, device {rate:g} ms/1k tokens ({busy:.2f} s busy): embed "
                      f"{np.median(runs):.2f} s (runs {listed}); floor "
                      f"{np.median(floors):.2f} s (runs "
                      f"{', '.join(f'{x:.2f}' for x in floors)}); ratio {ratio:.2f}x")


if __name__ == "__main__":
    main()
