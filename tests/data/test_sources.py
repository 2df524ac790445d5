"""Data directory resolution, git blob ids, and the real download path against a local server."""

from __future__ import annotations

import re
import subprocess
import threading
import urllib.parse
from pathlib import Path

import pytest

import ncprobe
from ncprobe.cli import main
from ncprobe.data import sources
from ncprobe.errors import DownloadError, UsageError

from ..local_http import QuietHandler, serve


def test_git_blob_sha1_matches_git(tmp_path: Path) -> None:
    f = tmp_path / "x.csv"
    f.write_bytes("compound,ação\nvinho branco,1\n".encode())
    expected = subprocess.run(["git", "hash-object", str(f)], capture_output=True, text=True,
                              check=True).stdout.strip()
    assert sources.git_blob_sha1(f.read_bytes()) == expected


def test_manifest_pins_agree_with_shared_upstream(raw_dir: Path) -> None:
    """Every pin of ../shared/ncimp/UPSTREAM.tsv is in the packaged manifest, same commit and id."""
    upstream = raw_dir.parent / "UPSTREAM.tsv"
    if not upstream.is_file():
        pytest.skip(f"{upstream} not found: only the development checkout's shared/ has it")
    ours = {(f.repo, f.path): f for f in sources.upstream_files()}
    lines = upstream.read_text().splitlines()[1:]
    assert lines
    for line in lines:
        repo, commit, path, blob, *_ = line.split("\t")
        assert ours[(repo, path)].commit == commit
        assert ours[(repo, path)].git_blob_sha1 == blob


def test_every_bundled_file_verifies(raw_dir: Path) -> None:
    status = {f.local_path: sources.file_status(raw_dir, f) for f in sources.upstream_files()}
    assert [p for p, s in status.items() if s == "mismatch"] == []
    assert {p for p, s in status.items() if s == "missing"} == {
        f.local_path for f in sources.upstream_files() if f.need == "optional"}


