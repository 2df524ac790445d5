"""Issue 19, `pairs generate` and `load_pairs`: probes from the right words, repeats counted
once, every output fault a named error, progress, --scale, grouped problems, wordfreq.

Every expectation is written from the input by hand (which row, which column, which words),
or read back with the csv module and os.stat; none is copied from the code's output.
"""

from __future__ import annotations

import csv
import errno
import json
import os
import stat
import sys
import unicodedata
from pathlib import Path

import pytest

import ncprobe
from ncprobe.cli import main
from ncprobe.data.generate import generate_pairs
from ncprobe.errors import DataError, DataErrors

pytest.importorskip("wordfreq")

GREY = "use your grey matter to solve it"  # 'grey matter' is words [2, 4)


def _write(tmp_path: Path, text: str, name: str = "in.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _errors(info) -> list[DataError]:
    e = info.value
    return e.errors if isinstance(e, DataErrors) else [e]


# --- 1. probes from the compound's own words -------------------------------------------------

def test_head_and_modifier_must_be_whole_words_of_the_compound(tmp_path):
    src = _write(tmp_path, (
        "nc,sentence,head,modifier\n"
        f"grey matter,{GREY},matte,grey\n"                      # 1: a typo, a substring
        "police car,a police car came,car,police\n"             # 2: fine
        "fire truck,a fire truck came,truck,truck\n"            # 3: the head twice
        "art gallery,the art gallery opened,gal,art\n"))        # 4: a piece of a word
    out = tmp_path / "out.csv"
    with pytest.raises(DataErrors) as info:
        generate_pairs(src, out, "en", k=0)
    assert [(e.row, e.column) for e in _errors(info)] == [(1, "head"), (3, "modifier"),
                                                         (4, "head")]
    assert "'matte'" in str(_errors(info)[0]) and str(src) in str(_errors(info)[0])
    assert not out.exists()  # nothing written
    # the corrected file: P_Comp holds the compound's words, a hyphenated word as its parts
    src = _write(tmp_path, ("nc,sentence,head,modifier\n"
                            f"grey matter,{GREY},matter,grey\n"
                            "eau-forte,une eau-forte ancienne,eau,forte\n"))
    generate_pairs(src, out, "fr", k=0)
    comp = {(r["nc"], r["probe"]): r["sentence"].split()[:int(r["start"])] + [r["substitute"]]
            + r["sentence"].split()[int(r["end"]):] for r in _rows(out)
            if r["probe"].startswith("comp")}
    assert " ".join(comp[("grey matter", "comp-head")]) == "use your matter to solve it"
    assert " ".join(comp[("grey matter", "comp-mod")]) == "use your grey to solve it"
    assert " ".join(comp[("eau-forte", "comp-head")]) == "une eau ancienne"


def test_a_given_span_must_hold_the_compound(tmp_path):
    # row 1 points at 'your grey'; row 2 is the right span, in a context of its own
    src = _write(tmp_path, ("nc,sentence,start,end,head,modifier,context\n"
                            f"grey matter,{GREY},1,3,matter,grey,S1\n"
                            "grey matter,grey matter is what it needs,0,2,matter,grey,S2\n"
                            "police car,the police car came,1,2,car,police,S1\n"))  # 'police'
    out = tmp_path / "out.csv"
    with pytest.raises(DataErrors) as info:
        generate_pairs(src, out, "en", k=0)
    errors = _errors(info)
    assert [(e.row, e.column) for e in errors] == [(1, "start"), (3, "start")]
    assert "'your grey'" in errors[0].reason and "[2, 4)" in errors[0].reason
    assert not out.exists()


def test_load_pairs_refuses_a_span_beside_the_compound(tmp_path):
    f = _write(tmp_path, ("nc,sentence,start,end,probe,substitute\n"
                          f"grey matter,{GREY},1,3,rand,your drinking\n"), "pairs.csv")
    with pytest.raises(DataError) as info:
        ncprobe.load_pairs(f, lang="en")
    assert (info.value.row, info.value.column) == (1, "start")
    assert "[2, 4)" in info.value.reason
    # the words of the compound at the span: loaded
    f.write_text("nc,sentence,start,end,probe,substitute\n"
                 f"grey matter,{GREY},2,4,rand,your drinking\n")
    assert [s.text for s in ncprobe.load_pairs(f, lang="en")] == [
        GREY, "use your your drinking to solve it"]


# --- 2. a repeat in another Unicode form or spacing is a repeat ------------------------------

@pytest.mark.parametrize("form", ["nfd", "spaces"])
def test_load_pairs_refuses_a_repeat_that_differs_only_in_form(tmp_path, form):
    def other(t):
        return unicodedata.normalize("NFD", t) if form == "nfd" else f" {t}  "
    first = ("café quente", "o café quente está na mesa", "1", "3", "rand", "mesa azul")
    again = tuple(other(v) if v[0].isalpha() else v for v in first)
    assert again != first
    f = tmp_path / "p.csv"
    with open(f, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["nc", "sentence", "start", "end", "probe", "substitute"])
        w.writerow(first)
        w.writerow(again)
    with pytest.raises(DataError) as info:
        ncprobe.load_pairs(f, lang="pt")
    assert info.value.row == 2 and "repeats row 1" in info.value.reason
    # with the repeat removed, one random probe: it weighs once
    f.write_text(f.read_text(encoding="utf-8").splitlines()[0] + "\n" + ",".join(first) + "\n",
                 encoding="utf-8")
    assert [(s.probe, s.variant) for s in ncprobe.load_pairs(f, lang="pt")] == [
        ("original", 1), ("rand", 1)]


def test_load_pairs_jsonl_number_and_text_are_one_value(tmp_path):
    row = {"nc": "grey matter", "sentence": GREY, "span": [2, 4], "probe": "syn",
           "substitute": "brain", "comp": 1.5}
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps(row) + "\n" + json.dumps(dict(row, comp="1.5")) + "\n")
    with pytest.raises(DataError) as info:
        ncprobe.load_pairs(f, lang="en")
    assert info.value.row == 2 and "repeats row 1" in info.value.reason


