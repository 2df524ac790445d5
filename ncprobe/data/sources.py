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
import errno
import http.client
import logging
import math
import os
import stat
import string
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable, Iterable

from .._io import atomic_write_bytes, git_blob_sha1, retry
from .._version import VERSION as __version__
from ..errors import DownloadError, UsageError

log = logging.getLogger(__name__)

ENV_VAR = "NCPROBE_DATA"
#: URL template of GitHub's raw file service. ``{owner}``, ``{repo}``, ``{commit}``
#: and ``{path}`` (URL-quoted) are filled in for each file.
DEFAULT_URL_TEMPLATE = "https://raw.githubusercontent.com/{owner}/{repo}/{commit}/{path}"
#: The placeholders a URL template may use.
URL_FIELDS = ("owner", "repo", "commit", "path")
#: Download defaults: further attempts per file after a transfer error, seconds before the
#: first retry (doubled for each next one), seconds to wait for a connection or a read.
DEFAULT_RETRIES = 4
DEFAULT_BACKOFF = 1.0
DEFAULT_TIMEOUT = 30.0
#: The overall time a file may take (all its attempts together), unless ``deadline`` says
#: otherwise: ``max(DEADLINE_MIN, pinned size / DEADLINE_RATE)`` seconds, i.e. at least a
#: minute, and 50 kB/s for large files (the largest pinned file, 1.3 MB: 60 s; a file
#: without a pinned size: its limit of 64 MiB at 50 kB/s, 1342 s). ``--timeout`` is per read:
#: a server that trickles a byte every few seconds never trips it, the deadline does.
DEADLINE_MIN = 60.0
DEADLINE_RATE = 50_000
#: Most bytes read for a pinned file without a pinned size (the optional English files, whose
#: siblings are about 0.6 MB): generous, but a server that sends without end is cut off.
UNPINNED_MAX_BYTES = 64 * 2**20
#: Bytes per read while downloading.
CHUNK_BYTES = 1 << 16


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


def default_data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("ncprobe")) / "ncimp"


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """The data directory, as an absolute path: ``data_dir``, else ``$NCPROBE_DATA``, else
    the user cache. A relative path is taken from the current directory, once, here: what is
    read later, and what messages name, does not depend on a directory changed since (a
    notebook's kernel runs in the notebook's directory)."""
    if data_dir:
        return _absolute(data_dir)
    env = os.environ.get(ENV_VAR)
    if env:
        return _absolute(env)
    return default_data_dir()


def sources_unchanged(sources: dict[str, str] | None, data_dir: str | os.PathLike | None = None
                      ) -> bool:
    """Whether every data file a run recorded (``sources``: its ``data_sources``, the file's
    path in the data directory -> its git blob id) still has that content in ``data_dir``
    (:func:`resolve_data_dir`): what keeps a finished run instead of computing it again. A
    file that cannot be read counts as changed."""
    root = resolve_data_dir(data_dir)
    for name, blob in (sources or {}).items():
        try:
            if git_blob_sha1((root / name).read_bytes()) != blob:
                return False
        except OSError:
            return False
    return True


def _absolute(path: str | os.PathLike) -> Path:
    """``path`` with ``~`` expanded, made absolute from the current directory (links kept)."""
    return Path(os.path.abspath(Path(path).expanduser()))


def data_dir_origin(path: Path) -> str:
    """Where the data directory ``path`` came from, for messages: ``"$NCPROBE_DATA=../x,
    relative to the current directory /home/me/notebooks"``, ``"the user cache"`` ..."""
    env = os.environ.get(ENV_VAR)
    if env and _absolute(env) == path:
        raw = Path(env).expanduser()
        return f"${ENV_VAR}={env}" + ("" if raw.is_absolute() else
                                       f", relative to the current directory {os.getcwd()}")
    if path == default_data_dir():
        return "the user cache, as neither --data-dir nor $NCPROBE_DATA is set"
    return "--data-dir"


#: What :func:`file_status` returns (a status to report, never a crash): ``verified``;
#: ``missing`` (nothing at the path); ``mismatch`` (a file with other content);
#: ``unreadable`` (a file that cannot be read, e.g. no read permission); ``not-file``
#: (present but a directory, a FIFO, a socket or a device); ``bad-link`` (a symbolic link
#: to nothing, or a link loop).
FILE_STATUSES = ("verified", "missing", "mismatch", "unreadable", "not-file", "bad-link")