def test_data_dir_resolution_order(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NCPROBE_DATA", str(tmp_path / "env"))
    assert sources.resolve_data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert sources.resolve_data_dir(None) == tmp_path / "env"
    monkeypatch.delenv("NCPROBE_DATA")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert sources.resolve_data_dir(None) == tmp_path / "cache" / "ncprobe" / "ncimp"


def test_a_relative_data_dir_is_named_whole_with_where_it_came_from(monkeypatch, tmp_path):
    """Issue 28: the README's relative $NCPROBE_DATA from another directory (a notebook's)
    names the directory it looked in, absolute, and that the variable was relative."""
    from ncprobe.errors import DataError

    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")
    monkeypatch.setenv("NCPROBE_DATA", "../shared/ncimp/raw")
    where = sources.resolve_data_dir(None)
    assert where == tmp_path / "shared" / "ncimp" / "raw" and where.is_absolute()
    with pytest.raises(DataError) as e:
        ncprobe.load_stimuli("en")
    msg = str(e.value)
    assert f"the data directory {tmp_path / 'shared' / 'ncimp' / 'raw'} does not exist" in msg
    assert "$NCPROBE_DATA=../shared/ncimp/raw" in msg and str(tmp_path / "notebooks") in msg
    # taken from the directory current when it was resolved, not later
    monkeypatch.chdir(tmp_path)
    assert sources.resolve_data_dir(tmp_path / "x") == tmp_path / "x"


def _data_pt() -> sources.UpstreamFile:
    """The pin of the Portuguese NCTTI table (a small required file) in the packaged list."""
    want = "marcospln+nctti/data/data_pt.tsv"
    [f] = [f for f in sources.upstream_files() if f.local_path == want]
    return f


class _GitHubLike(QuietHandler):
    """Serves /<owner>/<repo>/<commit>/<path> from a directory in the data-directory layout."""

    root: Path
    commits: set[str]
    hits: list[str]
    fail_first: dict[str, int]

    def do_GET(self) -> None:  # noqa: N802
        parts = urllib.parse.unquote(self.path).lstrip("/").split("/", 3)
        self.hits.append(self.path)
        if len(parts) < 4 or parts[2] not in self.commits:
            self.send_error(404)
            return
        if self.fail_first.get(parts[3], 0) > 0:
            self.fail_first[parts[3]] -= 1
            self.send_error(503)
            return
        f = self.root / f"{parts[0]}+{parts[1]}" / parts[3]
        if not f.is_file():
            self.send_error(404)
            return
        self.reply(f.read_bytes())


@pytest.fixture
def server(raw_dir: Path):
    with serve(_GitHubLike, root=raw_dir, commits={f.commit for f in sources.upstream_files()},
               hits=[], fail_first={}) as running:
        yield running


def _fetchable(raw_dir: Path):
    return [f for f in sources.upstream_files() if (raw_dir / f.local_path).is_file()]


def test_clean_download_then_resume_then_repair(server, raw_dir: Path, tmp_path: Path) -> None:
    base, handler = server
    target = tmp_path / "d"
    report = sources.download(target, url_template=base, backoff=0)
    fetchable = _fetchable(raw_dir)
    assert sorted(report.fetched) == sorted(f.local_path for f in fetchable)
    # the optional English naturalistic files are absent upstream: reported by name, no failure
    assert sorted(report.missing_optional) == sorted(
        f.local_path for f in sources.upstream_files() if f.need == "optional")
    for f in fetchable:
        assert (target / f.local_path).read_bytes() == (raw_dir / f.local_path).read_bytes()
    assert not [p for p in target.rglob(".*") if p.is_file()]  # no temporary file left

    # resumed: a file lost since is fetched, the others are skipped without a request
    lost = fetchable[0]
    (target / lost.local_path).unlink()
    handler.hits.clear()
    report = sources.download(target, url_template=base, backoff=0)
    assert report.fetched == [lost.local_path]
    assert len(report.skipped) == len(fetchable) - 1
    fetched_urls = [h for h in handler.hits if "naturalistics_examplesent" not in h
                    or "/PT/" in h]
    assert len(fetched_urls) == 1

    # changed: detected by its git blob id and fetched again; the changed copy (perhaps a
    # deliberate edit) is kept beside it, byte for byte, never destroyed
    bad = target / fetchable[1].local_path
    edited = bad.read_bytes()[:-10] + b"corrupted!"
    bad.write_bytes(edited)
    report = sources.download(target, url_template=base, backoff=0)
    assert report.refetched == [fetchable[1].local_path]
    assert bad.read_bytes() == (raw_dir / fetchable[1].local_path).read_bytes()
    assert len(report.kept) == 1 and Path(report.kept[0]).read_bytes() == edited
    assert Path(report.kept[0]).parent == bad.parent
    assert Path(report.kept[0]).name.startswith(bad.name + ".modified-")
    assert report.kept[0] in report.summary()


def test_missing_required_file_is_named(server, tmp_path: Path) -> None:
    base, _ = server
    f = _data_pt()
    moved = sources.UpstreamFile(f.repo, f.commit, "data/no_such_file.tsv", f.git_blob_sha1,
                                 f.bytes, "required")
    with pytest.raises(DownloadError, match=r"marcospln\+nctti/data/no_such_file.tsv.*404"):
        sources.download(tmp_path, url_template=base, files=[moved], backoff=0)


def test_bad_checksum_is_not_written(server, tmp_path: Path) -> None:
    base, _ = server
    f = _data_pt()
    wrong = sources.UpstreamFile(f.repo, f.commit, f.path, "0" * 40, f.bytes, "required")
    with pytest.raises(DownloadError, match="expected 0000"):
        sources.download(tmp_path, url_template=base, files=[wrong], backoff=0)
    assert not (tmp_path / f.local_path).exists()


def test_transient_errors_are_retried(server, tmp_path: Path) -> None:
    base, handler = server
    f = _data_pt()
    handler.fail_first[f.path] = 2
    report = sources.download(tmp_path, url_template=base, files=[f], backoff=0, retries=2)
    assert report.fetched == [f.local_path]
    assert sum(f.path in h for h in handler.hits) == 3


def test_offline_gives_a_clear_error(tmp_path: Path) -> None:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    f = _data_pt()
    with pytest.raises(DownloadError, match="offline"):
        sources.download(tmp_path, url_template=f"http://127.0.0.1:{port}", files=[f],
                         retries=1, backoff=0, timeout=2)


def test_cli_download(server, raw_dir: Path, tmp_path: Path, capsys) -> None:
    base, _ = server
    assert main(["data", "download", "--data-dir", str(tmp_path), "--url", base]) == 0
    assert "fetched" in capsys.readouterr().out
    status = {f.local_path: sources.file_status(tmp_path, f) for f in sources.upstream_files()}
    assert {p for p, s in status.items() if s != "verified"} == {
        f.local_path for f in sources.upstream_files() if f.need == "optional"}


# --- transfer errors, size caps, timeouts and options, against handlers that misbehave ---

BODY = bytes(range(256)) * 40  # 10240 bytes
PIN = sources.UpstreamFile("owner/repo", "c" * 40, "dir/file.csv", sources.git_blob_sha1(BODY),
                           len(BODY), "required")
ENDLESS = 256 * 2**20  # what the endless handler would send if nobody stopped reading


def _closed_port() -> int:
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    return port


class _CutOff(QuietHandler):
    """Serves BODY to any path; the first ``cut`` answers break off.

    ``mode`` "half": announce every byte, send half, close. "nothing": close before
    the status line.
    """

    cut: int
    mode: str
    hits: list[str]

    def do_GET(self) -> None:  # noqa: N802
        self.hits.append(self.path)
        self.close_connection = True
        if len(self.hits) <= self.cut and self.mode == "nothing":
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY[:len(BODY) // 2] if len(self.hits) <= self.cut else BODY)


@pytest.mark.parametrize("mode", ["half", "nothing"])
def test_transfer_cut_off_once_is_retried(mode: str, tmp_path: Path) -> None:
    with serve(_CutOff, cut=1, mode=mode, hits=[]) as (base, handler):
        report = sources.download(tmp_path, url_template=base, files=[PIN], retries=1,
                                  backoff=0)
    assert report.fetched == [PIN.local_path]
    assert (tmp_path / PIN.local_path).read_bytes() == BODY
    assert len(handler.hits) == 2


def test_transfer_always_cut_off_exits_4_naming_file_and_url(tmp_path: Path, capsys) -> None:
    first = sources.upstream_files()[0]
    with serve(_CutOff, cut=10**6, mode="half", hits=[]) as (base, handler):
        rc = main(["data", "download", "--data-dir", str(tmp_path / "d"), "--url", base,
                   "--retries", "0"])
    err = capsys.readouterr().err
    assert rc == 4, err
    url = first.url(base + "/{owner}/{repo}/{commit}/{path}")
    assert f"could not fetch {first.local_path} from {url}" in err
    assert f"closed after {len(BODY) // 2} of {len(BODY)} bytes" in err
    assert len(handler.hits) == 1
    assert not (tmp_path / "d").exists()  # nothing written, not even a temporary file


def test_retries_count_every_attempt(tmp_path: Path) -> None:
    with serve(_CutOff, cut=10**6, mode="nothing", hits=[]) as (base, handler):
        with pytest.raises(DownloadError, match=r"dir/file.csv from .* after 3 attempt\(s\)"):
            sources.download(tmp_path, url_template=base, files=[PIN], retries=2, backoff=0)
    assert len(handler.hits) == 3


class _Endless(QuietHandler):
    """Sends bytes until the client stops reading (at most ENDLESS); records how many."""

    announce: bool
    sent: list[int]
    done: threading.Event

    def do_GET(self) -> None:  # noqa: N802
        self.close_connection = True
        self.send_response(200)
        if self.announce:
            self.send_header("Content-Length", str(ENDLESS))
        self.end_headers()
        sent, block = 0, b"x" * 2**16
        try:
            while sent < ENDLESS:
                self.wfile.write(block)
                sent += len(block)
        except OSError:  # the client closed the connection
            pass
        finally:
            self.sent.append(sent)
            self.done.set()


@pytest.mark.parametrize("announce", [True, False])
def test_body_longer_than_the_pin_is_refused_without_reading_it(announce: bool,
                                                                tmp_path: Path) -> None:
    with serve(_Endless, announce=announce, sent=[], done=threading.Event()) as (base, handler):
        with pytest.raises(DownloadError) as e:
            sources.download(tmp_path, url_template=base, files=[PIN], retries=3, backoff=0)
        assert handler.done.wait(30)
    assert f"longer than its pinned size, {len(BODY)} bytes" in str(e.value)
    assert PIN.local_path in str(e.value) and base in str(e.value)
    assert len(handler.sent) == 1  # not retried: the server means it
    assert handler.sent[0] < ENDLESS // 4  # the client stopped reading long before the end
    assert not (tmp_path / PIN.local_path).exists()


def test_pin_without_size_is_capped_at_the_documented_limit(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sources, "UNPINNED_MAX_BYTES", 2**20)
    unsized = sources.UpstreamFile(PIN.repo, PIN.commit, PIN.path, PIN.git_blob_sha1, None,
                                   "optional")
    with serve(_Endless, announce=False, sent=[], done=threading.Event()) as (base, handler):
        with pytest.raises(DownloadError, match="without a pinned size, 1048576 bytes"):
            sources.download(tmp_path, url_template=base, files=[unsized], backoff=0)
        assert handler.done.wait(30)
    assert handler.sent[0] < ENDLESS // 4


class _Silent(QuietHandler):
    """Says nothing (``stall`` "headers") or stops mid-body ("body") until released."""

    stall: str
    hits: list[str]
    release: threading.Event

    def do_GET(self) -> None:  # noqa: N802
        self.hits.append(self.path)
        self.close_connection = True
        if self.stall == "body":
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[:100])
        self.release.wait(30)  # bounded: the test releases it on the way out


@pytest.mark.parametrize("stall", ["headers", "body"])
def test_server_that_stops_answering_times_out(stall: str, tmp_path: Path, capsys) -> None:
    release = threading.Event()
    try:
        with serve(_Silent, stall=stall, hits=[], release=release) as (base, handler):
            rc = main(["data", "download", "--data-dir", str(tmp_path), "--url", base,
                       "--timeout", "0.3", "--retries", "1", "--backoff", "0"])
            hits = len(handler.hits)
            release.set()
    finally:
        release.set()
    err = capsys.readouterr().err
    assert rc == 4, err
    assert "no answer within --timeout 0.3 s" in err and "after 2 attempt(s)" in err
    assert hits == 2


class _Status(QuietHandler):
    """Answers ``code`` to the first ``n`` requests, then BODY."""

    code: int
    n: int
    hits: list[str]

    def do_GET(self) -> None:  # noqa: N802
        self.hits.append(self.path)
        if len(self.hits) <= self.n:
            self.send_error(self.code)
            return
        self.reply(BODY)


@pytest.mark.parametrize("code", [429, 500, 502, 503])
def test_busy_or_failing_server_is_retried(code: int, tmp_path: Path) -> None:
    with serve(_Status, code=code, n=2, hits=[]) as (base, handler):
        report = sources.download(tmp_path, url_template=base, files=[PIN], retries=2,
                                  backoff=0)
    assert report.fetched == [PIN.local_path] and len(handler.hits) == 3


@pytest.mark.parametrize("code", [401, 403, 410])
def test_refusal_is_not_retried(code: int, tmp_path: Path) -> None:
    with serve(_Status, code=code, n=10, hits=[]) as (base, handler):
        with pytest.raises(DownloadError, match=rf"dir/file.csv from http://.*: HTTP {code}"):
            sources.download(tmp_path, url_template=base, files=[PIN], retries=3, backoff=0)
    assert len(handler.hits) == 1


def test_unwritable_target_is_a_download_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with serve(_Status, code=500, n=0, hits=[]) as (base, _):
        with pytest.raises(DownloadError, match="could not write it to"):
            sources.download(blocker, url_template=base, files=[PIN], backoff=0)
    assert blocker.read_text() == "not a directory"


BAD_OPTIONS = [
    (["--retries", "-1"], "argument --retries: must be >= 0"),
    (["--retries", "two"], "argument --retries: expected a whole number"),
    (["--timeout", "0"], "argument --timeout: expected a number of seconds > 0"),
    (["--timeout", "-3"], "argument --timeout: expected a number of seconds > 0"),
    (["--timeout", "nan"], "argument --timeout: expected a number of seconds > 0"),
    (["--backoff", "-1"], "argument --backoff: expected a number of seconds >= 0"),
    (["--url", "http://127.0.0.1:{port}/{branch}/{path}"], "unknown placeholder(s) {branch}"),
    (["--url", "http://127.0.0.1:{port}/{owner"], "is not a valid template"),
    (["--url", "file:///etc/{path}"], "is not an http:// or https:// URL"),
]


@pytest.mark.parametrize("extra,message", BAD_OPTIONS)
def test_bad_download_options_exit_2_before_any_request(extra, message, tmp_path: Path,
                                                        capsys) -> None:
    port = _closed_port()
    extra = [x.replace("{port}", str(port)) for x in extra]
    url = [] if "--url" in extra else ["--url", f"http://127.0.0.1:{port}"]
    with pytest.raises(SystemExit) as e:
        main(["data", "download", "--data-dir", str(tmp_path / "d"), *url, *extra])
    assert e.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


@pytest.mark.parametrize("kwargs,message", [
    ({"retries": -1}, "retries must be a whole number >= 0"),
    ({"timeout": 0}, "timeout must be a number of seconds > 0"),
    ({"backoff": -0.5}, "backoff must be a number of seconds >= 0"),
    ({"url_template": "{base}/{owner}/{path}"}, "unknown placeholder(s) {base}"),
])
def test_bad_download_arguments_raise_usage_error(kwargs, message, tmp_path: Path) -> None:
    with serve(_Status, code=500, n=0, hits=[]) as (base, handler):
        kwargs.setdefault("url_template", base)
        with pytest.raises(UsageError, match=re.escape(message)):
            sources.download(tmp_path, files=[PIN], **kwargs)
    assert handler.hits == []


def test_an_unreadable_copy_is_kept_aside_and_fetched_again(server, raw_dir: Path,
                                                              tmp_path: Path, monkeypatch) -> None:
    # root reads any file whatever its mode, so the failed read is simulated
    base, _ = server
    f = _data_pt()
    target = tmp_path / "d"
    local = target / f.local_path
    local.parent.mkdir(parents=True)
    local.write_bytes(b"locked")
    real = Path.read_bytes

    def read_bytes(self):
        if self == local and real(self) == b"locked":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    assert sources.file_status(target, f) == "unreadable"
    report = sources.download(target, url_template=base, files=[f], backoff=0)
    assert report.refetched == [f.local_path] and len(report.kept) == 1
    assert Path(report.kept[0]).read_text() == "locked"
    assert real(local) == (raw_dir / f.local_path).read_bytes()
    assert sources.file_status(target, f) == "verified"