# --- 3. the output: unwritable, a directory, modes ---------------------------------------------

INPUT = f"nc,sentence,head,modifier\ngrey matter,{GREY},matter,grey\n"


@pytest.mark.parametrize("code, words", [(errno.EROFS, "read-only"),
                                         (errno.ENOSPC, "disk is full"),
                                         (errno.EACCES, "permission denied")])
def test_an_unwritable_out_is_exit_6_naming_it(tmp_path, monkeypatch, capsys, code, words):
    def refuse(path, text):
        raise OSError(code, os.strerror(code), str(path))
    monkeypatch.setattr("ncprobe.data.generate.atomic_write_text", refuse)
    src = _write(tmp_path, INPUT)
    out = tmp_path / "out.csv"
    assert main(["pairs", "generate", str(src), "--lang", "en", "--k", "0", "--out", str(out),
                 "--quiet"]) == 6
    err = capsys.readouterr().err
    assert str(out) in err and words in err and "Traceback" not in err


def test_out_that_is_a_directory_or_below_a_file(tmp_path, capsys):
    src = _write(tmp_path, INPUT)
    folder = tmp_path / "pairs.csv"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine\n")
    assert main(["pairs", "generate", str(src), "--lang", "en", "--k", "0", "--out",
                 str(folder), "--overwrite", "--quiet"]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["keep.txt"]
    a_file = tmp_path / "notes.txt"
    a_file.write_text("notes\n")
    assert main(["pairs", "generate", str(src), "--lang", "en", "--k", "0", "--out",
                 str(a_file / "p.csv"), "--quiet"]) == 6
    assert "not a directory" in capsys.readouterr().err
    assert a_file.read_text() == "notes\n"
    loop = tmp_path / "loop.csv"
    loop.symlink_to(loop.name)  # a link to itself
    for out in (loop, loop / "p.csv"):
        assert main(["pairs", "generate", str(src), "--lang", "en", "--k", "0", "--out",
                     str(out), "--overwrite", "--quiet"]) == 6
        assert "link loop" in capsys.readouterr().err


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_the_pairs_file_respects_the_umask(tmp_path, umask):
    src = _write(tmp_path, INPUT)
    old = os.umask(umask)
    try:
        generate_pairs(src, tmp_path / "out.csv", "en", k=0)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out.csv").stat().st_mode) == 0o666 & ~umask


# --- 4. progress, 5. --scale, 7. the context label ------------------------------------------

def test_progress_on_stderr_and_quiet(tmp_path, capsys):
    src = _write(tmp_path, INPUT + "police car,a police car came,car,police\n")
    assert main(["pairs", "generate", str(src), "--lang", "en", "--k", "0", "--out",
                 str(tmp_path / "a.csv")]) == 0
    got = capsys.readouterr()
    assert "compound 1 of 2" in got.err and "compound 2 of 2" in got.err
    assert " of 2" not in got.out  # progress is not output
    assert main(["pairs", "generate", str(src), "--lang", "en", "--k", "0", "--out",
                 str(tmp_path / "b.csv"), "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_scale_option(tmp_path, capsys):
    src = _write(tmp_path, f"nc,sentence,head,modifier,comp\ngrey matter,{GREY},matter,grey,6\n")
    out = tmp_path / "out.csv"
    assert main(["pairs", "generate", str(src), "--lang", "en", "--k", "0", "--out",
                 str(out), "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "--scale" in err and "column 'comp'" in err  # the option the message names exists
    assert not out.exists()
    assert main(["pairs", "generate", str(src), "--lang", "en", "--k", "0", "--out",
                 str(out), "--quiet", "--scale", "1", "7"]) == 0
    assert {r["comp"] for r in _rows(out)} == {"6"}
    assert ncprobe.load_pairs(out, scale=(1, 7)).ncs[("en", "grey matter")].comp == 6.0
    assert main(["pairs", "generate", str(src), "--lang", "en", "--k", "0", "--out",
                 str(tmp_path / "x.csv"), "--quiet", "--scale", "7", "1"]) == 2


def test_rows_without_context_are_naturalistic_in_help_readme_and_file(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["pairs", "generate", "--help"])
    assert info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "without a context column" in text and "S1" in text and "naturalistic" in text
    guide = Path(__file__).parents[2] / "docs" / "guide" / "own-compounds.md"
    section = guide.read_text(encoding="utf-8").split("## Probing your own compounds", 1)[1]
    section = section.split("\n## ", 1)[0]
    assert "naturalistic" in section and "S1" in section
    src = _write(tmp_path, INPUT)
    generate_pairs(src, tmp_path / "out.csv", "en", k=0)
    assert {r["context"] for r in _rows(tmp_path / "out.csv")} == {"S1"}
    from ncprobe.data.stimuli import expand_contexts
    assert "S1" in expand_contexts("nat")


# --- 6. one message for a problem every row shares ---------------------------------------------

def test_a_problem_shared_by_rows_is_one_message_with_a_count(tmp_path, capsys):
    lines = ["nc,sentence"] + [f"word{i} thing,a word{i} thing here" for i in range(1, 91)]
    src = _write(tmp_path, "\n".join(lines) + "\n")
    with pytest.raises(DataErrors) as info:
        generate_pairs(src, tmp_path / "out.csv", "en", k=0)
    errors = _errors(info)
    assert len(errors) == 1 and errors[0].column == "head"
    assert "90 rows" in str(errors[0]) and "rows 1-90" in str(errors[0])
    # a problem of its own keeps its row; rows 2 and 4 share one
    src = _write(tmp_path, ("nc,sentence,head,modifier\n"
                            "police car,a police car,car,police\n"   # fine
                            "fire truck,a fire truck,,\n"            # no head, no rule
                            "red tape,much red tape,banana,red\n"     # not a word of it
                            "acid test,the acid test,,\n"))          # no head, no rule
    with pytest.raises(DataErrors) as info:
        generate_pairs(src, tmp_path / "out.csv", "en", k=0)
    assert [(e.row, e.column) for e in _errors(info)] == [(None, "head"), (3, "head")]
    assert "2 rows (rows 2, 4)" in str(_errors(info)[0])
    # the CLI prints it once
    assert main(["pairs", "generate", str(src), "--lang", "en", "--k", "0", "--out",
                 str(tmp_path / "out.csv"), "--quiet"]) == 3
    assert capsys.readouterr().err.count("error:") == 2


# --- 8. wordfreq missing: a package to install, exit 5 ----------------------------------------

def test_without_wordfreq_exit_5(tmp_path, monkeypatch, capsys):
    from ncprobe.errors import NcprobeError
    monkeypatch.setitem(sys.modules, "wordfreq", None)  # `import wordfreq` now fails
    src = _write(tmp_path, INPUT)
    assert main(["pairs", "generate", str(src), "--lang", "en", "--out",
                 str(tmp_path / "out.csv")]) == 5
    assert 'pip install "ncprobe[generate]"' in capsys.readouterr().err
    # the NCS context asks through the same check: the same code, its own reason
    from ncprobe.data import ncs
    with pytest.raises(NcprobeError) as info:
        ncs._require_wordfreq()
    assert info.value.exit_code == 5 and "NCS" in str(info.value)


def test_the_same_sentence_in_two_contexts_of_one_compound_is_refused(tmp_path):
    nfd = unicodedata.normalize("NFD", "o café quente está pronto")
    src = _write(tmp_path, ("nc,sentence,head,modifier,context\n"
                            "café quente,o café quente está pronto,café,quente,S1\n"
                            f"café quente,{nfd},café,quente,S2\n"                # the same
                            "café quente,O café quente  está pronto ,café,quente,S3\n"  # too
                            "café quente,um café quente agora,café,quente,N\n"))  # another
    with pytest.raises(DataErrors) as info:
        generate_pairs(src, tmp_path / "out.csv", "pt", k=0)
    assert [(e.row, e.column) for e in _errors(info)] == [(None, "sentence")]
    assert "rows 2-3" in str(_errors(info)[0]) and "row 1" in str(_errors(info)[0])
    assert not (tmp_path / "out.csv").exists()
