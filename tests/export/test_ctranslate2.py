"""t2t-exporter --format=ctranslate2: the converted model computes what t2t-lite computes.

Three kinds of evidence:
  - teacher-forced log probabilities of CTranslate2's `score_batch` equal
    t2t-lite's (log-softmax of the Keras model's logits) for every target
    token, on random models of every supported shape (post- and pre-norm, tied
    and untied embeddings, learned positions, d_k != d_model / h), and a
    converter that maps one weight wrongly fails that check;
  - a trained model (the default numbers problem: the suite's shared
    `numbers_model` and its `ctranslate2_export`, conftest.py) translates
    the test set line for line as t2t-decoder does, greedy and beam 4,
    through the export's user path (Python sentencepiece + `translate_batch`
    with the recorded arguments), and its int8 version stays within 0.5 BLEU
    of float32.
t2t-server's answers against t2t-decoder's lines: tests/serve/test_answers_match_decoder.py.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

ctranslate2 = pytest.importorskip(
    "ctranslate2", reason="the ctranslate2 extra is not installed (pip install -e '.[ctranslate2]')")

from t2t_lite import registry  # noqa: E402
from t2t_lite.bin import t2t_exporter  # noqa: E402
from t2t_lite.decode.decoding import DecodeOptions, decode_lines  # noqa: E402
from t2t_lite.decode.search import Search, SearchParams  # noqa: E402
from t2t_lite.decode.translator import Translator  # noqa: E402
from t2t_lite.errors import T2TError  # noqa: E402
from t2t_lite.export import ctranslate2_export, ctranslate2_spec  # noqa: E402
from t2t_lite.export.ctranslate2_client import CT2Translator, recorded_options  # noqa: E402
from t2t_lite.metrics.bleu import corpus_bleu  # noqa: E402
from t2t_lite.model_dir import ModelDir  # noqa: E402

from conftest import CTRANSLATE2_DECODE  # noqa: E402
from model_dirs import load_model, make_model_dir, number_sentences  # noqa: E402

SHAPES = {
    "post-norm, tied": "hidden_size=32,filter_size=64",
    "pre-norm": "hidden_size=32,filter_size=64,layer_preprocess_sequence=n,"
                "layer_postprocess_sequence=da",
    "untied, learned positions, 2 heads": "hidden_size=32,filter_size=64,pos=emb,num_heads=2,"
                                          "shared_embedding=false,"
                                          "shared_embedding_and_softmax_weights=false",
    "d_k = d_v = 4 < d_model / h": "hidden_size=32,filter_size=64,attention_key_channels=16,"
                                   "attention_value_channels=16",
}


def max_log_prob_difference(model_dir: str, export_path: str, count: int = 24) -> float:
    """Largest |log p_t2t-lite - log p_CTranslate2| over every target token of
    `count` sentence pairs (sources and targets: number words, targets reversed)."""
    model, vocab = load_model(model_dir)
    texts = number_sentences(count + 1)[1:]
    sources, targets = vocab.encode_texts(texts), vocab.encode_texts(texts[::-1])
    logits = model({"inputs": tf.ragged.constant(sources).to_tensor(),
                    "targets": tf.ragged.constant(targets).to_tensor()})
    expected = tf.nn.log_softmax(logits).numpy()  # [B, T, V]
    translator = ctranslate2.Translator(export_path, device="cpu", compute_type="float32")
    results = translator.score_batch([vocab.pieces(ids[:-1]) for ids in sources],
                                     [vocab.pieces(ids[:-1]) for ids in targets])
    worst = 0.0
    for row, (ids, result) in enumerate(zip(targets, results)):
        assert len(result.log_probs) == len(ids)  # every piece and the EOS
        reference = expected[row, np.arange(len(ids)), ids]
        worst = max(worst, float(np.max(np.abs(reference - np.array(result.log_probs)))))
    return worst


@pytest.mark.parametrize("overrides", list(SHAPES.values()), ids=list(SHAPES))
def test_teacher_forced_log_probs_equal_t2t_lite(tmp_path, overrides):
    model_dir = make_model_dir(str(tmp_path / "model"), steps=(0,), hparams_overrides=overrides)
    path = ctranslate2_export.export_ctranslate2(ModelDir.open(model_dir), str(tmp_path / "ct2"))
    assert max_log_prob_difference(model_dir, path) < 1e-4


def test_a_wrongly_mapped_weight_is_caught(tmp_path, monkeypatch):
    model_dir = make_model_dir(str(tmp_path / "model"), steps=(0,),
                               hparams_overrides=SHAPES["post-norm, tied"])
    right = ctranslate2_export.export_ctranslate2(ModelDir.open(model_dir), str(tmp_path / "ct2"))
    assert max_log_prob_difference(model_dir, right) < 1e-4

    # The converter handed the decoder's two layers in the wrong order.
    model, vocab = load_model(model_dir)

    class SwappedDecoderLayers:
        def __getattr__(self, name):
            return getattr(model, name)

        decoder_layers = [model.decoder_1, model.decoder_0]

    spec = ctranslate2_spec.transformer_spec(SwappedDecoderLayers(), vocab.pieces())
    spec.optimize(quantization="float32")
    swapped = str(tmp_path / "swapped")
    os.makedirs(swapped)
    spec.save(swapped)
    assert max_log_prob_difference(model_dir, swapped) > 1e-2

    # PAD's embedding row kept: the start symbol no longer embeds to zeros.
    monkeypatch.setattr(ctranslate2_spec, "_embedding_without_pad", lambda matrix: matrix)
    unpadded = ctranslate2_export.export_ctranslate2(ModelDir.open(model_dir),
                                                     str(tmp_path / "ct2"))
    assert max_log_prob_difference(model_dir, unpadded) > 1e-2
    assert [os.path.basename(p) for p in (right, unpadded)] == ["1", "2"]


def test_position_table_interleaves_sines_and_cosines():
    """PE(p, 2i) = sin(p / 10000^(2i/d)), PE(p, 2i+1) = cos(...), typed from the paper."""
    hp = registry.hparams("transformer_tiny").parse("hidden_size=8")

    class Model:
        hparams = hp

    table = ctranslate2_spec.position_table(Model(), 5)
    assert table.shape == (5, 8) and table.dtype == np.float32
    for p in range(5):
        for i in range(4):
            angle = p / 10000 ** (2 * i / 8)
            assert table[p, 2 * i] == pytest.approx(np.sin(angle), abs=1e-6)
            assert table[p, 2 * i + 1] == pytest.approx(np.cos(angle), abs=1e-6)


def test_models_and_problems_it_cannot_represent_are_refused(tmp_path, monkeypatch):
    model_dir = make_model_dir(str(tmp_path / "model"), steps=(0,),
                               hparams_overrides="hidden_size=32,filter_size=64,"
                                                 "attention_key_channels=16")
    with pytest.raises(T2TError, match="CTranslate2 needs d_k = d_v"):
        ctranslate2_export.export_ctranslate2(ModelDir.open(model_dir), str(tmp_path / "ct2"))
    with pytest.raises(T2TError, match="Unknown --quantization 'int4'; choose from float32, int8"):
        ctranslate2_export.export_ctranslate2(ModelDir.open(model_dir), str(tmp_path / "ct2"),
                                              quantization="int4")

    class Constrained:
        name = "parsing_like"

        def search_constraint(self, vocab):
            return object()

    with pytest.raises(T2TError, match="parsing_like constrains its search"):
        ctranslate2_export.check_problem(Constrained(), SearchParams(), None)
    ctranslate2_export.check_problem(Constrained(), SearchParams(tree_constraint=False), None)
    monkeypatch.setitem(__import__("sys").modules, "ctranslate2", None)  # as if not installed
    with pytest.raises(T2TError, match=r"needs the ctranslate2 package.*\.\[ctranslate2\]"):
        ctranslate2_export.export_ctranslate2(ModelDir.open(model_dir), str(tmp_path / "ct2"))
    assert not os.path.exists(tmp_path / "ct2")  # nothing written by any refusal


def test_quantization_only_with_the_ctranslate2_format(capsys):
    with pytest.raises(SystemExit) as exit_info:
        t2t_exporter.main(["--output_dir=m", "--export_dir=e", "--quantization=int8"])
    assert exit_info.value.code == 2
    assert "--quantization applies to --format=ctranslate2 only" in capsys.readouterr().err


def test_t2t_decoder_max_length_rule(tmp_path):
    """A random model that rarely stops: outputs end at input length + extra_length
    in t2t-decoder, and in CT2Translator with `extra_length` (sources grouped by
    length); without it CTranslate2 runs to its one max_decoding_length."""
    model_dir = make_model_dir(str(tmp_path / "model"), steps=(0,),
                               hparams_overrides=SHAPES["post-norm, tied"])
    path = ctranslate2_export.export_ctranslate2(ModelDir.open(model_dir), str(tmp_path / "ct2"))
    lines = number_sentences(13)[1:]
    params = SearchParams(beam_size=1, extra_length=3)
    model, vocab = load_model(model_dir)
    expected = decode_lines(Translator(Search(model, params), vocab), lines)
    client = CT2Translator(path, compute_type="float32", beam_size=1)
    assert client.translate(lines, extra_length=3) == expected
    source_lengths = [len(ids) for ids in vocab.encode_texts(lines)]  # EOS included
    cut = [len(h) for h in client.translate_pieces(client.tokenize(lines), extra_length=3)]
    assert all(n <= s + 3 for n, s in zip(cut, source_lengths))
    assert sum(n == s + 3 for n, s in zip(cut, source_lengths)) >= 6  # most hit the cap
    uncapped = client.translate_pieces(client.tokenize(lines))
    assert max(len(h) for h in uncapped) > max(s + 3 for s in source_lengths)

    # max_input_length=4: both keep the first 3 pieces and EOS, and both cap the output
    # at the truncated length (4) + extra_length, not at the full source's.
    assert max(source_lengths) > 4
    params = SearchParams(beam_size=1, extra_length=3, max_input_length=4)
    expected = decode_lines(Translator(Search(model, params), vocab), lines)
    client = CT2Translator(path, compute_type="float32", beam_size=1, max_input_length=4)
    assert client.translate(lines, extra_length=3) == expected
    assert max(len(h) for h in client.translate_pieces(client.tokenize(lines), 32, 3)) == 7

    # Sampling maps to CTranslate2's sampling arguments; with top_k=1 both are greedy.
    params = SearchParams(sampling_temperature=0.7, top_k=1, extra_length=3)
    options = ctranslate2_export.translate_options(params, ModelDir.open(model_dir).hparams)
    assert (options["beam_size"], options["sampling_temperature"], options["sampling_topk"]) == (
        1, 0.7, 1)
    greedy = decode_lines(Translator(Search(model, SearchParams(beam_size=1, extra_length=3)),
                                     vocab), lines)
    sampled = CT2Translator(path, compute_type="float32", **options).translate(lines, extra_length=3)
    assert sampled == greedy == decode_lines(Translator(Search(model, params), vocab), lines)


class CountingTranslator:
    """A CTranslate2 translator that records each `translate_batch` call's
    (sources, max_decoding_length)."""

    def __init__(self, translator):
        self.translator, self.calls = translator, []

    def translate_batch(self, sources, **options):
        self.calls.append((len(sources), options["max_decoding_length"]))
        return self.translator.translate_batch(sources, **options)


def per_cap_results(client, pieces, extra_length, **options):
    """The reference rule: each source translated with the sources of its own cap
    (source length + EOS + extra_length), one `translate_batch` call per cap."""
    results = {}
    lengths = [len(p) + 1 for p in pieces]
    for cap in sorted(set(lengths)):
        rows = [i for i, n in enumerate(lengths) if n == cap]
        out = client.translator.translate_batch(
            [pieces[i] for i in rows], max_batch_size=64,
            **dict(client.options, max_decoding_length=cap + extra_length, **options))
        results.update(zip(rows, out))
    return [results[i] for i in range(len(pieces))]


@pytest.mark.parametrize("beam_size", [1, 2])
def test_extra_length_sources_that_meet_their_cap_are_translated_again(tmp_path, beam_size):
    """extra_length=12 on a random model that rarely stops: the joint call under the
    largest cap is made, every source meets its own cap there, so each is translated
    again with the sources of its cap (those of the largest cap keep the joint call's
    result); the outputs are t2t-decoder's."""
    model_dir = make_model_dir(str(tmp_path / "model"), steps=(0,),
                               hparams_overrides=SHAPES["post-norm, tied"])
    path = ctranslate2_export.export_ctranslate2(ModelDir.open(model_dir), str(tmp_path / "ct2"))
    lines = number_sentences(13)[1:]
    model, vocab = load_model(model_dir)
    params = SearchParams(beam_size=beam_size, extra_length=12, alpha=0.0)
    expected = decode_lines(Translator(Search(model, params), vocab), lines)
    client = CT2Translator(path, compute_type="float32", beam_size=beam_size)
    counting = client.translator = CountingTranslator(client.translator)
    assert client.translate(lines, extra_length=12) == expected
    caps = sorted({len(ids) + 12 for ids in vocab.encode_texts(lines)})  # EOS included
    assert len(caps) >= 3
    assert counting.calls[0] == (len(lines), caps[-1])  # the joint call first,
    # then one per smaller cap (the joint call was the largest cap's own)
    assert sorted(cap for _, cap in counting.calls[1:]) == caps[:-1]


