"""t2t-tune-decoder: decode options chosen on a dev set (t2t_lite.decode.tuning)."""

import json

import pytest
import sacrebleu

from t2t_lite import registry
from t2t_lite.bin import t2t_decoder, t2t_tune_decoder
from t2t_lite.data.layout import EOS_ID
from t2t_lite.decode import tuning
from t2t_lite.errors import T2TError

from model_dirs import make_model_dir, number_sentences, whole_words_only

FIXED = "extra_length=6,batch_size=4"
GRID = "beam_size=2,3;alpha=0.0,5.0"
COMBINATIONS = [("2", "0.0"), ("2", "5.0"), ("3", "0.0"), ("3", "5.0")]  # grid order


def words_and_some_eos(model, vocab_file):
    """`whole_words_only`, and the (tied) EOS embedding scaled so that the random
    model ends some hypotheses early and others not: alpha then changes outputs."""
    whole_words_only(model, vocab_file)
    table = model.target_embedding.weights_matrix
    value = table.numpy()
    value[EOS_ID] *= 7.75
    table.assign(value)


@pytest.fixture(scope="module")
def dev(tmp_path_factory):
    """(model dir, dev source path, dev reference path, t2t-decoder's output per
    combination). The reference is t2t-decoder's output at beam 3, alpha 5.0."""
    base = tmp_path_factory.mktemp("tune")
    model = make_model_dir(str(base / "model"), steps=(0,), adjust=words_and_some_eos)
    source = base / "val.en"
    source.write_text("".join(line + "\n" for line in number_sentences(40)[5:13]),
                      encoding="utf-8")
    outputs = {}
    for beam, alpha in COMBINATIONS:
        out = base / f"out_{beam}_{alpha}"
        args = t2t_decoder.parse_args([
            f"--output_dir={model}", f"--decode_from_file={source}", f"--decode_to_file={out}",
            f"--decode_hparams={FIXED},beam_size={beam},alpha={alpha}"])
        assert t2t_decoder.run(args) == 0
        outputs[beam, alpha] = out.read_text(encoding="utf-8").split("\n")[:-1]
    reference = base / "val.de"
    reference.write_text("".join(line + "\n" for line in outputs["3", "5.0"]), encoding="utf-8")
    return model, source, reference, outputs


def test_every_combination_scores_as_t2t_decoder_and_sacrebleu(dev, tmp_path, capsys,
                                                               monkeypatch):
    model, source, reference, outputs = dev
    for beam in ("2", "3"):  # the length penalty matters for this model
        assert outputs[beam, "0.0"] != outputs[beam, "5.0"]
    references = reference.read_text(encoding="utf-8").split("\n")[:-1]
    expected = [sacrebleu.metrics.BLEU().corpus_score(outputs[c], [references]).score
                for c in COMBINATIONS]
    searches, build = [], tuning.search_for_problem

    def counted(*args, **kwargs):
        searches.append(build(*args, **kwargs))
        return searches[-1]

    monkeypatch.setattr(tuning, "search_for_problem", counted)
    report = tmp_path / "tune.json"
    assert t2t_tune_decoder.main([
        f"--output_dir={model}", f"--decode_from_file={source}", f"--decode_reference={reference}",
        f"--decode_hparams={FIXED}", f"--grid={GRID}", f"--report={report}"]) == 0
    written = json.loads(report.read_text(encoding="utf-8"))
    assert [r["options"] for r in written["results"]] == [
        {"beam_size": beam, "alpha": alpha} for beam, alpha in COMBINATIONS]
    assert [r["score"] for r in written["results"]] == pytest.approx(expected, abs=1e-9)
    assert written["metric"] == "BLEU"
    best = max(range(4), key=lambda i: (expected[i], -i))  # the first of equal maxima
    beam, alpha = COMBINATIONS[best]
    best_line = f"--decode_hparams={FIXED},beam_size={beam},alpha={alpha}"
    assert written["best"] == {"decode_hparams": best_line.split("=", 1)[1],
                               "score": pytest.approx(expected[best], abs=1e-9)}
    out = capsys.readouterr().out
    assert out.rstrip("\n").endswith(f"best: {best_line}")
    for (beam, alpha), score in zip(COMBINATIONS, expected):  # one line each, as scored
        assert f"beam_size={beam},alpha={alpha}  BLEU {score:.2f}  " in out
    # One search per beam size, each traced once: alpha is read at run time.
    assert [s.params.beam_size for s in searches] == [2, 3]
    assert [s.compiled.experimental_get_tracing_count() for s in searches] == [1, 1]


