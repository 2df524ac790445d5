"""The probe generator (``ncprobe.data.generate``) validated on NCIMP itself (issue 13).

Prints a Markdown report with three parts:

a. **P_Comp regenerated**: the neutral head-only and modifier-only probes of English and
   Portuguese rebuilt with ``comp_probes`` from the neutral sentence, its tag and the
   file's ``compound noun head`` / ``compound noun modifier``, compared word by word with
   the released ``original head only`` / ``original modifier only`` sentences (read with
   the csv module): how many are identical, and each difference classified (EN article
   a/an before the span; PT determiner agreement before the span; anything else).
b. **P_Rand frequency profile** (English neutral): each word of the released random
   phrases (``nc rand freq1..5``) and of generated ones (``replace_rand``, k=5, seed=0,
   band=0.5) against the word of the compound it replaces, position by position, with
   ``wordfreq``'s Zipf frequency.
c. **compute with released vs generated P_Rand**: ``ncprobe.compute`` on the English
   neutral context, once with the released stimuli and once with the generated P_Rand,
   and the Spearman correlations with the gold score side by side, per level.

Nothing is written into the repository: the report (``report.md``) and the embedding
cache go to ``--out`` (default: a new temporary directory), and the report is printed.

Run: ``NCPROBE_DATA=../shared/ncimp/raw python validation/generated_probes.py``
(``--models glove-6b-50d`` for the static model only; ``--help`` for the options).
"""

from __future__ import annotations

import argparse
import ast
import csv
import statistics
import sys
import tempfile
import time
import warnings
from importlib import metadata
from pathlib import Path
from typing import get_args

import numpy as np

from ncprobe.data.generate import MIN_LETTERS
from ncprobe.schema import Analysis

REPO = Path(__file__).resolve().parent.parent
# Masculine/feminine forms of the Portuguese determiners that stand before the NC in the
# neutral pattern ("Este é um", "Esta é uma", "Estes são" ...).
PT_AGREEMENT = [frozenset(p) for p in (("este", "esta"), ("estes", "estas"), ("um", "uma"),
                                       ("uns", "umas"), ("o", "a"), ("os", "as"))]
EN_ARTICLES = frozenset(("a", "an"))
PROBES = {"comp-head": ("original head only", "compound noun head"),
          "comp-mod": ("original modifier only", "compound noun modifier")}
K, SEED, BAND = 5, 0, 0.5
TOP_N = 100_000


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def read_neutral(data_dir: Path, lang: str) -> list[dict[str, str]]:
    from ncprobe.data.ncimp import NEUTRAL_FILE

    path = data_dir / NEUTRAL_FILE.format(LANG=lang.upper())
    if not path.is_file():
        sys.exit(f"error: {path} not found; set NCPROBE_DATA or pass --data-dir (the directory "
                 "that `ncprobe data download` fills)")
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def tag_span(text: str) -> tuple[int, int]:
    tag = ast.literal_eval(text)
    true = [i for i, t in enumerate(tag) if t]
    if not true or true != list(range(true[0], true[-1] + 1)):
        raise ValueError(f"tag without one contiguous True run: {text}")
    return true[0], true[-1] + 1


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c).replace("|", "\\|") for c in r) + " |" for r in rows]
    return out


def pct(k: int, n: int) -> str:
    return f"{k} ({100 * k / n:.1f}%)" if n else "0"


# ---------------------------------------------------------------------------- a. P_Comp

def classify(lang: str, gen: tuple[str, ...], released: list[str], start: int) -> str:
    if list(gen) == released:
        return "identical"
    if len(gen) != len(released):
        return "other"
    diffs = [(i, g, r) for i, (g, r) in enumerate(zip(gen, released, strict=True)) if g != r]
    if any(i >= start for i, _, _ in diffs):
        return "other"
    pairs = [frozenset((g.casefold(), r.casefold())) for _, g, r in diffs]
    if lang == "en" and all(p == EN_ARTICLES for p in pairs):
        return "EN a/an"
    if lang == "pt" and all(p in PT_AGREEMENT for p in pairs):
        return "PT agreement"
    return "other"


