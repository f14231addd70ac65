"""--engine=ctranslate2 (t2t-decoder and t2t-server) against CTranslate2's own Python API
on the cached conversion, and against t2t-decoder's TF search where the CTranslate2
export documents that they agree (greedy search, line for line).

The expected values are computed here with `ctranslate2.Translator.translate_batch`
and SentencePiece, with the `translate_batch` arguments the README's mapping table
gives for the decode flags, written out by hand.
"""

import io
import os
import sys

import pytest

ctranslate2 = pytest.importorskip("ctranslate2", reason="the ctranslate2 extra is not installed")
import sentencepiece  # noqa: E402

from serving import (MODEL_NAME, RunningServer, decoder_lines, http,  # noqa: E402
                     engine, model_path)  # noqa: F401 (fixtures used by name)
from model_dirs import number_sentences  # noqa: E402
from t2t_lite.bin import t2t_decoder, t2t_server  # noqa: E402
from t2t_lite.decode.search import SearchParams  # noqa: E402
from t2t_lite.model_dir import ModelDir  # noqa: E402
from t2t_lite.registry import hparams as registered_hparams  # noqa: E402
from t2t_lite.serve.config import ServerConfig  # noqa: E402
from t2t_lite.serve.ctranslate2_engine import CT2Engine, mapped_options  # noqa: E402
from t2t_lite.serve.engine import TFEngine  # noqa: E402

# fairseq's penalty is CTranslate2's; extra_length beyond max_length (256): one
# max_decoding_length for all lines, so the direct call below needs no grouping.
DECODE = "beam_size=2,alpha=0.6,length_penalty=fairseq,extra_length=300"
WRITE = ",return_beams=true,write_beam_scores=true"
OPTIONS = dict(beam_size=2, length_penalty=0.6, min_decoding_length=0, max_input_length=256,
               max_decoding_length=256, num_hypotheses=2, return_scores=True)
LINES = number_sentences(16)[1:] + ["", "  ", "zwölf Äpfel"]
STOP_RULE = ("stop_rule=t2t -> CTranslate2's rule (stop at beam_size finished hypotheses, as "
             "stop_rule=beam_full)")
BEAM = ("beam_size={} -> CTranslate2's beam search (EOS only among the beam_size best "
        "candidates of a step, t2t-lite's among 2 x beam_size; a hypothesis cut at the "
        "maximum length counts as finished)")


@pytest.fixture(scope="module")
def ct2_engine(model_path) -> CT2Engine:
    return CT2Engine.load(ModelDir.open(model_path), DECODE + WRITE, workers=2)


def direct(path: str, lines, **options):
    """(hypotheses, scores) of each line by CTranslate2 itself; None for blank lines."""
    sp = sentencepiece.SentencePieceProcessor(model_file=os.path.join(path, "sentencepiece.model"))
    translator = ctranslate2.Translator(path, device="cpu")
    todo = [line for line in lines if line.strip()]
    results = iter(translator.translate_batch(sp.encode(todo, out_type=str), **options))
    out = []
    for line in lines:
        result = next(results) if line.strip() else None
        out.append(result and ([sp.decode(h) for h in result.hypotheses], result.scores))
    return out


def written(hypotheses, scores) -> str:
    """t2t-decoder's line with return_beams and write_beam_scores."""
    clean = [h.replace("\r\n", " ").replace("\n", " ").replace("\r", " ").replace("\t", " ")
             for h in hypotheses]
    return "\t".join(f"{h}\t{s:.4f}" for h, s in zip(clean, scores))


@pytest.fixture(scope="module")
def expected(ct2_engine):
    """t2t-decoder's line of each of LINES, from CTranslate2's own results."""
    results = direct(ct2_engine.path, LINES, **OPTIONS)
    lines = ["" if r is None else written(*r) for r in results]
    assert len(set(lines)) > 10  # the model tells the inputs apart: a real check
    return lines


def test_translations_are_ctranslate2s(ct2_engine, expected):
    results = ct2_engine.translate(LINES)
    by_hand = direct(ct2_engine.path, LINES, **OPTIONS)
    assert [r.line for r in results] == expected
    for result, hand in zip(results, by_hand):
        if hand is None:
            assert (result.hypotheses, result.scores) == (["", ""], [0.0, 0.0])
        else:
            assert (result.hypotheses, result.scores) == (hand[0], pytest.approx(hand[1], abs=0))
    assert ct2_engine.version == 3
    assert ct2_engine.token_lengths(["", "one"]) == [1, 1 + len(direct_pieces(ct2_engine, "one"))]