def file_status(data_dir: Path, f: UpstreamFile) -> str:
    """The status of the pinned file ``f`` in ``data_dir``: one of :data:`FILE_STATUSES`.

    Only a regular file is read (following symbolic links): a directory or a FIFO at the path
    is ``not-file``, never opened, and a link that leads nowhere is ``bad-link``, not
    ``missing``: both are something the user put there, which ``missing`` would hide.
    """
    p = Path(data_dir) / f.local_path
    try:
        st = os.stat(p)
    except FileNotFoundError:
        # a dangling link: the path exists (lstat), its target does not
        return "bad-link" if os.path.islink(p) else "missing"
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "bad-link"
        if e.errno == errno.ENOTDIR:  # a file where a folder of the path should be
            return "missing"
        return "unreadable"  # e.g. no search permission on a folder of the path
    if not stat.S_ISREG(st.st_mode):
        return "not-file"
    try:
        data = p.read_bytes()
    except OSError:
        return "unreadable"
    return "verified" if git_blob_sha1(data) == f.git_blob_sha1 else "mismatch"


def not_a_file(path: Path) -> str | None:
    """What is wrong with ``path``, where a pinned file should be, when something other than
    a readable regular file is there (a directory, a FIFO, a socket or a device; a symbolic
    link to nothing, or a loop), and what to do; ``None`` when a regular file, or nothing,
    is there. The one message of ``data check`` and of every probe's reading."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if not os.path.islink(path):
            return None
        why = f"a symbolic link to {_link_target(path)}, which does not exist"
    except OSError as e:
        if e.errno != errno.ELOOP:
            return None
        why = "a symbolic-link loop"
    else:
        if stat.S_ISREG(st.st_mode):
            return None
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a FIFO, a socket or a device"
        return (f"is {kind}, not the pinned file; move it out of the way (ncprobe never deletes "
                "it), then `ncprobe data download` fetches the file")
    return (f"is {why}; remove the link, or run `ncprobe data download`, which fetches the "
            "file in its place")


def _link_target(path: Path) -> str:
    """Where the first link of ``path`` leads (as written in the link), for messages."""
    try:
        return repr(os.readlink(path))
    except OSError:  # a folder of the path is the link
        return "its target"


@dataclass
class DownloadReport:
    fetched: list[str]
    skipped: list[str]
    refetched: list[str]
    missing_optional: list[str]
    #: where each copy that differed from its pin was moved before the verified file replaced it
    kept: list[str] = field(default_factory=list)

    def summary(self) -> str:
        s = (f"{len(self.fetched)} fetched ({len(self.refetched)} of them replaced a copy that "
             f"differed from its pin), {len(self.skipped)} already verified")
        if self.kept:
            s += "; the differing copies were kept as " + ", ".join(self.kept)
        if self.missing_optional:
            s += f", {len(self.missing_optional)} optional not available upstream: " + ", ".join(
                self.missing_optional)
        return s


def _keep_aside(path: Path) -> str:
    """Rename a file that differs from its pin to ``<name>.modified-<UTC time>[-k]``.

    Its content may be a user's deliberate edit: ``download`` restores the pinned file but
    never destroys another copy. Returns the new path.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for k in range(1000):
        aside = path.with_name(f"{path.name}.modified-{stamp}" + (f"-{k}" if k else ""))
        try:
            os.link(path, aside)  # fails if the name exists: never overwrite a kept copy
        except FileExistsError:
            continue
        os.unlink(path)
        return str(aside)
    raise OSError(f"{path}: no free name to keep the modified copy under")


class _NotFound(Exception):
    """HTTP 404: the file is not at this URL (not retried)."""


class _TooLarge(Exception):
    """The body is longer than the pinned size allows (not retried: the server means it)."""


class _Deadline(Exception):
    """The file did not arrive within its overall deadline (not retried)."""

    def __init__(self, seconds: float, got: int) -> None:
        self.seconds, self.got = seconds, got
        super().__init__(f"not complete after {seconds:g} s ({got} bytes received)")


class _Truncated(Exception):
    """The server closed the connection before sending every byte it announced."""

    def __init__(self, got: int, announced: int) -> None:
        super().__init__(f"the connection closed after {got} of {announced} bytes")


