"""Write every figure and table of the study for a Results into one directory.

``write_report(results, out)`` saves figures 1-10 as ``figNN_<name>.png`` and
``.pdf`` and the tables as ``table_<name>.md`` and ``.tex``, plus a
``README.md`` index saying which models and languages made them. A figure or
table with nothing to show for these results (e.g. NC-level figures of a
sentence-level-only model) is left out and named in the index, never drawn empty.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Sequence

from . import __version__

log = logging.getLogger(__name__)


def write_report(results, out_dir, *, formats: Sequence[str] = ("png", "pdf"),
                 examples: Sequence[str] | None = None, dpi: int = 200) -> list[Path]:
    """Save every figure and table of SPEC §4 for ``results`` into ``out_dir``.

    Returns:
        The files written, in order (the index ``README.md`` last).
    """
    import matplotlib

    matplotlib.use("Agg")  # files only; never open a window
    import matplotlib.pyplot as plt

    from . import plots, tables

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    index = [f"# ncprobe report\n\nMade by ncprobe {__version__} from these runs:\n"]
    for m in results.meta:
        cfg = m["config"]
        index.append(f"- {cfg['model']} ({cfg['lang']}): contexts {cfg['contexts']}, layers "
                     f"{cfg.get('layers') or 'default'}, gold {cfg['gold']}")
    index.append("\n## Figures\n")
    for i, (name, draw) in enumerate(plots.FIGURES.items(), start=1):
        stem = f"fig{i:02d}_{name}"
        try:
            fig = draw(results)
        except plots.NoData as e:
            index.append(f"- {stem}: not drawn: {e}")
            log.info("%s not drawn: %s", stem, e)
            continue
        for fmt in formats:
            path = out / f"{stem}.{fmt}"
            # no creation date in PDFs: the same results give the same files
            meta = {"CreationDate": None} if fmt == "pdf" else None
            fig.savefig(path, dpi=dpi, bbox_inches="tight", metadata=meta)
            written.append(path)
        notes = getattr(fig, "ncprobe_notes", [])
        plt.close(fig)
        index.append(f"- `{stem}`: {_first_paragraph(draw.__doc__ or name)}"
                     + (f" ({'; '.join(notes)})" if notes else ""))
    index.append("\n## Tables\n")
    for name, build in tables.TABLES.items():
        df = build(results, examples) if name == "examples" else build(results)
        if df.empty:
            index.append(f"- table_{name}: empty for these results")
            continue
        caption = tables.CAPTIONS[name]
        for suffix, text in ((".md", f"{caption}\n\n{tables.to_markdown(df)}"),
                             (".tex", tables.to_latex(df, caption))):
            path = out / f"table_{name}{suffix}"
            path.write_text(text, encoding="utf-8")
            written.append(path)
        missing = df.attrs.get("missing")
        index.append(f"- `table_{name}`: {caption}"
                     + (f" (not in these results: {', '.join(missing)})" if missing else ""))
    readme = out / "README.md"
    readme.write_text("\n".join(index) + "\n", encoding="utf-8")
    written.append(readme)
    return written


def _first_paragraph(doc: str) -> str:
    import re

    text = " ".join(doc.strip().split("\n\n")[0].split())
    return re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
