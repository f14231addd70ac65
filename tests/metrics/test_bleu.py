"""t2t-bleu and corpus_bleu against sacreBLEU on the WMT14 newstest sample."""

import random
import subprocess
import sys

import pytest
import sacrebleu

from t2t_lite.bin import t2t_bleu
from t2t_lite.metrics.bleu import corpus_bleu
from t2t_lite.textio import read_lines as textio_read_lines


def read_lines(path):
    """References as t2t-bleu and the decoder's report read them."""
    return textio_read_lines(path, strip="trailing_whitespace")
from t2t_lite.errors import T2TError

REFERENCE = "wmt14/newstest2014-full.en-de.de"


@pytest.fixture
def reference(shared_data):
    return shared_data / REFERENCE


def api_bleu(hyps, refs, **kwargs):
    metric = sacrebleu.metrics.BLEU(**kwargs)
    return metric.corpus_score(hyps, [refs]), str(metric.get_signature())


def api_chrf_line(hyps, refs):
    """sacreBLEU's chrF2 line (cased, as its command line scores chrF also with -lc)."""
    metric = sacrebleu.metrics.CHRF()
    return metric.corpus_score(hyps, [refs]).format(signature=str(metric.get_signature()))


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def degrade(lines, seed=0):
    """A plausible bad system: each line's words shuffled a little, some dropped."""
    rng = random.Random(seed)
    out = []
    for line in lines:
        words = [w for w in line.split() if rng.random() > 0.15]
        for i in range(len(words) - 1):
            if rng.random() < 0.2:
                words[i], words[i + 1] = words[i + 1], words[i]
        out.append(" ".join(words))
    return out


def run_main(capsys, *argv):
    code = t2t_bleu.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_reference_against_itself_is_100(reference, capsys):
    code, out, err = run_main(capsys, f"--translation={reference}", f"--reference={reference}")
    assert code == 0 and err == ""
    assert out == ("BLEU|nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0 = 100.00 "
                   "100.0/100.0/100.0/100.0 (BP = 1.000 ratio = 1.000 hyp_len = 62688 "
                   "ref_len = 62688)\n"
                   "chrF2|nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0 = 100.00\n")


@pytest.mark.parametrize("options,kwargs", [
    ([], {}),
    (["--tokenize=intl"], {"tokenize": "intl"}),
    (["--lowercase"], {"lowercase": True}),
    (["--tokenize=intl", "--lowercase"], {"tokenize": "intl", "lowercase": True}),
])
def test_equals_the_sacrebleu_api(reference, tmp_path, capsys, options, kwargs):
    # 600 of the 3,003 lines: each run scores chrF too, which costs twice BLEU.
    refs = reference.read_text(encoding="utf-8").split("\n")[:600]
    ref_file = write(tmp_path / "ref.txt", refs)
    shuffled = refs[:]
    random.Random(1).shuffle(shuffled)
    for hyps in (shuffled, degrade(refs)):
        hyp_file = write(tmp_path / "hyp.txt", hyps)
        expected, signature = api_bleu(hyps, refs, **kwargs)
        code, out, _ = run_main(capsys, "--translation", str(hyp_file), "--reference",
                                str(ref_file), *options)
        assert code == 0
        assert out == f"{expected.format(signature=signature)}\n{api_chrf_line(hyps, refs)}\n"
        assert out.startswith(f"BLEU|{signature} = {expected.score:.2f} ")


def test_score_only_and_library_function(reference, tmp_path, capsys):
    refs = read_lines(str(reference))
    hyps = degrade(refs)
    expected, signature = api_bleu(hyps, refs, tokenize="intl")
    score, sig = corpus_bleu(hyps, refs, tokenize="intl")
    assert score.score == expected.score and sig == signature
    code, out, _ = run_main(capsys, "--translation", str(write(tmp_path / "hyp.txt", hyps)),
                            "--reference", str(reference), "--tokenize=intl", "--score_only")
    assert code == 0 and out == f"{expected.score:.2f}\n"


def test_degraded_copy_has_a_middling_score(reference):
    refs = read_lines(str(reference))
    score, _ = corpus_bleu(degrade(refs), refs)
    assert 20 < score.score < 80  # the comparisons above are not of 0 with 0


def test_same_lines_as_the_sacrebleu_command(reference, tmp_path, capsys):
    refs = read_lines(str(reference))
    hyp_file = write(tmp_path / "hyp.txt", degrade(refs))
    code, out, err = run_main(capsys, "--translation", str(hyp_file), "--reference",
                              str(reference))
    # The reference: sacrebleu's own command, as a user types it (it right-aligns the
    # names of several metrics: "  BLEU|...", "chrF2|...").
    theirs = subprocess.run([sys.executable, "-m", "sacrebleu", str(reference), "-i",
                             str(hyp_file), "-m", "bleu", "chrf", "-f", "text", "-w", "2"],
                            capture_output=True, text=True, check=True)
    assert [line.lstrip() for line in theirs.stdout.splitlines()] == out.splitlines()
    assert code == 0 and len(out.splitlines()) == 2 and err == ""


