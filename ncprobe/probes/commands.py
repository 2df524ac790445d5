"""What the ``report`` and ``compare`` commands do with a probe's results, written once for
every probe: the comparison of two sides of a probe's results (:func:`compare_probe_runs`),
the comparison table as a file (:func:`check_comparison_out`, :func:`write_comparison`), and
the run options in which two sides differ (:func:`differing_options`). A probe's
:meth:`~ncprobe.probes.base.Probe.compare_from_args` calls them; nothing here names a probe.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..errors import UsageError

if TYPE_CHECKING:
    import pandas as pd

    from .base import ProbeResults

__all__ = ["COMPARE_FORMATS", "check_comparison_out", "compare_probe_runs",
           "differing_options", "write_comparison"]


def compare_probe_runs(args: argparse.Namespace, out: Path | None,
                       results_class: type[ProbeResults], *,
                       what: str, within: str, title: str,
                       markdown: Callable[[pd.DataFrame], str],
                       latex: Callable[[pd.DataFrame, str], str],
                       load: Mapping[str, Any] | None = None,
                       options: Mapping[str, Any] | None = None,
                       latex_edited: bool = False, config: type | None = None) -> int:
    """``ncprobe compare A B`` of two sides of a probe's results: each side's directories
    read and joined (``results_class.load_many``), the sides compared (its ``compare``, with
    ``--n-boot``, ``--seed`` and ``--correct``: :func:`~ncprobe.probes.options.
    compare_test_options`), the tests printed as Markdown (results read although edited said
    first) and, with ``--out``, written (:func:`write_comparison`, under ``title``).

    Args:
        args, out: the command's options and its ``--out`` (checked).
        results_class: the probe's results class.
        what: its results in words (``NCC results``), in the refusal of one side.
        within: what one run already holds (``the classifiers of one run are already tested
            ...``), in the refusal of one side.
        title: the title of the ``--out`` file.
        markdown, latex: the tests table as Markdown, and as LaTeX under a caption.
        load, options: more keywords of ``load_many`` and of ``compare``.
        latex_edited: the LaTeX file says the edited results first too (comments).
        config: the probe's options class: when given, the options in which the sides' runs
            differ (a float16 run against a float32 one: the store dtype of each) are said
            under the table (:func:`differing_options`).

    Raises:
        UsageError: one side only.
    """
    if not args.results_b:
        raise UsageError(f"{what}: give two sides (RESULTS_A RESULTS_B); {within}")
    a, b = (results_class.load_many([side], exclude=args.exclude,
                                    accept_edited=args.accept_edited_results, **(load or {}))
            for side in (args.results_a, args.results_b))
    df = a.compare(b, names=[args.results_a, args.results_b], n_boot=args.n_boot,
                   seed=args.seed, correction=args.correct, **(options or {}))
    edited = a.edited_lines() + b.edited_lines()
    # results read although edited: said first, where it cannot be missed
    text = "".join(f"{line}\n\n" for line in edited) + markdown(df)
    if config is not None:  # which side is which: e.g. the store dtype of each
        text += "".join(f"\n{line}\n" for line in [differing_options(a, b, config=config)]
                        if line)
    print(text, end="" if text.endswith("\n") else "\n")
    if out is not None:
        said = "".join(f"% {line}\n" for line in edited) if latex_edited else ""
        write_comparison(out, df, markdown=f"{title}\n\n{text}", latex=said + latex(df, title),
                         overwrite=args.overwrite)
        print(f"written to {out}", file=sys.stderr)
    return 0


# --- the comparison table as a file (``ncprobe compare --out``) -----------------------------

#: The file formats of a comparison table, by suffix: ``.md`` and ``.tex`` the printed table,
#: ``.csv`` and ``.parquet`` every column of the probe's ``compare``, unrounded.
COMPARE_FORMATS = (".md", ".tex", ".csv", ".parquet")


def check_comparison_out(out: Path, overwrite: bool) -> None:
    """Refuse a comparison file ``out`` that would replace a user's file or cannot be
    written, before any work (:func:`write_comparison` checks again before writing).

    Raises:
        UsageError: not a :data:`COMPARE_FORMATS` suffix, a directory, no parent
            directory, inside a results directory, or an existing file without
            ``overwrite``; the message names the option ``--out``.
        OutputError: ``out``'s directory cannot be written (read-only, full, no permission,
            a file where a directory is needed, a link loop), named with the cause.
    """
    import os

    from .._io import check_can_write

    if out.suffix.lower() not in COMPARE_FORMATS:
        raise UsageError(f"--out {out}: write a {', '.join(COMPARE_FORMATS)} file")
    if out.is_dir():
        raise UsageError(f"--out {out} is a directory; name a file, e.g. {out / 'compare.md'}"
                         " (even --overwrite never replaces a directory)")
    if not out.parent.is_dir():
        # a file (or a link loop) where a directory is needed cannot be written: the one
        # writability check names the part in the way (exit 6); a folder that is merely not
        # there is the user's to create
        check_can_write(out.parent, target=out, what="comparison table")
        raise UsageError(f"--out {out}: no directory {out.parent}; create it, or choose "
                         "another --out")
    if (out.parent / "run.json").is_file():
        raise UsageError(f"--out {out}: {out.parent} is a results directory; a file written "
                         "into it would stop `ncprobe compute` from rewriting it: choose "
                         "another --out")
    if os.path.lexists(out) and not overwrite:
        raise UsageError(f"--out {out} exists; choose another --out, or pass --overwrite to "
                         "replace it")
    # writable here? (a read-only or full disk, no permission): before 30 s of tests
    check_can_write(out.parent, target=out, what="comparison table")


def write_comparison(out: Path, df: pd.DataFrame, *, markdown: str, latex: str,
                     overwrite: bool) -> None:
    """Write a comparison to ``out`` (checked by :func:`check_comparison_out`), by its
    suffix: ``markdown`` (``.md``) or ``latex`` (``.tex``), the table as shown, or ``df``,
    the probe's ``compare`` output, as ``.csv`` or ``.parquet``. Atomically, with the mode a
    plain ``open()`` gives under the umask.

    Raises:
        UsageError: ``out`` appeared while the tests ran (without ``overwrite``), or is now
            a directory; nothing is written.
        OutputError: it cannot be written.
    """
    import io
    import os

    from .._io import atomic_write_bytes, atomic_write_text, output_error

    # again: a file that appeared there while the tests ran is not replaced either
    if os.path.lexists(out) and not overwrite:
        raise UsageError(f"--out {out} was created while the tests ran; nothing written "
                         "(the table is printed above): choose another --out, or pass "
                         "--overwrite")
    suffix = out.suffix.lower()
    try:
        if suffix == ".md":
            atomic_write_text(out, markdown)
        elif suffix == ".tex":
            atomic_write_text(out, latex)
        elif suffix == ".csv":
            atomic_write_text(out, df.to_csv(index=False))
        else:
            buf = io.BytesIO()
            df.to_parquet(buf, index=False)
            atomic_write_bytes(out, buf.getvalue())
    except IsADirectoryError:
        raise UsageError(f"--out {out} is now a directory; nothing written") from None
    except OSError as e:
        raise output_error(e, out, what="comparison table") from None


def differing_options(a: Any, b: Any | None, *, config: type) -> str | None:
    """The run options in which side A's runs differ from side B's, in words, or None.

    ``a`` and ``b`` are results with ``meta`` (one dict per run, its ``config``) of a probe
    whose options class is ``config`` (its defaults fill what a ``run.json`` leaves out; NCIMP:
    :class:`~ncprobe.ncimp.config.RunConfig`).

    Everything a run was computed with counts (its ``config`` in ``run.json``: store dtype,
    dtype, device, batch size, resamples ...), except the model (each side's is shown) and
    the cell keys that pair the rows (language, contexts, levels, layers). An option that a
    run's ``run.json`` leaves out had its default. So a float16 run against a float32 run
    of one model says which side is which. Two runs of one model name with different
    weights (fingerprints) say so too.
    """
    if b is None or b is a:  # one Results under two selections: the same runs
        return None
    import json
    from dataclasses import MISSING, fields

    from ..cache.dtypes import LOSS_KEY
    cls = config
    order = [f.name for f in fields(cls)]
    defaults = {f.name: f.default for f in fields(cls) if f.default is not MISSING}
    paired = {"model", "lang", "contexts", "levels", "layers"}

    def shown(v: object) -> str:
        return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)

    def options(res: Any) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for m in res.meta:
            cfg = {**defaults, **(m.get("config") or {})}
            if m.get(LOSS_KEY) is not None:  # how far half precision moved its cosines
                cfg["store_dtype"] = (f"{cfg.get('store_dtype')} (cosines within "
                                      f"{m[LOSS_KEY]:.2g})")
            for k, v in cfg.items():
                if k not in paired and shown(v) not in out.setdefault(k, []):
                    out[k].append(shown(v))
        return out

    oa, ob = options(a), options(b)
    keys = sorted(set(oa) | set(ob), key=lambda k: (order.index(k) if k in order
                                                      else len(order), k))
    differ = [k for k in keys if oa.get(k) != ob.get(k)]
    prints = [{json.dumps(m.get("fingerprint"), sort_keys=True, default=str) for m in r.meta}
              for r in (a, b)]
    if not differ and prints[0] == prints[1]:
        return None

    def side(opts: dict[str, list[str]]) -> str:
        return ", ".join(f"{k} {'/'.join(opts.get(k, ['-']))}" for k in differ)
    text = (f"The sides' runs differ in options other than those compared: A {side(oa)}; "
            f"B {side(ob)}." if differ else "")
    models = {str(m["config"].get("model")) for r in (a, b) for m in r.meta}
    if prints[0] != prints[1] and len(models) == 1:
        text += (" " if text else "") + ("The sides' model has one name and other weights "
                                         "(its fingerprints differ).")
    return text
