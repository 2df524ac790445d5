"""Data directory resolution, git blob ids, and the real download path against a local server."""

from __future__ import annotations

import subprocess
import urllib.parse
from pathlib import Path

import pytest

from ncprobe.data import sources
from ncprobe.errors import DownloadError

from .local_http import QuietHandler, serve


def test_git_blob_sha1_matches_git(tmp_path: Path) -> None:
    f = tmp_path / "x.csv"
    f.write_bytes("compound,ação\nvinho branco,1\n".encode())
    expected = subprocess.run(["git", "hash-object", str(f)], capture_output=True, text=True,
                              check=True).stdout.strip()
    assert sources.git_blob_sha1(f.read_bytes()) == expected


def test_manifest_pins_agree_with_shared_upstream(raw_dir: Path) -> None:
    """Every pin of ../shared/ncimp/UPSTREAM.tsv is in the packaged manifest, same commit and id."""
    upstream = raw_dir.parent / "UPSTREAM.tsv"
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
    assert not list(target.rglob("*.part"))

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

    # corrupted: detected by its git blob id and fetched again
    bad = target / fetchable[1].local_path
    bad.write_bytes(bad.read_bytes()[:-10] + b"corrupted!")
    report = sources.download(target, url_template=base, backoff=0)
    assert report.refetched == [fetchable[1].local_path]
    assert bad.read_bytes() == (raw_dir / fetchable[1].local_path).read_bytes()


def test_missing_required_file_is_named(server, tmp_path: Path) -> None:
    base, _ = server
    f = sources.upstream_file("marcospln+nctti/data/data_pt.tsv")
    moved = sources.UpstreamFile(f.repo, f.commit, "data/no_such_file.tsv", f.git_blob_sha1,
                                 f.bytes, "required")
    with pytest.raises(DownloadError, match=r"marcospln\+nctti/data/no_such_file.tsv.*404"):
        sources.download(tmp_path, url_template=base, files=[moved], backoff=0)


def test_bad_checksum_is_not_written(server, tmp_path: Path) -> None:
    base, _ = server
    f = sources.upstream_file("marcospln+nctti/data/data_pt.tsv")
    wrong = sources.UpstreamFile(f.repo, f.commit, f.path, "0" * 40, f.bytes, "required")
    with pytest.raises(DownloadError, match="expected 0000"):
        sources.download(tmp_path, url_template=base, files=[wrong], backoff=0)
    assert not (tmp_path / f.local_path).exists()


def test_transient_errors_are_retried(server, tmp_path: Path) -> None:
    base, handler = server
    f = sources.upstream_file("marcospln+nctti/data/data_pt.tsv")
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
    f = sources.upstream_file("marcospln+nctti/data/data_pt.tsv")
    with pytest.raises(DownloadError, match="offline"):
        sources.download(tmp_path, url_template=f"http://127.0.0.1:{port}", files=[f],
                         retries=1, backoff=0, timeout=2)


def test_cli_download(server, tmp_path: Path, capsys) -> None:
    from ncprobe.cli import main

    base, _ = server
    assert main(["data", "download", "--data-dir", str(tmp_path), "--url", base]) == 0
    assert "fetched" in capsys.readouterr().out
    assert main(["data", "check", "--data-dir", str(tmp_path)]) == 0