def test_sources_that_stop_early_are_translated_in_one_call(trained):
    """A trained model stops long before source length + 50: the sources of all
    lengths go in one `translate_batch` call, and each result is the one of the
    call per cap (the reference rule), hypotheses and scores."""
    _, path, sources, _ = trained
    client = CT2Translator(path, compute_type="float32")
    pieces = client.tokenize(sources[:120])
    assert len({len(p) for p in pieces}) >= 5
    expected = per_cap_results(client, pieces, 50, num_hypotheses=4, return_scores=True)
    counting = client.translator = CountingTranslator(client.translator)
    got = client.translate_results(pieces, 64, 50, num_hypotheses=4, return_scores=True)
    assert counting.calls == [(120, max(len(p) for p in pieces) + 1 + 50)]
    assert [r.hypotheses for r in got] == [r.hypotheses for r in expected]
    assert [x for r in got for x in r.scores] == pytest.approx(
        [x for r in expected for x in r.scores], abs=1e-4)


def test_exporter_says_when_ctranslate2_cannot_run_the_length_penalty(tmp_path, capfd):
    """tensor2tensor's gnmt penalty (the numbers problem's default) has no CTranslate2
    form: the export substitutes length ** alpha and says so in one line on stderr."""
    model_dir = make_model_dir(str(tmp_path / "model"), hparams_overrides=SHAPES["post-norm, tied"])
    argv = ["--format=ctranslate2", f"--output_dir={model_dir}", f"--export_dir={tmp_path}/ct2"]
    assert t2t_exporter.main(argv) == 0
    out, err = capfd.readouterr()
    notes = [line for line in err.splitlines() if line.startswith("t2t-exporter: note: ")]
    assert len(notes) == 1, err
    assert "length_penalty=0.6" in notes[0] and "length_penalty=fairseq" in notes[0]
    assert out.strip().endswith("ct2/1")
    assert t2t_exporter.main(argv + ["--decode_hparams=length_penalty=fairseq"]) == 0
    assert "note" not in capfd.readouterr().err


