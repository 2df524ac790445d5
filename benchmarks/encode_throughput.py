"""Encoding throughput: ncprobe vs a naive loop vs one bare batched forward pass.

Encodes the English stimuli (naturalistic + neutral, sentence and NC level)
with ``minilm`` three ways and prints sentences per second and the ratios:

* ncprobe: :func:`ncprobe.embed.embed` (dedup, length-sorted batches, pooling),
  first into an empty store, then a cached rerun;
* naive: one sentence per forward pass, the original re-encoded for every
  probe (as the reference code does), on ``--naive-contexts`` contexts
  (its rate is per sentence, so a sample gives it);
* floor: one batched forward pass over the unique sentences, no pooling.

Run: ``NCPROBE_DATA=../shared/ncimp/raw python benchmarks/encode_throughput.py``.
Targets on a 2-core CPU: ncprobe >= 10x naive, <= 1.3x the floor's time, cached
rerun <= 5% of the first run.

``--model`` takes any model ``load_encoder`` takes (an alias, a hub id or a local
directory), ``--device cuda --dtype bfloat16`` runs it on a GPU in half precision;
every GPU timing ends with a synchronisation. On a GPU, one untimed batched pass over
every sentence runs first: the first batch of each new shape pays for kernel selection,
and without the warm-up that cost would fall on whichever method is timed first.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
import warnings

import numpy as np
import torch


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--naive-contexts", type=int, default=40,
                    help="contexts encoded by the naive loop (its rate is per sentence)")
    ap.add_argument("--contexts", default="nat,neut")
    ap.add_argument("--lang", default="en")
    ap.add_argument("--model", default="minilm", help="alias, hub id or local directory")
    ap.add_argument("--device", default=None, help="cpu, cuda, ... (default: the encoder's)")
    ap.add_argument("--dtype", default=None, help="float32 (default), float16 or bfloat16")
    args = ap.parse_args()

    import ncprobe
    from ncprobe.cache import EmbeddingStore
    from ncprobe.embed import embed
    from ncprobe.encoders import load_encoder

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        stim = ncprobe.load_stimuli(args.lang, contexts=args.contexts)
    options = {k: v for k, v in (("device", args.device), ("dtype", args.dtype)) if v}
    enc = load_encoder(args.model, args.lang, **options)
    # the transformer that runs under the encoder (sentence-transformers wrap one)
    hf = enc.tokens if hasattr(type(enc), "tokens") else enc
    tok, model = hf.tokenizer, hf.model  # weights load lazily: load them before any timer
    first_stim = next(iter(stim))
    enc.encode([first_stim.tokens] * 4, [first_stim.span] * 4)  # warm the device up
    n_stim = len(stim)

    def sync() -> None:  # GPU work is asynchronous: a timer must wait for it
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    unique = sorted({s.tokens for s in stim}, key=len)

    def floor() -> float:
        sync()
        t = time.perf_counter()
        with torch.inference_mode():
            for b in range(0, len(unique), args.batch_size):
                batch = tok([list(u) for u in unique[b:b + args.batch_size]],
                            is_split_into_words=True, padding=True, return_tensors="pt")
                inputs = {k: v.to(model.device) for k, v in batch.items()
                          if k in ("input_ids", "attention_mask", "token_type_ids")}
                model(**inputs, output_hidden_states=True)
        sync()
        return time.perf_counter() - t

    if hf.device.type == "cuda":
        floor()  # warm-up: every batch shape once, untimed

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        first = embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp),
                      batch_size=args.batch_size, progress=False)
        t_ncprobe = time.perf_counter() - t
        t = time.perf_counter()
        again = embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp),
                      batch_size=args.batch_size, progress=False)
        t_cached = time.perf_counter() - t
    assert again.encoded == 0
    # floor: one batched forward pass over the unique sentences, nothing else
    t_floor = floor()

    # naive: per context, for every probe, encode the original and the probe, one at a time
    # a seeded random sample, so naturalistic and neutral contexts come in their proportions
    all_contexts = stim.contexts()
    pick = np.random.default_rng(0).choice(len(all_contexts), args.naive_contexts, replace=False)
    contexts = [all_contexts[i] for i in sorted(pick)]
    n_naive = 0
    t = time.perf_counter()
    for _lang, nc, ctx in contexts:
        group = stim.filter(nc=nc, context=ctx)
        orig = next(s for s in group if s.probe == "original")
        for s in group:
            if s.probe == "original":
                continue
            for x in (orig, s):
                enc.encode([x.tokens], [x.span])  # returns numpy arrays: synchronised
                n_naive += 1
    t_naive = time.perf_counter() - t
    naive_rate = n_naive / t_naive
    # what the naive loop would take for the whole set: 2 forward passes per probe stimulus
    n_probe = sum(s.probe != "original" for s in stim)
    t_naive_full = 2 * n_probe / naive_rate

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    where = (torch.cuda.get_device_name() if hf.device.type == "cuda"
             else f"cpu, {torch.get_num_threads()} threads")
    print(f"model: {args.model}; dtype: {hf.dtype}; device: {where}; batch size: "
          f"{args.batch_size}")
    print(f"stimuli: {n_stim}; unique items: {first.unique}; unique sentences: {len(unique)}")
    print(f"ncprobe      {t_ncprobe:8.1f} s  {n_stim / t_ncprobe:8.1f} stimuli/s")
    print(f"cached rerun {t_cached:8.2f} s  ({100 * t_cached / t_ncprobe:.1f}% of the first run)")
    print(f"floor        {t_floor:8.1f} s  {len(unique) / t_floor:8.1f} sentences/s "
          f"(ncprobe / floor = {t_ncprobe / t_floor:.2f}x)")
    print(f"naive        {naive_rate:8.1f} sentences/s on {n_naive} sentences; whole set "
          f"~{t_naive_full:.0f} s (ncprobe is {t_naive_full / t_ncprobe:.1f}x faster)")
    print(f"bound        the floor is {t_naive_full / t_floor:.1f}x faster than the naive loop: "
          "no implementation that runs the model once over every unique sentence can beat "
          "that ratio on this machine")
    print(f"peak memory  {peak:8.0f} MB (max RSS)")
    if hf.device.type == "cuda":
        print(f"peak GPU     {torch.cuda.max_memory_allocated() / 2**20:8.0f} MB allocated")
    np.testing.assert_allclose(first.span, again.span)


if __name__ == "__main__":
    main()