def test_user_errors_are_one_line(tmp_path, capsys):
    good = write(tmp_path / "ref.txt", ["ein Haus", "zwei Häuser"])
    short = write(tmp_path / "short.txt", ["ein Haus"])
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("ein Haus\nzwei H\u00e4user\n".encode("latin-1"))
    cases = [
        ([f"--translation={short}", f"--reference={good}"],
         "The translation has 1 lines but the reference has 2"),
        ([f"--translation={tmp_path / 'missing.txt'}", f"--reference={good}"], "does not exist"),
        ([f"--translation={latin1}", f"--reference={good}"],
         "latin1.txt, line 2: not valid UTF-8 (byte 0xe4 at file offset 15"),
        ([f"--translation={tmp_path}", f"--reference={good}"], "Cannot read"),
        ([f"--translation={good}", f"--reference={good}", "--tokenize=intll"],
         "Did you mean 'intl'?"),
    ]
    for argv, message in cases:
        code, out, err = run_main(capsys, *argv)
        assert code == 1 and out == ""
        assert err.startswith("t2t-bleu: error: ") and message in err
        assert err.count("\n") == 1 and "Traceback" not in err


def test_corpus_bleu_rejects_mismatched_counts():
    with pytest.raises(T2TError, match="3 lines but the reference has 2"):
        corpus_bleu(["a", "b", "c"], ["a", "b"])


def test_read_lines_matches_sacrebleu_reading(tmp_path):
    path = tmp_path / "x.txt"
    path.write_bytes("a b  \r\nc\u2028d\n\nlast".encode("utf-8"))
    assert read_lines(str(path)) == ["a b", "c\u2028d", "", "last"]
    path.write_bytes(b"")
    assert read_lines(str(path)) == []


def test_help_works(capsys):
    with pytest.raises(SystemExit) as exit_info:
        t2t_bleu.main(["--help"])
    assert exit_info.value.code == 0 and "--translation" in capsys.readouterr().out


def test_moses_tokenization_is_tokenizer_perls():
    """Expected tokens written by hand from tokenizer.perl's rules (-l de -no-escape):
    punctuation split off, a comma between digits and a known abbreviation kept,
    an apostrophe split on both sides outside English, French and Italian."""
    from t2t_lite.metrics.moses import moses_tokenized

    assert moses_tokenized(['Ein Mann, der "schläft".', "Spiele im Schnee, z.B. draußen!",
                            "Ein Kind's Ball (rot) - 3,5 kg."], "de") == [
        'Ein Mann , der " schläft " .', "Spiele im Schnee , z.B. draußen !",
        "Ein Kind ' s Ball ( rot ) - 3,5 kg ."]


def test_moses_lowercased_bleu_is_sacrebleu_on_tokenized_text(tmp_path, capsys):
    """t2t-bleu --moses_lang=de --lowercase equals sacreBLEU (tok none, lowercase) on the
    same lines tokenized by hand; it differs from the detokenized, cased score."""
    hyps = ['ein Mann, der "schläft".', "Zwei Hunde (braun) laufen."]
    refs = ['Ein Mann, der "schläft" .', "Zwei Hunde laufen im Park."]
    by_hand_hyps = ['ein Mann , der " schläft " .', "Zwei Hunde ( braun ) laufen ."]
    by_hand_refs = ['Ein Mann , der " schläft " .', "Zwei Hunde laufen im Park ."]
    expected, _ = api_bleu(by_hand_hyps, by_hand_refs, tokenize="none", lowercase=True)
    hyp_file, ref_file = write(tmp_path / "h", hyps), write(tmp_path / "r", refs)
    code, out, _ = run_main(capsys, f"--translation={hyp_file}", f"--reference={ref_file}",
                            "--moses_lang=de", "--lowercase")
    assert code == 0
    assert out.startswith("BLEU|nrefs:1|case:lc|eff:no|tok:none|smooth:exp|version:")
    assert "|moses:de = " in out
    assert float(out.split(" = ")[1].split()[0]) == pytest.approx(round(expected.score, 2))
    cased, _ = api_bleu(hyps, refs)
    assert abs(cased.score - expected.score) > 1.0
    code, _, err = run_main(capsys, f"--translation={hyp_file}", f"--reference={ref_file}",
                            "--moses_lang=de", "--tokenize=intl")
    assert code == 1 and err.count("\n") == 1 and "--moses_lang" in err
