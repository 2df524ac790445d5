"""`ncprobe reproduce`: every model that can run here, a clear line for every one that cannot."""

from __future__ import annotations

import pytest

from ncprobe.cli import main
from ncprobe.ncimp.results import Results


@pytest.fixture
def offline_hub(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty local hub cache
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("NCPROBE_CACHE", str(tmp_path / "cache"))


@pytest.mark.slow
def test_reproduce_runs_what_it_can_and_says_why_it_skips_the_rest(raw_dir, tmp_path, capsys,
                                                                   offline_hub):
    out, res_dir = tmp_path / "figs", tmp_path / "results"
    rc = main(["reproduce", "--models", "glove-6b-50d,elmo,bert-ml,openai", "--langs", "en,pt",
               "--out", str(out), "--results-dir", str(res_dir), "--n-boot", "50", "--quiet",
               "--jobs", "1",  # the figures in this process (a pool: test_report_ownership)
               "--data-dir", str(raw_dir)])
    captured = capsys.readouterr()
    assert rc == 0, captured.err
    skipped = [line for line in captured.err.splitlines() if line.startswith("skipped ")]
    assert len(skipped) == 7  # glove-6b-50d pt; elmo, bert-ml, openai in both languages
    assert "skipped glove-6b-50d (pt): no pt variant" in captured.err
    assert "skipped bert-ml (en): google-bert/bert-base-multilingual-cased is not in the local" \
        in captured.err
    assert "skipped elmo (pt)" in captured.err and "skipped openai (en)" in captured.err
    assert "computed glove-6b-50d (en)" in captured.out
    res = Results.load(res_dir / "glove-6b-50d-en-boot_50")  # --n-boot 50 in the name
    assert set(res.cosines["model"]) == {"glove-6b-50d"}
    readme = (out / "README.md").read_text()
    assert "glove-6b-50d" in readme and "Skipped here" in readme and "need their weights" in readme
    assert not (out / "verification").exists()  # the default --probes: the study's alone
    for fmt, magic in (("png", b"\x89PNG"), ("pdf", b"%PDF")):  # the default --format png,pdf
        assert (out / f"fig01_sent_cosines.{fmt}").read_bytes().startswith(magic)


@pytest.mark.slow
def test_reproduce_with_nothing_available_exits_5(raw_dir, tmp_path, capsys, offline_hub):
    rc = main(["reproduce", "--models", "elmo", "--langs", "en", "--out", str(tmp_path / "o"),
               "--results-dir", str(tmp_path / "r"), "--quiet", "--data-dir", str(raw_dir)])
    assert rc == 5
    assert "no model could run here" in capsys.readouterr().err


def test_reproduce_refuses_an_unknown_language_before_computing(tmp_path, monkeypatch,
                                                                capsys) -> None:
    import ncprobe.ncimp.reproduce as rp
    from ncprobe.errors import UsageError

    def never(*a, **k):
        raise AssertionError("computed before the language was refused")

    monkeypatch.setattr(rp, "compute", never)
    with pytest.raises(UsageError, match="unknown language.*'xx'.*NCIMP has en, pt"):
        rp.reproduce(["glove-6b-50d"], ["en", "xx"], results_dir=tmp_path, progress=False)
    rc = main(["reproduce", "--models", "glove-6b-50d", "--langs", "xx", "--out",
               str(tmp_path / "o"), "--results-dir", str(tmp_path / "r"), "--quiet"])
    assert rc == 2 and "'xx'" in capsys.readouterr().err
    assert not (tmp_path / "r").exists() and not (tmp_path / "o").exists()


def test_a_skipped_model_s_directory_does_not_stop_reproduce(tmp_path, monkeypatch,
                                                              offline_hub) -> None:
    """Issue 28: a directory at the default place of a model that is skipped here (the
    README's Python example used to save there) is no reason to stop: that run writes
    nothing. One at the place of a model that runs still stops it, naming --results-dir."""
    import ncprobe.ncimp.reproduce as rp
    from ncprobe.errors import UsageError
    from ncprobe.ncimp.pipeline import run_dir

    def never(*a, **k):
        raise AssertionError("computed")

    monkeypatch.setattr(rp, "compute", never)
    results = tmp_path / "results"
    for model in ("bert-ml", "glove-6b-50d"):  # bert-ml: not in the (empty) hub cache
        theirs = run_dir(results, model, "en", rp._run_config(model, "en", {}))
        theirs.mkdir(parents=True)
        (theirs / "my-notes.txt").write_text("not ncprobe's")
    done = rp.reproduce(["bert-ml"], ["en"], results_dir=results, progress=False)
    assert [(m, lg) for m, lg, _ in done.skipped] == [("bert-ml", "en")] and not done.ran
    with pytest.raises(UsageError, match="choose another --results-dir"):
        rp.reproduce(["glove-6b-50d"], ["en"], results_dir=results, progress=False)


@pytest.mark.slow
def test_reproduce_passes_the_storage_dtype_and_the_token_budget(raw_dir, tmp_path,
                                                                 offline_hub) -> None:
    res_dir = tmp_path / "results"
    rc = main(["reproduce", "--models", "glove-6b-50d", "--langs", "en", "--out",
               str(tmp_path / "figs"), "--results-dir", str(res_dir), "--n-boot", "0",
               "--store-dtype", "float16", "--batch-tokens", "0", "--quiet", "--jobs", "1",
               "--data-dir", str(raw_dir), "--context", "neut"])
    assert rc == 0
    (run,) = [p for p in res_dir.iterdir() if p.is_dir()]
    (meta,) = Results.load(run).meta
    config = meta["config"]
    assert config["store_dtype"] == "float16" and config["batch_tokens"] == 0
    assert "float16" in run.name  # part of the run's identity, unlike the token budget