def check_download_options(*, url_template: str | None = None, retries: int = DEFAULT_RETRIES,
                           backoff: float = DEFAULT_BACKOFF, timeout: float = DEFAULT_TIMEOUT,
                           deadline: float | None = None) -> str:
    """Validate the options of :func:`download` before anything touches the network.

    Returns:
        The URL template to use (a base URL gets ``/{owner}/{repo}/{commit}/{path}``).

    Raises:
        UsageError: ``retries`` is not an integer >= 0, ``backoff`` is negative,
            ``timeout`` or ``deadline`` (when given) is not a number > 0, or the URL
            template uses a placeholder
            other than ``{owner}``, ``{repo}``, ``{commit}`` and ``{path}``, is
            malformed, or is not an http(s) URL.
    """
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise UsageError(f"retries must be a whole number >= 0, not {retries!r}")
    checks = [("timeout", timeout, "> 0"), ("backoff", backoff, ">= 0")]
    if deadline is not None:
        checks.append(("deadline", deadline, "> 0"))
    for name, value, low in checks:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(
            value) and (value >= 0 if name == "backoff" else value > 0)
        if not ok:
            raise UsageError(f"{name} must be a number of seconds {low}, not {value!r}")
    template = url_template or DEFAULT_URL_TEMPLATE
    if "{" not in template and "}" not in template:
        template = template.rstrip("/") + "/{owner}/{repo}/{commit}/{path}"
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as e:  # a lone { or }
        raise UsageError(f"URL template {template!r} is not a valid template ({e}); write "
                         "placeholders as {owner}, {repo}, {commit} and {path}") from e
    unknown = [f for f in fields if f not in URL_FIELDS]
    if unknown:
        raise UsageError(
            f"URL template {template!r} uses unknown placeholder(s) "
            + ", ".join("{" + f + "}" for f in dict.fromkeys(unknown))
            + "; the only ones are {owner}, {repo}, {commit} and {path}")
    try:  # a format spec such as {commit:d} fails only when filled in
        sample = template.format(owner="owner", repo="repo", commit="0" * 40, path="p.csv")
    except (ValueError, TypeError, KeyError, IndexError, AttributeError) as e:
        raise UsageError(f"URL template {template!r} cannot be filled in: {e}") from e
    parts = urllib.parse.urlsplit(sample)
    if parts.scheme not in ("http", "https"):
        raise UsageError(f"URL template {template!r} is not an http:// or https:// URL")
    try:
        parts.port  # noqa: B018 (raises ValueError for a port that is not a number)
    except ValueError as e:
        raise UsageError(f"URL template {template!r}: {e}") from e
    if not parts.hostname:
        raise UsageError(f"URL template {template!r} names no host")
    return template


def _max_bytes(f: UpstreamFile) -> int:
    return f.bytes if f.bytes is not None else UNPINNED_MAX_BYTES


def file_deadline(f: UpstreamFile) -> float:
    """The default overall seconds for one file: ``max(DEADLINE_MIN, size / DEADLINE_RATE)``
    with its pinned size (or the limit for a file without one)."""
    return max(DEADLINE_MIN, _max_bytes(f) / DEADLINE_RATE)


