"""What ncprobe adds around the forward passes, measured without a model (and without a GPU).

On a GPU the forward pass of a small model over the English stimuli takes about a second, so
what ``embed`` does besides it (item keys, tokenising, collating, the cache's writes, the
stages' bookkeeping) decides how close a run comes to the bare forward pass. This times
:func:`ncprobe.embed.embed` with an encoder that tokenises and collates with a real
tokenizer (minilm's) but runs no model (its vectors are zeros of the given width), into an
empty store, next to tokenising alone (which the bare forward pass does too).

Run: ``NCPROBE_DATA=../shared/ncimp/raw python benchmarks/embed_overhead.py [--dims 384,2048]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import warnings

import numpy as np


class NoModel:
    """minilm's tokenising and collation, no model: the staged encoder protocol with a
    ``launch`` that does nothing and vectors of zeros."""

    levels = ("sent", "nc")
    views = ((-1,),)

    def __init__(self, real, dim: int) -> None:
        self.real, self.dim, self.name = real, dim, f"no-model-{dim}"

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

    def launch(self, batch) -> int:
        return int(batch.meta.shape[1])

    def collect(self, n: int):
        from ncprobe.encoders.base import Encoded

        vectors = np.zeros((n, 1, self.dim), np.float32)
        return Encoded(vectors, vectors, np.zeros(n, np.int32), np.zeros(n, np.int32))

    def encode(self, sentences, spans):
        return self.collect(self.launch(self.collate(self.tokenize(sentences), sentences,
                                                     spans)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dims", default="384,2048", help="vector widths (384: minilm, 2048: the "
                    "0.82B LLaMA)")
    ap.add_argument("--budgets", default="0,16384", help="--batch-tokens values (0: batches "
                    "of 32)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import ncprobe
    from ncprobe.cache import EmbeddingStore
    from ncprobe.embed import embed
    from ncprobe.encoders import load_encoder

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        stim = ncprobe.load_stimuli("en", contexts="nat,neut")
    real = load_encoder("minilm", "en")
    real.load()
    sentences = [s.tokens for s in stim]
    times = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        real.tokenize(sentences)
        times.append(time.perf_counter() - t)
    print(f"{len(stim)} stimuli; tokenising alone {np.median(times):.2f} s (median of "
          f"{args.repeat})")
    for dim in (int(d) for d in args.dims.split(",")):
        enc = NoModel(real, dim)
        for budget in (int(b) for b in args.budgets.split(",")):
            times = []
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory() as tmp:
                    t = time.perf_counter()
                    embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp),
                          batch_tokens=budget, progress=False)
                    times.append(time.perf_counter() - t)
            runs = ", ".join(f"{x:.2f}" for x in times)
            print(f"width {dim}, batch tokens {budget or 'none (32 sentences)'}: embed without "
                  f"a model {np.median(times):.2f} s (runs {runs})")


if __name__ == "__main__":
    main()