def section_comp(data_dir: Path, n_examples: int) -> list[str]:
    from ncprobe.data.generate import comp_probes

    out = ["## a. P_Comp regenerated from the neutral files", "",
           "`comp_probes(tokens, span, head, modifier)` on each `neutral sentence` with its "
           "tag (`original sentence_tag`) and the row's `compound noun head` / `compound "
           "noun modifier`, compared with the released `original head only` / `original "
           "modifier only` sentence, word by word. The generator keeps every word outside "
           "the span by design; the released probes were written by hand.", ""]
    rows_out, examples = [], []
    for lang in ("en", "pt"):
        rows = read_neutral(data_dir, lang)
        for idx, (probe, (col, _)) in enumerate(PROBES.items()):
            counts = {"identical": 0, "EN a/an": 0, "PT agreement": 0, "other": 0}
            ex: dict[str, list[str]] = {}
            outside_kept = 0
            for r in rows:
                tokens = r["neutral sentence"].split()
                start, end = tag_span(r["original sentence_tag"])
                g = comp_probes(tokens, (start, end), r["compound noun head"],
                                r["compound noun modifier"])[idx]
                n_part = g.span[1] - g.span[0]
                outside_kept += (list(g.tokens[:start]) == tokens[:start]
                                 and list(g.tokens[start + n_part:]) == tokens[end:])
                released = r[col].split()
                kind = classify(lang, g.tokens, released, start)
                counts[kind] += 1
                if kind != "identical":
                    ex.setdefault(kind, []).append(
                        f"{r['compound']}: generated `{g.text}` / released `{' '.join(released)}`")
            n = len(rows)
            rows_out.append([lang.upper(), probe, str(n), pct(counts["identical"], n),
                             pct(n - counts["identical"], n), str(counts["EN a/an"]),
                             str(counts["PT agreement"]), str(counts["other"]),
                             f"{outside_kept}/{n}"])
            for kind, lines in ex.items():
                examples.append(f"- {lang.upper()} {probe}, {kind} ({len(lines)}): "
                                + "; ".join(lines[:n_examples]))
    out += md_table(["lang", "probe", "n", "identical", "differing", "EN a/an", "PT agreement",
                     "other", "generated keeps outside words"], rows_out)
    out += ["", "Examples of the differences (first "
            f"{n_examples} of each class, in file order):", ""] + examples
    en = read_neutral(data_dir, "en")
    exceptions = []
    for r in en:
        article = r["original head only"].split()[tag_span(r["original sentence_tag"])[0] - 1]
        if article != ("an" if r["compound noun head"][:1].lower() in "aeiou" else "a"):
            exceptions.append(f"`{article} {r['compound noun head']}`")
    out += ["", "The released English head-only article follows the first letter of the head "
            f"(`an` before a vowel letter) in {len(en) - len(exceptions)}/{len(en)} rows; the "
            f"others ({', '.join(exceptions) or 'none'}) follow the sound instead. The "
            "generator keeps the compound's article, so the generated `a`/`an` is wrong in "
            "each EN a/an row above.", ""]
    return out


# ------------------------------------------------------------------------- b. P_Rand

