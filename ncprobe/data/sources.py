"""Where the NCIMP files live, how they are fetched, and how they are verified.

The data directory is, in order: an explicit ``data_dir`` (the CLI's
``--data-dir``), the ``NCPROBE_DATA`` environment variable, the user cache
directory (``platformdirs.user_cache_dir("ncprobe")/ncimp``). Inside it every
file keeps the layout ``<owner>+<repo>/<path in that repository>``.

Each upstream file is pinned to a commit and verified by its git blob SHA-1,
``sha1(b"blob <len>\\0" + content)``, the id git itself gives the file, so a
copy can be checked against the upstream repository without trusting any
mirror. The pins live in ``ncprobe/data/upstream.tsv``.
"""

from __future__ import annotations

import csv
import hashlib
import logging
import os
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Callable, Iterable

from ..errors import DownloadError

log = logging.getLogger(__name__)

ENV_VAR = "NCPROBE_DATA"
#: URL template of GitHub's raw file service. ``{owner}``, ``{repo}``, ``{commit}``
#: and ``{path}`` (URL-quoted) are filled in for each file.
DEFAULT_URL_TEMPLATE = "https://raw.githubusercontent.com/{owner}/{repo}/{commit}/{path}"


@dataclass(frozen=True)
class UpstreamFile:
    """One pinned upstream file.

    ``need`` is ``required`` (the loaders read it), ``optional`` (read when
    present; the official English naturalistic files, whose content is missing
    from public mirrors) or ``extra`` (fetched for completeness, not read).
    """

    repo: str
    commit: str
    path: str
    git_blob_sha1: str
    bytes: int | None
    need: str

    @property
    def local_path(self) -> str:
        """Path inside the data directory: ``<owner>+<repo>/<path>``."""
        return self.repo.replace("/", "+") + "/" + self.path

    def url(self, template: str = DEFAULT_URL_TEMPLATE) -> str:
        owner, repo = self.repo.split("/", 1)
        return template.format(owner=owner, repo=repo, commit=self.commit,
                               path=urllib.parse.quote(self.path))


def upstream_files() -> list[UpstreamFile]:
    """The pinned files ncprobe knows, from the packaged ``upstream.tsv``."""
    text = resources.files("ncprobe.data").joinpath("upstream.tsv").read_text("utf-8")
    rows = csv.DictReader(text.splitlines(), delimiter="\t")
    return [UpstreamFile(r["repo"], r["commit"], r["path"], r["git_blob_sha1"],
                         int(r["bytes"]) if r["bytes"] else None, r["need"]) for r in rows]


def upstream_file(local_path: str) -> UpstreamFile:
    """Look a pinned file up by its path inside the data directory."""
    for f in upstream_files():
        if f.local_path == local_path:
            return f
    raise KeyError(local_path)