def test_ties_go_to_the_first_in_grid_order():
    results = [tuning.Result((("alpha", a),), "BLEU", s, 1.0)
               for a, s in [("0.0", 20.0), ("0.2", 31.5), ("0.4", 31.5), ("0.6", 12.0)]]
    assert [r.decode_hparams for r in tuning.ranked(results)] == [
        "alpha=0.2", "alpha=0.4", "alpha=0.0", "alpha=0.6"]


def test_grid_combinations_in_grid_order():
    assert tuning.parse_grid(" beam_size=4,5 ; alpha=0.0,0.6,1.2;", "batch_size=64") == [
        (("beam_size", "4"), ("alpha", "0.0")), (("beam_size", "4"), ("alpha", "0.6")),
        (("beam_size", "4"), ("alpha", "1.2")), (("beam_size", "5"), ("alpha", "0.0")),
        (("beam_size", "5"), ("alpha", "0.6")), (("beam_size", "5"), ("alpha", "1.2"))]


@pytest.mark.parametrize("grid, fixed, message", [
    ("beam_size=", "", "Grid key 'beam_size' has no values"),
    ("beam_size=4,,5", "", "Grid key 'beam_size' has an empty value in 'beam_size=4,,5'"),
    ("foo=1", "", "Unknown decode hparam 'foo'"),
    ("beam_size", "", "Malformed grid item 'beam_size': expected key=value1,value2,..."),
    ("beam_size=4,five", "", "decode hparam 'beam_size' expects int, got 'five'"),
    ("alpha=0.6,high", "", "decode hparam 'alpha' expects float, got 'high'"),
    ("", "", "The grid is empty"),
    (" ; ", "", "The grid is empty"),
    ("alpha=0.6;alpha=1.0", "", "Grid key 'alpha' is given twice"),
    ("beam_size=4,5", "batch_size=8,beam_size=4",
     "'beam_size' is both in --grid and in --decode_hparams"),
    ("alpha=0.6,1.0", "return_beams=true", "return_beams write more than the translation"),
])
def test_bad_grids_are_one_line_errors(grid, fixed, message):
    with pytest.raises(T2TError) as raised:
        tuning.parse_grid(grid, fixed)
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


@pytest.mark.parametrize("flags, message", [
    (["--decode_reference={ref}"], "--decode_from_file needed"),
    (["--decode_from_file={src}"], "--decode_reference needed"),
    ([], "--decode_from_file and --decode_reference needed"),
    (["--decode_from_file={src}", "--decode_reference={short}"],
     "{src} has 8 lines but {short} has 7"),
    (["--decode_from_file={src}", "--decode_reference={ref}", "--grid=beam_size="],
     "Grid key 'beam_size' has no values"),
])
def test_program_errors_are_one_line(dev, tmp_path, capfd, flags, message):
    model, source, reference, _ = dev
    short = tmp_path / "short.de"
    short.write_text("".join(reference.read_text(encoding="utf-8").splitlines(True)[:7]),
                     encoding="utf-8")
    names = {"src": source, "ref": reference, "short": short}
    flags = [flag.format(**names) for flag in flags]
    grid = [] if any(f.startswith("--grid") for f in flags) else ["--grid=alpha=0.6"]
    assert t2t_tune_decoder.main([f"--output_dir={model}", *flags, *grid]) == 1
    err = capfd.readouterr().err
    assert err.startswith(f"t2t-tune-decoder: error: {message.format(**names)}"), err
    assert len(err.strip().splitlines()) == 1, err


def test_parsing_is_tuned_on_evalb_f1(tmp_path):
    # COLLINS.prm deletes the '.' and ignores preterminals: gold brackets S(0,3),
    # NP(0,2), VP(2,3); the test tree's S(0,3), NP(0,3): 1 of 2 right, 1 of 3 found,
    # F1 = 2 * (1/2 * 1/3) / (1/2 + 1/3) = 40.
    gold = tmp_path / "gold.trees"
    gold.write_text("(S (NP (DT The) (NN cat)) (VP (VBZ sleeps)) (. .))\n", encoding="utf-8")
    problem = registry.problem("parsing_wsj")
    assert problem.report_score(["(S (NP (DT The) (NN cat) (VBZ sleeps)) (. .))"],
                                str(gold)) == ("F1", pytest.approx(40.0))


def test_help_says_how_ties_are_broken(capsys):
    with pytest.raises(SystemExit) as exited:
        t2t_tune_decoder.main(["--help"])
    assert exited.value.code == 0
    assert "a tie: the first in grid order wins" in " ".join(capsys.readouterr().out.split())