def direct_pieces(engine, text):
    sp = sentencepiece.SentencePieceProcessor(
        model_file=os.path.join(engine.path, "sentencepiece.model"))
    return sp.encode(text, out_type=str)


def test_extra_length_caps_each_output_at_its_source_length(model_path, ct2_engine):
    """CTranslate2 takes one max_decoding_length per call: the lines of each cap (source
    pieces + EOS + extra_length) are translated together, as one batch."""
    capped = CT2Engine.load(ModelDir.open(model_path),
                            "beam_size=2,alpha=0.6,length_penalty=fairseq,extra_length=2")
    lines = LINES[:8]
    by_cap = {}
    for line in lines:
        by_cap.setdefault(len(direct_pieces(ct2_engine, line)) + 1 + 2, []).append(line)
    assert len(by_cap) > 1 and max(map(len, by_cap.values())) > 1  # several calls, batches
    by_hand = {}
    for cap, group in by_cap.items():
        by_hand.update(zip(group, direct(ct2_engine.path, group,
                                         **dict(OPTIONS, max_decoding_length=cap))))
    results = capped.translate(lines)
    assert [(r.hypotheses, r.scores) for r in results] == [by_hand[line] for line in lines]
    uncapped = direct(ct2_engine.path, lines, **OPTIONS)
    assert all(len(u[0][0]) > len(r.best) for u, r in zip(uncapped, results))  # cut short


def test_greedy_agrees_with_t2t_decoder(model_path):
    decode = "beam_size=1,extra_length=12"
    tf_lines = decoder_lines(TFEngine.load(ModelDir.open(model_path), decode), LINES)
    ct2_engine = CT2Engine.load(ModelDir.open(model_path), decode)
    assert [r.line for r in ct2_engine.translate(LINES)] == tf_lines


def test_decoder_program(model_path, ct2_engine, expected, tmp_path, capfd, monkeypatch):
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    argv = [f"--output_dir={model_path}", "--engine=ctranslate2", f"--decode_hparams={DECODE}"
            + WRITE]
    assert t2t_decoder.main(argv + [f"--decode_from_file={source}",
                                    f"--decode_to_file={target}"]) == 0
    assert target.read_text(encoding="utf-8").split("\n") == expected + [""]
    notes = [line for line in capfd.readouterr().err.splitlines() if "note" in line]
    assert notes == [f"t2t-decoder: note: CTranslate2 model {ct2_engine.path}; "
                     f"{STOP_RULE}; {BEAM.format(2)}"]

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(source.read_bytes())))
    assert t2t_decoder.main(argv) == 0
    assert capfd.readouterr().out.split("\n") == expected + [""]


def test_decoder_int8(model_path, tmp_path, capfd):
    source, target = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("\n".join(LINES[:5]) + "\n", encoding="utf-8")
    assert t2t_decoder.main([f"--output_dir={model_path}", "--engine=ctranslate2",
                             "--quantization=int8", f"--decode_hparams={DECODE}{WRITE}",
                             f"--decode_from_file={source}", f"--decode_to_file={target}"]) == 0
    path = capfd.readouterr().err.split("CTranslate2 model ")[1].split(";")[0]
    assert "-int8-" in os.path.basename(path)
    by_hand = [written(*r) for r in direct(path, LINES[:5], **OPTIONS)]
    assert target.read_text(encoding="utf-8").splitlines() == by_hand


def test_server_translates_with_ctranslate2(ct2_engine, expected):
    # One batch for the request, as in the direct call: this random model's beams are
    # near ties that the rounding of another batch shape can reorder.
    config = ServerConfig(model_name=MODEL_NAME, max_batch_sentences=32,
                          max_batch_tokens=100_000, batch_timeout_ms=20, batch_workers=2)
    server = RunningServer(ct2_engine, config).start()
    try:
        status, _, body = http(server.url + "/v1/translate", {"inputs": LINES, "nbest": True})
    finally:
        server.stop()
    assert status == 200 and body["outputs"] == expected
    by_hand = direct(ct2_engine.path, LINES, **OPTIONS)
    for beams, hand in zip(body["nbest"], by_hand):
        if hand is not None:
            assert [b["output"] for b in beams] == hand[0]
            assert [b["score"] for b in beams] == pytest.approx(hand[1], abs=1e-6)
    assert body["model"] == {"name": MODEL_NAME, "version": 3}