def profile(pairs: list[tuple[tuple[str, ...], tuple[str, ...]]], top: set[str]
            ) -> dict[str, str]:
    """Frequency profile of random phrases: (chosen words, compound words) per phrase."""
    import wordfreq

    d, zc, zs, not_top, unknown, shared, caps = [], [], [], 0, 0, 0, 0
    phrases_in_band = 0
    for words, source in pairs:
        src = {w.casefold() for w in source}
        in_band = True
        for w, s in zip(words, source, strict=True):
            z, z0 = wordfreq.zipf_frequency(w, "en"), wordfreq.zipf_frequency(s, "en")
            d.append(z - z0)
            zc.append(z)
            zs.append(z0)
            in_band &= abs(z - z0) <= 0.5 + 1e-9
            not_top += w.casefold() not in top
            unknown += z == 0
            shared += w.casefold() in src
            caps += w[:1].isupper()
        phrases_in_band += in_band
    a = np.abs(np.array(d))
    n = len(d)
    q1, q3 = np.percentile(a, [25, 75])
    distinct = len({w.casefold() for words, _ in pairs for w in words})
    return {
        "phrases": str(len(pairs)),
        "words": str(n),
        "distinct words": str(distinct),
        "median |Zipf diff|": f"{np.median(a):.2f}",
        "IQR |Zipf diff|": f"[{q1:.2f}, {q3:.2f}]",
        "max |Zipf diff|": f"{a.max():.2f}",
        "median signed diff (chosen − compound)": f"{statistics.median(d):+.2f}",
        "words within ±0.5": pct(int((a <= 0.5 + 1e-9).sum()), n),
        "words within ±1.0": pct(int((a <= 1.0 + 1e-9).sum()), n),
        "phrases with every word within ±0.5": pct(phrases_in_band, len(pairs)),
        "median Zipf, chosen words": f"{statistics.median(zc):.2f}",
        "median Zipf, compound words replaced": f"{statistics.median(zs):.2f}",
        f"not in wordfreq top {TOP_N:,}": pct(not_top, n),
        "unknown to wordfreq (Zipf 0)": pct(unknown, n),
        "shared with the compound": pct(shared, n),
        "capitalised": pct(caps, n),
    }


def section_rand(data_dir: Path, released, generated, n_examples: int) -> list[str]:
    import wordfreq

    rows = read_neutral(data_dir, "en")
    top = set(wordfreq.top_n_list("en", TOP_N))
    rel_pairs, skipped = [], []
    for r in rows:
        source = tuple(r["compound noun"].split())
        for k in range(1, K + 1):
            words = tuple(r[f"nc rand freq{k}"].split())
            if len(words) != len(source):
                skipped.append(f"{r['compound']} v{k}")
                continue
            rel_pairs.append((words, source))
    originals = {s.nc: s for s in released if s.probe == "original"}
    gen_pairs = []
    gen_by_nc: dict[str, list[str]] = {}
    for s in generated:
        if s.probe != "rand":
            continue
        o = originals[s.nc]
        words = s.tokens[s.span[0]:s.span[1]]
        gen_pairs.append((words, o.tokens[o.span[0]:o.span[1]]))
        gen_by_nc.setdefault(s.nc, []).append(" ".join(words))
    p_rel, p_gen = profile(rel_pairs, top), profile(gen_pairs, top)
    out = ["## b. P_Rand frequency profile, English neutral", "",
           f"Each random word's `wordfreq.zipf_frequency(word, 'en')` against that of the word "
           "of the compound it replaces, position by position (word 1 against the modifier, "
           "word 2 against the head). Released: the bare phrases `nc rand freq1..5` of "
           "`dataset/EN/neutral.csv`; generated: `replace_rand(load_stimuli('en', "
           f"contexts='neut'), k={K}, seed={SEED}, band={BAND})` (wordfreq "
           f"{metadata.version('wordfreq')}, candidates: its top {TOP_N:,} words, "
           f"alphabetic, at least {MIN_LETTERS} letters, and for other languages than English "
           "not more frequent in English).", ""]
    if skipped:
        out += [f"Released phrases left out (word count differs from the compound's): "
                f"{len(skipped)}: {', '.join(skipped)}", ""]
    out += md_table(["", "released", "generated"],
                    [[k, p_rel[k], p_gen[k]] for k in p_rel])
    rare = sorted({w for words, _ in rel_pairs for w in words if w.casefold() not in top})
    zero = [w for w in rare if wordfreq.zipf_frequency(w, "en") == 0]
    out += ["", f"Released words outside wordfreq's top {TOP_N:,} ({len(rare)} distinct): "
            + ", ".join(rare) + f"; of these unknown to wordfreq: {', '.join(zero) or 'none'}."]
    out += ["", "wordfreq has no part of speech, so neither set can be checked for nouns here; "
            "the generator draws from every alphabetic word of the band (verbs, adjectives, "
            "function-like words), while the released phrases read as attested "
            "adjective/noun + noun compounds. The only surface signal without a tagger, "
            "capitalisation, is in the table (wordfreq's lists are lower-cased, so a "
            "generated word is never capitalised).", "",
            f"First {n_examples * 2} compounds (Zipf of modifier / head), released and "
            "generated phrases:", ""]
    ex_rows = []
    for r in rows[:n_examples * 2]:
        nc = r["compound noun"]
        z = " / ".join(f"{wordfreq.zipf_frequency(w, 'en'):.2f}" for w in nc.split())
        ex_rows.append([f"{nc} ({z})", ", ".join(r[f"nc rand freq{k}"] for k in range(1, K + 1)),
                        ", ".join(gen_by_nc.get(r["compound"], []))])
    out += md_table(["compound", "released", "generated"], ex_rows)
    out.append("")
    return out