# -- A trained model, t2t-decoder against the export's user path -------------------

DECODE = CTRANSLATE2_DECODE


@pytest.fixture(scope="module")
def trained(numbers_model, ctranslate2_export):
    """(model dir, CTranslate2 export of it, test sources, test references): the shared
    model trained by the README's command (about 99 character BLEU on the test numbers,
    a model whose int8 comparison means something) and its conversion."""
    pairs = list(registry.problem("translate_ende_numbers").raw_pairs("test", None))[:400]
    return (numbers_model.path, ctranslate2_export, [s for s, _ in pairs],
            [t for _, t in pairs])


def t2t_decoder_outputs(model_dir, lines, params):
    """t2t-decoder's (best translation, its score) for each line (score None when blank)."""
    model, vocab = load_model(model_dir)
    options = DecodeOptions(batch_size=64, write_beam_scores=True)
    rows = [row.rsplit("\t", 1) for row in decode_lines(Translator(Search(model, params), vocab),
                                                         lines, options)]
    return [(row[0], float(row[1])) if len(row) == 2 else (row[0], None) for row in rows]


def ctranslate2_outputs(path, lines, options):
    """The export's (best translation, its score) for each line, through the user path."""
    client = CT2Translator(path, compute_type="float32", **options)
    results = client.translator.translate_batch(client.tokenize(lines), return_scores=True,
                                                max_batch_size=64, **client.options)
    return [(client.tokenizer.decode(r.hypotheses[0]), r.scores[0]) for r in results]