def test_mapped_options_are_named():
    hp = registered_hparams("transformer_tiny")
    gnmt = ("alpha=0.6 with length_penalty=gnmt -> length_penalty=0.6 (score / length ** "
            "alpha: CTranslate2 has no gnmt penalty; length_penalty=fairseq is exact)")
    assert mapped_options(SearchParams(), hp) == [gnmt, STOP_RULE, BEAM.format(4)]
    assert mapped_options(SearchParams(beam_size=1, stop_rule="beam_full",
                                       length_penalty="fairseq"), hp) == []
    assert mapped_options(SearchParams(beam_size=3, stop_rule="beam_full",
                                       length_penalty="fairseq"), hp) == [BEAM.format(3)]
    for rule in ("t2t", "beam_full"):  # at alpha=0 CTranslate2 exits once its best beam ends
        assert mapped_options(SearchParams(beam_size=3, stop_rule=rule, alpha=0), hp) == [
            f"stop_rule={rule} -> CTranslate2's rule at alpha=0 (stop once its best beam has "
            "finished)", BEAM.format(3)]
    marian = SearchParams(beam_size=3, stop_rule="transformers", length_penalty="fairseq",
                          forbid_pad=True, forced_eos=True, renormalize=True,
                          max_output_length=511)
    not_applied = "-> not applied (transformers' rule; CTranslate2's search and limits decide)"
    assert mapped_options(marian, hp) == [
        STOP_RULE.replace("stop_rule=t2t", "stop_rule=transformers"), BEAM.format(3),
        f"forbid_pad=True {not_applied}", f"forced_eos=True {not_applied}",
        f"renormalize=True {not_applied}", f"max_output_length=511 {not_applied}"]
    assert mapped_options(SearchParams(sampling_temperature=0.7, sampling_seed=5, alpha=0,
                                       max_input_length=-1), hp) == [
        "max_input_length=-1 (no limit) -> max_input_length=1024 (the longest input "
        "CTranslate2 can encode)",
        "sampling_seed=5 -> CTranslate2's random generator seeded with it (not "
        "t2t-decoder's samples)"]


@pytest.mark.parametrize("flags, message", [
    (["--decode_hparams=alignments=true"], "alignments=true needs the TF engine"),
    (["--score_file=PAIRS"], "--engine=ctranslate2 cannot run --score_file; drop them"),
    (["--jit_compile", "--precision=bfloat16"],
     "cannot run --jit_compile, --precision=bfloat16 (use --quantization)"),
    (["--output_dir=MODEL,MODEL"], "cannot run ensembles (several --output_dir)"),
    (["--quantization=int4"], "Unknown --quantization 'int4'"),
])
def test_decoder_refusals_are_one_line(model_path, tmp_path, capfd, flags, message):
    source = tmp_path / "in.txt"
    source.write_text("one\n", encoding="utf-8")
    argv = [f"--output_dir={model_path}", "--engine=ctranslate2", f"--decode_from_file={source}"]
    argv += [f.replace("MODEL", model_path).replace("PAIRS", str(source)) for f in flags]
    assert t2t_decoder.main(argv) == 1
    err = capfd.readouterr().err.strip()
    assert err.startswith("t2t-decoder: error: ") and message in err, err
    assert len(err.splitlines()) == 1


def test_flag_conflicts_are_usage_errors(model_path, capfd):
    with pytest.raises(SystemExit) as exit_:
        t2t_decoder.parse_args([f"--output_dir={model_path}", "--quantization=int8"])
    assert exit_.value.code == 2
    with pytest.raises(SystemExit):
        t2t_server.parse_args([f"--output_dir={model_path}", "--engine=ctranslate2",
                               "--precision=bfloat16"])
    err = capfd.readouterr().err
    assert "--quantization applies to --engine=ctranslate2 only" in err
    assert "--engine=ctranslate2 cannot run --precision=bfloat16; use --quantization" in err