# ------------------------------------------------------------------------- c. compute

def rho_text(r) -> str:
    if r is None or np.isnan(r["rho"]):
        return "–"
    ci = "" if np.isnan(r["ci_low"]) else f" [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
    return f"{r['rho']:.3f}{ci}"


def section_compute(models: list[str], released, generated, cache: Path, n_boot: int,
                    analyses: list[Analysis]) -> list[str]:
    import ncprobe
    from ncprobe.schema import AFFINITIES, RATIO, SCALED

    # the measures that read Sim(rand): P_Rand itself, A_Syn|Rand, and Sim_R (Eq. 5,
    # scaled by Sim(rand)) with its ratio; every other measure must not move
    uses_rand = {"rand", AFFINITIES[1], *SCALED, RATIO}
    out = ["## c. compute with released vs generated P_Rand (English, neutral context)", "",
           "`ncprobe.compute(model=M, lang='en', contexts='neut', stimuli=S)` with S the "
           "released stimuli (`load_stimuli('en', contexts='neut')`) and the same with every "
           f"P_Rand probe replaced (`replace_rand(S, k={K}, seed={SEED}, band={BAND})`). "
           "Spearman rho with the gold score over the NCs (raw space), with the 95% "
           f"bootstrap interval ({n_boot} resamples, seed 0). Centre: the measure's mean over "
           f"the NCs (median for the heavy-tailed ratio). Measures that read Sim(rand): "
           f"{', '.join(f'`{m}`' for m in sorted(uses_rand))}; every other row must be the "
           "same on both sides (checked below each model).", ""]
    for model in models:
        log(f"compute {model} ...")
        t0 = time.perf_counter()
        try:
            res = {side: ncprobe.compute(model=model, lang="en", contexts="neut", stimuli=stim,
                                         n_boot=n_boot, cache_dir=cache, progress=False)
                   for side, stim in (("released", released), ("generated", generated))}
        except Exception as e:  # a model that cannot run here: said, and the rest goes on
            out += [f"### {model}", "", f"Not run: {type(e).__name__}: {e}", ""]
            continue
        secs = time.perf_counter() - t0
        out += [f"### {model}", "", f"(both runs: {secs:.0f} s on this machine, embedding "
                "cache in the output directory)", ""]
        changed = set()
        for an in analyses:
            for level in ("nc", "sent"):
                cor = {s: r.select("correlations", space="raw", context="neut", level=level,
                                   analysis=an) for s, r in res.items()}
                rows = []
                for m in cor["released"]["measure"].astype(str):
                    pick = {}
                    for s, df in cor.items():
                        hit = df[df["measure"].astype(str) == m]
                        pick[s] = hit.iloc[0] if len(hit) else None
                    rho = {s: (float(p["rho"]) if p is not None else float("nan"))
                           for s, p in pick.items()}
                    if not (rho["released"] == rho["generated"]):
                        changed.add(m)
                    centre = []
                    for s in ("released", "generated"):
                        v = res[s].select("measures", space="raw", context="neut", level=level,
                                          measure=m)["value"].dropna()
                        centre.append(f"{(v.median() if m == RATIO else v.mean()):.3f}")
                    rows.append([m, rho_text(pick["released"]), rho_text(pick["generated"]),
                                 f"{rho['generated'] - rho['released']:+.3f}",
                                 " / ".join(centre),
                                 str(int(pick["released"]["n"]))
                                 if pick["released"] is not None else "–"])
                if not rows:
                    continue
                out += [f"{model} · {'NC' if level == 'nc' else 'sentence'} level · "
                        f"analysis `{an}`", ""]
                out += md_table(["measure", "rho released [95% CI]",
                                 "rho generated [95% CI]", "Δ rho",
                                 "centre released / generated", "NCs"], rows)
                out.append("")
        differ = ", ".join(sorted(changed)) or "none"
        stray = sorted(changed - uses_rand)
        out += [f"Measures whose rho differs between the two: {differ}. "
                + (f"PROBLEM: {', '.join(stray)} do not read P_Rand but changed." if stray
                   else "Every measure that does not read P_Rand is identical."), ""]
    return out


