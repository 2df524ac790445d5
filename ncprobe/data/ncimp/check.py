"""NCIMP's part of ``ncprobe data check`` and ``ncprobe data info``: every NCIMP file present
parsed (tags, stimuli of every context, the NCS files), and the counts per language."""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import DataError, DataErrors, ErrorSink
from ..coverage import check_coverage
from ..reading import LoadContext
from . import load_stimuli
from .layout import NAT_FILE, NEUTRAL_FILE

__all__ = ["KNOWN_BAD_TAGS", "check_ncimp", "stimuli_info"]

#: Tag columns known to be wrong upstream (SCHEMA section 7.7): the article was dropped
#: from the sentence but the tag kept its entry. Not read by ncprobe; reported, not failed.
KNOWN_BAD_TAGS = re.compile(r"^only head synonym alt\d+_tag$")


def stimuli_info(root: Path) -> tuple[dict, list[str], list[str]]:
    """``{"languages": ...}`` (:meth:`~ncprobe.data.stimuli.Stimuli.describe` of every
    stimulus in ``root``, the files as they are, modified ones included), the loader's notes,
    and every problem found (a bad row, a condition the stimuli do not cover)."""
    errors: list[str] = []
    stim = None
    try:
        # the pins are reported by the caller: count what is there, modified or not
        stim = load_stimuli("all", contexts="nat,neut", data_dir=root, collect=True,
                            accept_modified=True, cross_check=True)
        check_coverage(stim, contexts="nat,neut", probes="all")
    except DataErrors as e:
        errors += [str(x) for x in e.errors]
    except DataError as e:
        errors.append(str(e))
    notes = [n for n in (stim.notes if stim is not None else [])
             if not n.startswith("MODIFIED DATA")]
    return {"languages": stim.describe() if stim is not None else {}}, notes, errors


def check_ncimp(root: Path) -> tuple[list[DataError], list[str], list[str]]:
    """Parse every NCIMP file present (tags, stimuli of every context, NCS): the problems
    found, the loader's notes, and the known upstream anomalies tolerated
    (:data:`KNOWN_BAD_TAGS`)."""
    notes: list[str] = []
    tolerated: list[str] = []
    # the pins are checked by the caller; here every file is parsed whatever its content
    ctx = LoadContext(root, ErrorSink(collect=True), accept_modified=True)
    for lang in ("en", "pt"):
        rels = [NEUTRAL_FILE.format(LANG=lang.upper())] + [
            NAT_FILE.format(LANG=lang.upper(), k=k) for k in (1, 2, 3)]
        for rel in rels:
            if ctx.exists(rel):
                _check_tags(rel, ctx, tolerated)
    found = list(ctx.sink.errors)
    try:
        stim = load_stimuli("all", contexts="all", probes="all", wordssyn="all",
                            data_dir=root, collect=True, accept_modified=True,
                            cross_check=True)
        notes += [n for n in stim.notes if not n.startswith("MODIFIED DATA")]
        check_coverage(stim, contexts="all", probes="all")
    except DataErrors as errs:
        found.extend(errs.errors)
    except DataError as err:
        found.append(err)
    try:  # the NCS files (context ncs) as released: their P_Rand is generated, not read
        ncs = load_stimuli("all", contexts="ncs", probes="syn,comp,wordssyn", data_dir=root,
                           collect=True, accept_modified=True)
        notes += [n for n in ncs.notes if n not in notes
                  and not n.startswith("MODIFIED DATA")]
    except DataErrors as errs:
        found.extend(errs.errors)
    except DataError as err:
        found.append(err)
    return found, notes, tolerated


def _check_tags(rel: str, ctx: LoadContext, tolerated: list[str]) -> None:
    df = ctx.table(rel)
    if df is None:
        return
    for tag_col in [c for c in df.columns if c.endswith("_tag")]:
        sent_col = tag_col[:-4]
        if sent_col not in df.columns:
            continue  # e.g. the neutral original's tag is 'original sentence_tag'
        known = bool(KNOWN_BAD_TAGS.match(tag_col))
        sink = ErrorSink(collect=True) if known else ctx.sink
        probe = LoadContext(ctx.data_dir, sink)
        for i, r in enumerate(df.records(), start=1):
            probe.tag_span(r[sent_col], r[tag_col], file=rel, row=i, column=tag_col,
                           key=r.get("compound"))
        if known and sink.errors:
            tolerated.append(f"{rel}: column {tag_col!r}: {len(sink.errors)} rows with a "
                             "tag length that does not match the sentence (known upstream "
                             "anomaly; column not used)")
