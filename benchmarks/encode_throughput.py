"""Encoding throughput: ncprobe vs a naive loop vs one bare batched forward pass.

Encodes the English stimuli (naturalistic + neutral, sentence and NC level)
with ``minilm`` three ways and prints sentences per second and the ratios:

* ncprobe: :func:`ncprobe.embed.embed` (dedup, length-sorted batches, pooling),
  first into an empty store, then a cached rerun;
* naive: one sentence per forward pass, the original re-encoded for every
  probe (as the reference code does), on ``--naive-contexts`` contexts
  (its rate is per sentence, so a sample gives it);
* floor (tokfloor): one batched forward pass over the unique sentences, no pooling, each
  batch tokenised just before it runs;
* devfloor: the same forward passes with every batch tokenised and on the device before the
  clock starts: the forward passes alone, the time no implementation that runs the model
  once per unique sentence can beat.

Run: ``NCPROBE_DATA=../shared/ncimp/raw python benchmarks/encode_throughput.py``.
Targets on a 2-core CPU: ncprobe >= 10x naive, <= 1.3x the floor's time, cached
rerun <= 5% of the first run.

``--model`` takes any model ``load_encoder`` takes (an alias, a hub id or a local
directory), ``--layers`` its layer views (``last4``, ``all``, ...), ``--device cuda --dtype
bfloat16`` runs it on a GPU in half precision;
every GPU timing ends with a synchronisation. On a GPU, one untimed batched pass over
every sentence runs first: the first batch of each new shape pays for kernel selection,
and without the warm-up that cost would fall on whichever method is timed first.
Batches follow ncprobe's rule (``--batch-tokens``: a token budget, ``0``: ``--batch-size``
sentences, default: ncprobe's automatic choice, a budget on a CUDA GPU: see
:mod:`ncprobe.batches`), and the floor runs the same rule on its sentences, so both sides
get batches of one kind. ncprobe (into an empty store) and the floor are timed
``--repeat`` times, alternated, and their medians compared; on a GPU each runs once untimed
first. ``--naive-contexts 0`` leaves the naive loop out; ``--profile`` prints where the
time goes in a further ncprobe run (cProfile). The script also runs on an ncprobe from
before token budgets (``PYTHONPATH=<older checkout>``), batching by count.
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
    ap.add_argument("--batch-tokens", type=int, default=None,
                    help="token budget per batch, for ncprobe and the floor (default: "
                         "ncprobe's automatic choice; 0: --batch-size sentences)")
    ap.add_argument("--repeat", type=int, default=3,
                    help="timed ncprobe runs and floor passes, alternated (medians reported)")
    ap.add_argument("--profile", action="store_true",
                    help="profile a further ncprobe run (not timed) and print the top functions")
    ap.add_argument("--naive-contexts", type=int, default=40,
                    help="contexts encoded by the naive loop (its rate is per sentence; 0: "
                         "no naive loop)")
    ap.add_argument("--contexts", default="nat,neut")
    ap.add_argument("--lang", default="en")
    ap.add_argument("--model", default="minilm", help="alias, hub id or local directory")
    ap.add_argument("--device", default=None, help="cpu, cuda, ... (default: the encoder's)")
    ap.add_argument("--dtype", default=None, help="float32 (default), float16 or bfloat16")
    ap.add_argument("--layers", default=None, help="layer views: last4 (default), all, ...")
    args = ap.parse_args()

    import ncprobe
    from ncprobe.cache.store import EmbeddingStore
    from ncprobe.embed import embed
    from ncprobe.encoders import load_encoder

    try:  # an ncprobe from before token budgets (a baseline) batches by count only
        from ncprobe.batches import plan_batches, token_budget
    except ImportError:
        plan_batches = token_budget = None  # type: ignore[assignment]
        if args.batch_tokens:
            raise SystemExit("this ncprobe has no token budgets: leave --batch-tokens "
                             "out") from None

    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        stim = ncprobe.load_stimuli(args.lang, contexts=args.contexts)
    options = {k: v for k, v in (("device", args.device), ("dtype", args.dtype),
                                 ("layers", args.layers)) if v}
    enc = load_encoder(args.model, args.lang, **options)
    # the transformer that runs under the encoder (sentence-transformers wrap one)
    hf = enc.tokens if hasattr(type(enc), "tokens") else enc
    tok, model = hf.tokenizer, hf.model  # weights load lazily: load them before any timer
    first_stim = next(iter(stim))
    enc.encode([first_stim.tokens] * 4, [first_stim.span] * 4)  # warm the device up
    n_stim = len(stim)
    budget = token_budget(enc, args.batch_tokens) if token_budget is not None else None
    embed_kw: dict = {"batch_size": args.batch_size, "progress": False}
    if token_budget is not None:
        embed_kw["batch_tokens"] = args.batch_tokens

    def sync() -> None:  # GPU work is asynchronous: a timer must wait for it
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    unique = sorted({s.tokens for s in stim}, key=len)
    # the floor's batches: the same rule as ncprobe's (a count, or the token budget)
    if budget is None:
        plan = [(b, min(b + args.batch_size, len(unique)))
                for b in range(0, len(unique), args.batch_size)]
    else:
        lengths = [len(ids) for ids in tok([list(u) for u in unique],
                                           is_split_into_words=True)["input_ids"]]
        plan = plan_batches(lengths, args.batch_size, budget)

    def floor() -> float:
        sync()
        t = time.perf_counter()
        with torch.inference_mode():
            for b, e in plan:
                batch = tok([list(u) for u in unique[b:e]],
                            is_split_into_words=True, padding=True, return_tensors="pt")
                inputs = {k: v.to(model.device) for k, v in batch.items()
                          if k in ("input_ids", "attention_mask", "token_type_ids")}
                model(**inputs, output_hidden_states=True)
        sync()
        return time.perf_counter() - t

    def on_device() -> list[dict]:
        """Every floor batch tokenised and on the device (before a clock starts)."""
        out = []
        for b, e in plan:
            batch = tok([list(u) for u in unique[b:e]], is_split_into_words=True,
                        padding=True, return_tensors="pt")
            out.append({k: v.to(model.device) for k, v in batch.items()
                        if k in ("input_ids", "attention_mask", "token_type_ids")})
        return out

    def devfloor(batches: list[dict]) -> float:
        sync()
        t = time.perf_counter()
        with torch.inference_mode():
            for inputs in batches:
                model(**inputs, output_hidden_states=True)
        sync()
        return time.perf_counter() - t

    def ncprobe_run(root: str):
        sync()
        t = time.perf_counter()
        got = embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=root), **embed_kw)
        sync()
        return time.perf_counter() - t, got

    ready = on_device()
    if hf.device.type == "cuda":  # warm-up: every batch shape once, untimed, on both sides
        floor()
        devfloor(ready)
        with tempfile.TemporaryDirectory() as tmp:
            ncprobe_run(tmp)
    runs, floors, devfloors = [], [], []
    for _ in range(args.repeat):  # alternated, so that a drift of the machine hits both
        with tempfile.TemporaryDirectory() as tmp:
            t_run, first = ncprobe_run(tmp)
            runs.append(t_run)
            if len(runs) == 1:  # the cached rerun, once
                t = time.perf_counter()
                again = embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp),
                              **embed_kw)
                t_cached = time.perf_counter() - t
                assert again.encoded == 0
                np.testing.assert_array_equal(first.span, again.span)  # read back as written
        floors.append(floor())
        devfloors.append(devfloor(ready))
    del ready
    t_ncprobe, t_floor = float(np.median(runs)), float(np.median(floors))
    t_dev = float(np.median(devfloors))
    spread = (f"ncprobe runs {', '.join(f'{x:.2f}' for x in runs)} s; floor passes "
              f"{', '.join(f'{x:.2f}' for x in floors)} s; devfloor passes "
              f"{', '.join(f'{x:.2f}' for x in devfloors)} s")
    if args.profile:
        import cProfile
        import pstats

        with tempfile.TemporaryDirectory() as tmp, cProfile.Profile() as prof:
            embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp), **embed_kw)
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
    batching = f"batches of up to {budget} tokens" if budget else \
        f"batches of {args.batch_size} sentences"
    if not args.naive_contexts:
        print(f"model: {args.model}; dtype: {hf.dtype}; views: {len(hf.views)}; {batching}; "
              f"{len(plan)} floor batches")
        print(spread)
        print(f"ncprobe {t_ncprobe:.2f} s; floor {t_floor:.2f} s; devfloor {t_dev:.2f} s; "
              f"ncprobe/floor {t_ncprobe / t_floor:.2f}x; ncprobe/devfloor "
              f"{t_ncprobe / t_dev:.2f}x; cached rerun {t_cached:.2f} s (medians of "
              f"{args.repeat})")
        return
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
    print(f"model: {args.model}; dtype: {hf.dtype}; views: {len(hf.views)}; device: {where}; "
          f"{batching}; "
          f"{len(plan)} floor batches")
    print(spread)
    print(f"stimuli: {n_stim}; unique items: {first.unique}; unique sentences: {len(unique)}")
    print(f"ncprobe      {t_ncprobe:8.1f} s  {n_stim / t_ncprobe:8.1f} stimuli/s")
    print(f"cached rerun {t_cached:8.2f} s  ({100 * t_cached / t_ncprobe:.1f}% of the first run)")
    print(f"floor        {t_floor:8.1f} s  {len(unique) / t_floor:8.1f} sentences/s "
          f"(ncprobe / floor = {t_ncprobe / t_floor:.2f}x)")
    print(f"devfloor     {t_dev:8.2f} s  {len(unique) / t_dev:8.1f} sentences/s "
          f"(ncprobe / devfloor = {t_ncprobe / t_dev:.2f}x)")
    print(f"naive        {naive_rate:8.1f} sentences/s on {n_naive} sentences; whole set "
          f"~{t_naive_full:.0f} s (ncprobe is {t_naive_full / t_ncprobe:.1f}x faster)")
    print(f"bound        the floor is {t_naive_full / t_floor:.1f}x faster than the naive loop: "
          "no implementation that runs the model once over every unique sentence can beat "
          "that ratio on this machine")
    print(f"peak memory  {peak:8.0f} MB (max RSS)")
    if hf.device.type == "cuda":
        print(f"peak GPU     {torch.cuda.max_memory_allocated() / 2**20:8.0f} MB allocated")


if __name__ == "__main__":
    main()
