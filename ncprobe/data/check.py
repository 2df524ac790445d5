"""``ncprobe data check``: validate every file of the data directory, reporting every problem."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataError, DataErrors, ErrorSink
from .ncimp import NAT_FILE, NEUTRAL_FILE, load_stimuli
from .reading import LoadContext
from .sources import file_status, resolve_data_dir, upstream_files

#: Tag columns known to be wrong upstream (SCHEMA section 7.7): the article was dropped
#: from the sentence but the tag kept its entry. Not read by ncprobe; reported, not failed.
KNOWN_BAD_TAGS = re.compile(r"^only head synonym alt\d+_tag$")


@dataclass
class CheckReport:
    files: dict[str, str] = field(default_factory=dict)
    errors: list[DataError] = field(default_factory=list)
    tolerated: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def check(data_dir: str | Path | None = None) -> CheckReport:
    """Verify every pinned file, parse every tag column, load every stimulus.

    Returns a report; ``report.errors`` lists each bad file, row and column.
    """
    root = resolve_data_dir(data_dir)
    report = CheckReport()
    for f in upstream_files():
        status = file_status(root, f)
        report.files[f.local_path] = status
        if status == "mismatch":
            report.errors.append(DataError(
                f"content differs from the pinned upstream file (git blob {f.git_blob_sha1}); "
                "run `ncprobe data download` to replace it", file=f.local_path))
        elif status == "missing" and f.need == "required":
            report.errors.append(DataError("missing; run `ncprobe data download`",
                                           file=f.local_path))
    ctx = LoadContext(root, ErrorSink(collect=True))
    for lang in ("en", "pt"):
        rels = [NEUTRAL_FILE.format(LANG=lang.upper())] + [
            NAT_FILE.format(LANG=lang.upper(), k=k) for k in (1, 2, 3)]
        for rel in rels:
            if ctx.exists(rel):
                _check_tags(rel, ctx, report)
    report.errors.extend(ctx.sink.errors)
    try:
        stim = load_stimuli("all", contexts="all", probes="all", wordssyn="all", data_dir=root,
                            collect=True)
        report.notes = stim.notes
    except DataErrors as e:
        report.errors.extend(e.errors)
    except DataError as e:
        report.errors.append(e)
    return report


def _check_tags(rel: str, ctx: LoadContext, report: CheckReport) -> None:
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
        for i, r in enumerate(df.to_dict("records"), start=1):
            probe.tag_span(r[sent_col], r[tag_col], file=rel, row=i, column=tag_col,
                           key=r.get("compound"))
        if known and sink.errors:
            report.tolerated.append(f"{rel}: column {tag_col!r}: {len(sink.errors)} rows with a "
                                    "tag length that does not match the sentence (known upstream "
                                    "anomaly; column not used)")