def test_export_directory_holds_what_a_user_needs(trained):
    _, path, _, _ = trained
    assert sorted(os.listdir(path)) == ["config.json", "model.bin", "sentencepiece.model",
                                        "shared_vocabulary.json", "t2t_lite"]
    assert sorted(os.listdir(os.path.join(path, "t2t_lite"))) == [
        "export.json", "hparams.json", "problem.json"]
    assert [n for n in os.listdir(os.path.dirname(path)) if n != "1"] == []  # no temp dirs
    with open(os.path.join(path, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    assert (config["decoder_start_token"], config["eos_token"], config["unk_token"],
            config["add_source_eos"], config["layer_norm_epsilon"]) == (
        "<pad>", "</s>", "<unk>", True, 1e-6)
    # decode_hparams beam 4, alpha 0.6 (fairseq); transformer_tiny's max_length 256.
    assert recorded_options(path) == {"beam_size": 4, "length_penalty": 0.6,
                                      "min_decoding_length": 0, "max_input_length": 256,
                                      "max_decoding_length": 256}


@pytest.mark.parametrize("decode", ["beam_size=1", "beam_size=4,alpha=0.0", DECODE])
def test_ctranslate2_translates_as_t2t_decoder(trained, decode):
    """Greedy: every line identical. Beam search: at least 98% of the lines; each
    other line is a difference of the searches, not of the models: CTranslate2
    keeps fewer finished candidates (EOS among the beam_size best of a step, not
    2 x beam_size, and stops at beam_size finished), so there t2t-lite's
    translation scores at least as well as CTranslate2's by the same formula.
    Identical lines get the same score (log probabilities agree to ~1e-6) where
    the length penalties agree (tensor2tensor's gnmt form has no equivalent)."""
    model_dir, path, sources, _ = trained
    params = SearchParams.for_problem(registry.problem("translate_ende_numbers")).parse(decode)
    expected = t2t_decoder_outputs(model_dir, sources + [""], params)
    assert expected[-1] == ("", None)  # a blank line is not decoded
    options = ctranslate2_export.translate_options(params, ModelDir.open(model_dir).hparams)
    got = ctranslate2_outputs(path, sources, options)
    same = [(e, g) for e, g in zip(expected, got) if e[0] == g[0]]
    differing = [(s, e, g) for s, e, g in zip(sources, expected, got) if e[0] != g[0]]
    if params.beam_size == 1:
        assert differing == []
    assert len(differing) <= len(sources) // 50, differing
    for source, (t2t_text, t2t_score), (ct2_text, ct2_score) in differing:
        assert t2t_score >= ct2_score - 1e-3, (source, t2t_text, t2t_score, ct2_text, ct2_score)
    if params.alpha == 0 or params.length_penalty == "fairseq":  # the same score formula
        # t2t-decoder prints scores with 4 decimals.
        assert max(abs(e[1] - g[1]) for e, g in same) < 1e-3
    assert CT2Translator(path, **options).translate(["", " "]) == ["", ""]


def test_int8_stays_within_half_a_bleu_point_of_float32(trained):
    _, path, sources, references = trained
    float32 = CT2Translator(path, compute_type="float32").translate(sources)
    int8 = CT2Translator(path, compute_type="int8").translate(sources)
    # Character BLEU: the references are single German compound words, on which
    # word 4-grams do not exist.
    bleu_float32 = corpus_bleu(float32, references, tokenize="char")[0].score
    bleu_int8 = corpus_bleu(int8, references, tokenize="char")[0].score
    assert bleu_float32 > 90  # a model that translates, or the comparison means little
    assert abs(bleu_int8 - bleu_float32) <= 0.5, (bleu_float32, bleu_int8)


def test_batches_side_by_side_translate_as_one_at_a_time(trained):
    # inter_threads: CTranslate2 translates that many batches at once (the benchmark's fair
    # peer of t2t-decoder's parallel batches); each line must come back at its own index.
    _, path, sources, _ = trained
    one = CT2Translator(path, compute_type="float32", threads=1).translate(sources, 8)
    two = CT2Translator(path, compute_type="float32", threads=1, inter_threads=2).translate(
        sources, 8)
    assert len(set(one)) > len(one) // 2  # distinct lines, so a swap would show
    assert two == one