def default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("ncprobe")) / "ncimp"


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The data directory: ``data_dir``, else ``$NCPROBE_DATA``, else the user cache."""
    if data_dir:
        return Path(data_dir).expanduser()
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    return default_data_dir()


def git_blob_sha1(data: bytes) -> str:
    """The id git gives a file with this content (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def file_status(data_dir: Path, f: UpstreamFile) -> str:
    """``verified``, ``missing`` or ``mismatch`` (present with other content)."""
    p = data_dir / f.local_path
    if not p.is_file():
        return "missing"
    return "verified" if git_blob_sha1(p.read_bytes()) == f.git_blob_sha1 else "mismatch"


@dataclass
class DownloadReport:
    fetched: list[str]
    skipped: list[str]
    refetched: list[str]
    missing_optional: list[str]

    def summary(self) -> str:
        s = (f"{len(self.fetched)} fetched ({len(self.refetched)} of them replaced a corrupt copy), "
             f"{len(self.skipped)} already verified")
        if self.missing_optional:
            s += f", {len(self.missing_optional)} optional not available upstream: " + ", ".join(
                self.missing_optional)
        return s


class _NotFound(Exception):
    pass


def _fetch(url: str, timeout: float) -> bytes:
    req = urllib.request.Request(url, headers={"User-Agent": "ncprobe"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (http(s) only)
            return resp.read()
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise _NotFound(url) from e
        raise


def _write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def download(data_dir: str | os.PathLike | None = None, *, url_template: str | None = None,
             files: Iterable[UpstreamFile] | None = None, retries: int = 4, backoff: float = 1.0,
             timeout: float = 60.0, progress: Callable[[str, str], None] | None = None
             ) -> DownloadReport:
    """Fetch every pinned file into the data directory, verifying each.

    Files already present with the right git blob id are skipped; a present
    file with other content is fetched again. Each file is written to a
    temporary file in the same directory and renamed into place only after it
    verified, so an interrupted download never leaves a half-written file
    under the final name. Network errors and 5xx answers are retried with
    exponential backoff (``backoff * 2**k`` seconds).

    Args:
        data_dir: target directory (see :func:`resolve_data_dir`).
        url_template: a URL template with ``{owner}``, ``{repo}``, ``{commit}``
            and ``{path}``, or a base URL to which ``/{owner}/{repo}/{commit}/{path}``
            is appended. Defaults to GitHub's raw file service.
        files: the files to fetch (default: all of :func:`upstream_files`).
        progress: called as ``progress(local_path, status)`` after each file.

    Raises:
        DownloadError: a required file could not be fetched (offline, not
            found, or content that does not verify); the message names it.
    """
    target = resolve_data_dir(data_dir)
    template = url_template or DEFAULT_URL_TEMPLATE
    if "{" not in template:
        template = template.rstrip("/") + "/{owner}/{repo}/{commit}/{path}"
    report = DownloadReport([], [], [], [])
    failures: list[str] = []
    for f in (list(files) if files is not None else upstream_files()):
        status = file_status(target, f)
        if status == "verified":
            report.skipped.append(f.local_path)
            if progress:
                progress(f.local_path, "verified")
            continue
        if status == "mismatch":
            log.warning("%s: present but its git blob id is not %s; fetching it again",
                        f.local_path, f.git_blob_sha1)
        url = f.url(template)
        try:
            data = _fetch_with_retries(url, retries=retries, backoff=backoff, timeout=timeout)
        except _NotFound:
            if f.need == "optional":
                report.missing_optional.append(f.local_path)
                if progress:
                    progress(f.local_path, "not available upstream (optional)")
                continue
            failures.append(f"{f.local_path}: not found at {url} (HTTP 404)")
            if progress:
                progress(f.local_path, "NOT FOUND")
            continue
        except urllib.error.HTTPError as e:
            raise DownloadError(f"could not fetch {f.local_path} from {url}: HTTP {e.code} "
                                f"{e.reason}") from e
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise DownloadError(
                f"could not fetch {f.local_path} from {url} after {retries + 1} attempts: {reason}. "
                "Are you offline? Copy the files into a directory and pass it with --data-dir or "
                f"${ENV_VAR}, or set --url to a reachable mirror.") from e
        got = git_blob_sha1(data)
        if got != f.git_blob_sha1:
            failures.append(f"{f.local_path}: downloaded content has git blob id {got}, "
                            f"expected {f.git_blob_sha1}; not written")
            if progress:
                progress(f.local_path, "BAD CHECKSUM")
            continue
        _write_atomic(target / f.local_path, data)
        report.fetched.append(f.local_path)
        if status == "mismatch":
            report.refetched.append(f.local_path)
        if progress:
            progress(f.local_path, "fetched")
    if failures:
        raise DownloadError("download incomplete into " + str(target) + ":\n  "
                            + "\n  ".join(failures))
    return report


def _fetch_with_retries(url: str, *, retries: int, backoff: float, timeout: float) -> bytes:
    for attempt in range(retries + 1):
        try:
            return _fetch(url, timeout)
        except _NotFound:
            raise
        except urllib.error.HTTPError as e:
            if e.code < 500 and e.code != 429:
                raise
            err: Exception = e
        except (urllib.error.URLError, OSError) as e:
            err = e
        if attempt < retries:
            wait = backoff * 2**attempt
            log.info("fetching %s failed (%s); retry %d/%d in %.1fs", url, err, attempt + 1,
                     retries, wait)
            time.sleep(wait)
    raise err