# Why not pooch (the scientific-Python downloader), checked with pooch 1.9.0:
# - it verifies plain content hashes only (hashlib algorithms on the file), not git blob ids
#   (sha1 of b"blob <len>\0" + content), which is how every file here is pinned; with
#   known_hash=None it moves the unverified download under the final name;
# - it has no size cap: a server that sends an endless body fills the disk;
# - its retries wait a hard-coded 1, 2, ... 10 s, and it retries 4xx answers (404 of an
#   optional file included) as well as 5xx;
# - it needs requests (+ urllib3, idna, charset-normalizer, certifi), none of which ncprobe
#   uses otherwise.
# Keeping ncprobe's guarantees (verify the git blob id before the final name exists, cap the
# body, retry only transfer errors) on top of pooch would leave it only the HTTP GET, so the
# standard library does the transfer (about 60 lines) and ncprobe._io the atomic write.
def _fetch(url: str, *, timeout: float, max_bytes: int, until: float | None = None,
           deadline: float = 0.0) -> bytes:
    """GET ``url``; at most ``max_bytes`` are read (one byte more tells that it is too long).

    ``until``: the ``time.monotonic()`` by which the body must be complete (``deadline``
    seconds after the file's first attempt began); checked after every read, so it passes
    at most one ``timeout`` late. Reads return what has arrived (``read1``), so a server
    that trickles bytes is seen at each byte.
    """
    def late(got: int) -> None:
        if until is not None and time.monotonic() > until:
            raise _Deadline(deadline, got)

    late(0)
    req = urllib.request.Request(url, headers={"User-Agent": f"ncprobe/{__version__}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (http(s) only)
            declared = resp.headers.get("Content-Length", "")
            announced = int(declared) if declared.strip().isdigit() else None
            if announced is not None and announced > max_bytes:
                raise _TooLarge(f"the server announces {announced} bytes")
            body = bytearray()
            while True:
                late(len(body))
                block = resp.read1(min(CHUNK_BYTES, max_bytes + 1 - len(body)))
                if not block:
                    break
                body += block
                if len(body) > max_bytes:
                    raise _TooLarge("the server sent more")
            # read(n) returns b"" when the connection closes early instead of raising
            # IncompleteRead, so a short body is caught here
            if announced is not None and len(body) < announced:
                raise _Truncated(len(body), announced)
            return bytes(body)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise _NotFound(url) from e
        raise


def _retryable(err: BaseException) -> bool:
    """Transfer errors worth another attempt: network, timeouts, truncation, 5xx and 429."""
    if isinstance(err, urllib.error.HTTPError):
        return err.code >= 500 or err.code == 429
    return isinstance(err, (urllib.error.URLError, OSError, http.client.HTTPException,
                            _Truncated))


def _describe(err: BaseException, timeout: float) -> str:
    if isinstance(err, urllib.error.HTTPError):
        return f"HTTP {err.code} {err.reason}"
    reason = err.reason if isinstance(err, urllib.error.URLError) else err
    if isinstance(reason, TimeoutError):
        return f"no answer within --timeout {timeout:g} s"
    if isinstance(reason, http.client.IncompleteRead):
        return f"the connection closed after {len(reason.partial)} bytes, before the end"
    if isinstance(reason, (OSError, http.client.HTTPException)) and not str(reason):
        return type(reason).__name__
    return str(reason)


def _fetch_with_retries(url: str, *, retries: int, backoff: float, timeout: float,
                        max_bytes: int, deadline: float | None = None) -> bytes:
    """:func:`_fetch` with up to ``retries`` more attempts after a transfer error.

    The k-th retry waits ``backoff * 2**(k-1)`` seconds (:func:`ncprobe._io.retry`).
    ``_NotFound``, ``_TooLarge``, ``_Deadline`` (every attempt together took longer than
    ``deadline`` seconds) and other HTTP errors are raised at once; the last transfer
    error is raised when every attempt failed.
    """
    until = time.monotonic() + deadline if deadline is not None else None

    def warn(err: BaseException, k: int, wait: float) -> None:
        log.warning("fetching %s failed (%s); retry %d of %d in %g s", url,
                    _describe(err, timeout), k, retries, wait)

    return retry(lambda: _fetch(url, timeout=timeout, max_bytes=max_bytes, until=until,
                                deadline=deadline or 0.0),
                 retries=retries, backoff=backoff, retryable=_retryable, on_retry=warn)


def download(data_dir: str | os.PathLike | None = None, *, url_template: str | None = None,
             files: Iterable[UpstreamFile] | None = None, retries: int = DEFAULT_RETRIES,
             backoff: float = DEFAULT_BACKOFF, timeout: float = DEFAULT_TIMEOUT,
             deadline: float | None = None,
             progress: Callable[[str, str], None] | None = None) -> DownloadReport:
    """Fetch every pinned file into the data directory, verifying each.

    Files already present with the right git blob id are skipped; a present
    file with other content is fetched again. Each body is read in chunks and
    at most its pinned size (:data:`UNPINNED_MAX_BYTES` for a pin without a
    size), verified, then written with :func:`ncprobe._io.atomic_write_bytes`,
    so an interrupted or failed download never leaves a partial or unverified
    file under the final name. Transfer errors (connection refused or reset, a
    body cut short, a timeout, HTTP 5xx and 429) are retried with exponential
    backoff (``backoff * 2**k`` seconds).

    Args:
        data_dir: target directory (see :func:`resolve_data_dir`).
        url_template: a URL template with ``{owner}``, ``{repo}``, ``{commit}``
            and ``{path}``, or a base URL to which ``/{owner}/{repo}/{commit}/{path}``
            is appended. Defaults to GitHub's raw file service.
        files: the files to fetch (default: all of :func:`upstream_files`).
        retries: further attempts per file after a transfer error (>= 0).
        backoff: seconds before the first retry, doubled for each next one (>= 0).
        timeout: seconds to wait for the connection and for each read (> 0).
        deadline: seconds each file may take in all, its retries included (> 0); default
            :func:`file_deadline` (at least 60 s, 50 kB/s of its pinned size). A server
            that sends a byte now and then never trips ``timeout``; this stops it.
        progress: called as ``progress(local_path, status)`` after each file.

    Raises:
        UsageError: a bad option (see :func:`check_download_options`), before any request.
        DownloadError: a file could not be fetched (offline, not found, cut short
            after every retry, longer than its pin, content that does not verify)
            or written, or not complete within its deadline; the message names the file
            and the URL.
    """
    template = check_download_options(url_template=url_template, retries=retries,
                                      backoff=backoff, timeout=timeout, deadline=deadline)
    target = resolve_data_dir(data_dir)
    report = DownloadReport([], [], [], [])
    failures: list[str] = []
    for f in (list(files) if files is not None else upstream_files()):
        status = file_status(target, f)
        if status == "verified":
            report.skipped.append(f.local_path)
            if progress:
                progress(f.local_path, "verified")
            continue
        if status in ("mismatch", "unreadable"):
            log.warning("%s: present but %s; fetching it again (the present copy is kept "
                        "beside it)", f.local_path, "unreadable" if status == "unreadable"
                        else f"its git blob id is not {f.git_blob_sha1}")
        url = f.url(template)
        limit = deadline if deadline is not None else file_deadline(f)
        try:
            data = _fetch_with_retries(url, retries=retries, backoff=backoff, timeout=timeout,
                                       max_bytes=_max_bytes(f), deadline=limit)
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
        except _TooLarge as e:
            what = (f"its pinned size, {f.bytes} bytes" if f.bytes is not None else
                    f"the limit for a file without a pinned size, {UNPINNED_MAX_BYTES} bytes")
            failures.append(f"{f.local_path}: the body at {url} is longer than {what} ({e}); "
                            "stopped reading, not written")
            if progress:
                progress(f.local_path, "TOO LARGE")
            continue
        except _Deadline as e:
            # a server this slow would be as slow for the next files: stop here; files
            # fetched so far are kept (a rerun resumes)
            raise DownloadError(
                f"could not fetch {f.local_path} from {url}: {e}; the server sends too "
                f"slowly (each read came within --timeout {timeout:g} s, the whole file did "
                f"not come within its deadline). Run the command again, raise --deadline "
                f"SECONDS (default: {DEADLINE_MIN:g} s or {DEADLINE_RATE // 1000} kB/s of the "
                "pinned size, whichever is longer), or set --url to a faster mirror") from e
        except urllib.error.HTTPError as e:
            raise DownloadError(f"could not fetch {f.local_path} from {url}: HTTP {e.code} "
                                f"{e.reason}") from e
        except (urllib.error.URLError, OSError, http.client.HTTPException, _Truncated) as e:
            # a transfer error that outlived every retry: the next files would fail the same
            # way, so stop here; files fetched so far are kept (a rerun resumes)
            raise DownloadError(
                f"could not fetch {f.local_path} from {url} after {retries + 1} attempt(s): "
                f"{_describe(e, timeout)}. Are you offline? Run the command again to resume, "
                f"raise --retries or --timeout, set --url to a reachable mirror, or copy the "
                f"files into a directory and pass it with --data-dir or ${ENV_VAR}.") from e
        got = git_blob_sha1(data)
        if got != f.git_blob_sha1:
            failures.append(f"{f.local_path}: content downloaded from {url} has git blob id "
                            f"{got}, expected {f.git_blob_sha1}; not written")
            if progress:
                progress(f.local_path, "BAD CHECKSUM")
            continue
        try:
            if status in ("mismatch", "unreadable"):  # maybe edited on purpose: kept
                report.kept.append(_keep_aside(target / f.local_path))
            atomic_write_bytes(target / f.local_path, data)
        except OSError as e:
            raise DownloadError(f"fetched {f.local_path} from {url} but could not write it to "
                                f"{target / f.local_path}: {e.strerror or e}. Check that the "
                                "data directory is writable, or choose another with "
                                "--data-dir.") from e
        report.fetched.append(f.local_path)
        if status in ("mismatch", "unreadable"):
            report.refetched.append(f.local_path)
        if progress:
            progress(f.local_path, "fetched")
    if failures:
        raise DownloadError("download incomplete into " + str(target) + ":\n  "
                            + "\n  ".join(failures))
    return report