# ------------------------------------------------------------------------------ main

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None,
                    help="directory for report.md and the embedding cache (default: a new "
                         "temporary directory); must be outside the repository")
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="the NCIMP data directory (default: $NCPROBE_DATA, then the cache)")
    ap.add_argument("--models", default="glove-6b-50d,minilm",
                    help="comma list of models for part c ('' to skip part c)")
    ap.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (part c)")
    ap.add_argument("--analyses", default="nc",
                    help="comma list of correlation analyses for part c: nc, overlap-filtered")
    ap.add_argument("--examples", type=int, default=3, help="examples per class (part a)")
    args = ap.parse_args(argv)
    analyses: list[Analysis] = []
    for a in (a.strip() for a in args.analyses.split(",") if a.strip()):
        if a not in ("nc", "overlap-filtered"):
            ap.error(f"--analyses: {a!r} is not one of nc, overlap-filtered (the analyses of "
                     f"the neutral context; {', '.join(get_args(Analysis))} exist)")
        analyses.append(a)

    import ncprobe
    from ncprobe.data.generate import replace_rand
    from ncprobe.data.sources import resolve_data_dir

    out_dir = (args.out if args.out is not None
               else Path(tempfile.mkdtemp(prefix="ncprobe-validation-")))
    out_dir = out_dir.expanduser().resolve()
    if out_dir == REPO or REPO in out_dir.parents:
        ap.error(f"--out {out_dir} is inside the repository {REPO}; choose a directory "
                 "outside it")
    out_dir.mkdir(parents=True, exist_ok=True)
    data_dir = resolve_data_dir(args.data_dir)
    t0 = time.perf_counter()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        released = ncprobe.load_stimuli("en", contexts="neut", data_dir=data_dir)
    generated = replace_rand(released, k=K, seed=SEED, band=BAND)

    lines = ["# The probe generator validated on NCIMP", "",
             f"ncprobe {metadata.version('ncprobe')}, wordfreq {metadata.version('wordfreq')}, "
             f"data: {data_dir}", ""]
    lines += section_comp(data_dir, args.examples)
    lines += section_rand(data_dir, released, generated, args.examples)
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    if models:
        lines += section_compute(models, released, generated, out_dir / "cache", args.n_boot,
                                 analyses)
    lines.append(f"_{time.perf_counter() - t0:.0f} s in all._")
    text = "\n".join(lines) + "\n"
    print(text)
    (out_dir / "report.md").write_text(text, encoding="utf-8")
    log(f"report written to {out_dir / 'report.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
