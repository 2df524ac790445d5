"""What the tests that read the NCIMP files do with ``$NCPROBE_DATA`` (use, skip or fail):
the rule of the ``raw_dir`` fixture in conftest.py, a helper of its own so that
test_data_fixture.py checks it without importing conftest."""

from __future__ import annotations

import shlex
from pathlib import Path


def _how_to_get_the_data() -> str:
    from ncprobe.data.sources import default_data_dir

    return ("To get the data, run `ncprobe data download` (it fetches the pinned NCIMP files into "
            f"{default_data_dir()}; add --data-dir DIR for another place), then run the tests "
            f"with `NCPROBE_DATA={default_data_dir()} python -m pytest` (in a checkout beside "
            "shared/: `NCPROBE_DATA=../shared/ncimp/raw python -m pytest`).")


def data_dir_verdict(env: str | None, ci: bool = False) -> tuple[str, Path | str]:
    """What the tests that read the NCIMP files do, given the value of ``$NCPROBE_DATA``.

    Returns ``("use", directory)``, ``("skip", reason)`` or ``("fail", message)``:
    skip only when the variable is unset (and not in CI); a directory that is
    missing, lacks a required pinned file or holds a pinned file with other
    content fails, so a wrong path can never pass as "all tests skipped".
    There is no fallback to another directory: the README's test command sets
    the variable, and what is tested is what it names.
    """
    if not env:
        if ci:
            return "fail", "CI is set but NCPROBE_DATA is not. " + _how_to_get_the_data()
        return "skip", "NCPROBE_DATA is not set. " + _how_to_get_the_data()
    from ncprobe.data.sources import file_status, upstream_files

    path = Path(env).expanduser()
    if not path.is_dir():
        return "fail", (f"NCPROBE_DATA={env} is not a directory ({path.absolute()}). "
                        + _how_to_get_the_data())
    missing, changed = [], []
    for f in upstream_files():
        status = file_status(path, f)
        if status == "missing" and f.need == "required":
            missing.append(f.local_path)
        elif status == "mismatch":
            changed.append(f.local_path)
    problems = []
    if missing:
        problems.append(f"{len(missing)} required file(s) missing: " + ", ".join(missing))
    if changed:
        problems.append(f"{len(changed)} file(s) differ from their pinned git blob id: "
                        + ", ".join(changed))
    if problems:
        return "fail", (f"NCPROBE_DATA={env} ({path.absolute()}) does not hold the pinned NCIMP "
                        "files: " + "; ".join(problems) + ". Run `ncprobe data download "
                        f"--data-dir {shlex.quote(env)}` to fetch or repair them, or point "
                        "NCPROBE_DATA at a complete copy.")
    return "use", path.resolve()
