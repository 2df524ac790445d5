"""``ncprobe data check``: validate every file of the data directory, reporting every problem."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataError, DataErrors, ErrorSink
from .coverage import check_coverage
from .ncimp import load_stimuli
from .ncimp.layout import NAT_FILE, NEUTRAL_FILE
from .reading import RESTORE, LoadContext
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
    """Verify every pinned file, parse every tag column, load every stimulus, check coverage.

    The scores xlsx, which ``compute`` does not read, is parsed and cross-checked against
    the NCTTI scores here (its disagreements are notes; a value that is no score is an error).

    Every problem is listed, not only the first: a file that differs from its pin is
    reported and still parsed (so its bad rows are named too), a file that cannot be
    read or parsed is reported and the other files are checked all the same.

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
                + RESTORE, file=f.local_path))
        elif status == "missing" and f.need == "required":
            report.errors.append(DataError("missing; run `ncprobe data download`",
                                           file=f.local_path))
        elif status == "unreadable":
            report.errors.append(DataError("cannot be read (no read permission?); make it "
                                           "readable, or " + RESTORE, file=f.local_path))
    reported = {e.file for e in report.errors}
    # the pins are checked above; here every file is parsed whatever its content
    ctx = LoadContext(root, ErrorSink(collect=True), accept_modified=True)
    for lang in ("en", "pt"):
        rels = [NEUTRAL_FILE.format(LANG=lang.upper())] + [
            NAT_FILE.format(LANG=lang.upper(), k=k) for k in (1, 2, 3)]
        for rel in rels:
            if ctx.exists(rel):
                _check_tags(rel, ctx, report)
    found = list(ctx.sink.errors)
    try:
        stim = load_stimuli("all", contexts="all", probes="all", wordssyn="all", data_dir=root,
                            collect=True, accept_modified=True, cross_check=True)
        report.notes = [n for n in stim.notes if not n.startswith("MODIFIED DATA")]
        check_coverage(stim, contexts="all", probes="all")
    except DataErrors as errs:
        found.extend(errs.errors)
    except DataError as err:
        found.append(err)
    try:  # the NCS files (context ncs) as released: their P_Rand is generated, not read
        ncs = load_stimuli("all", contexts="ncs", probes="syn,comp,wordssyn", data_dir=root,
                           collect=True, accept_modified=True)
        report.notes += [n for n in ncs.notes if n not in report.notes
                         and not n.startswith("MODIFIED DATA")]
    except DataErrors as errs:
        found.extend(errs.errors)
    except DataError as err:
        found.append(err)
    # IdioLink (retrieval probe): the files of every split present, parsed and validated
    from .idiolink import check_idiolink

    idiolink_errors, idiolink_notes = check_idiolink(root)
    found.extend(idiolink_errors)
    report.notes += idiolink_notes
    seen = {str(e) for e in report.errors}
    for problem in found:
        # a missing or unreadable file is already listed once, by its pin status
        again = _relative(problem.file, root) in reported and problem.reason.startswith(
            ("file not found", "cannot be read"))
        if not again and str(problem) not in seen:
            seen.add(str(problem))
            report.errors.append(problem)
    return report


def _relative(file: str | None, root: Path) -> str | None:
    if file is None:
        return None
    try:
        return Path(file).relative_to(root).as_posix()
    except ValueError:
        return file


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
        for i, r in enumerate(df.records(), start=1):
            probe.tag_span(r[sent_col], r[tag_col], file=rel, row=i, column=tag_col,
                           key=r.get("compound"))
        if known and sink.errors:
            report.tolerated.append(f"{rel}: column {tag_col!r}: {len(sink.errors)} rows with a "
                                    "tag length that does not match the sentence (known upstream "
                                    "anomaly; column not used)")
