"""t2t-decoder, checkpoint loading/averaging and t2t-avg-checkpoints."""

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import averaging, checkpoints
from t2t_lite.decode import decoding
from t2t_lite.decode.scoring import score_pairs
from t2t_lite.decode.search import Search, SearchParams
from t2t_lite.decode.translator import Translator
from t2t_lite.errors import T2TError
from t2t_lite.textio import read_lines

from model_dirs import load_model, make_model_dir, number_sentences


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return make_model_dir(str(tmp_path_factory.mktemp("m") / "model"), steps=(1, 2, 3, 4))


@pytest.fixture(scope="module")
def translator(model_dir):
    model, vocab = load_model(model_dir, checkpoint_path=model_dir + "/ckpt-1")
    return Translator(Search(model, SearchParams(beam_size=2, extra_length=5)), vocab)


OPTIONS = decoding.DecodeOptions(batch_size=3)


def test_averaging_known_values_and_optimizer_slots_not_averaged(model_dir, tmp_path):
    one, _ = load_model(model_dir, model_dir + "/ckpt-1")
    avg, _ = load_model(model_dir, checkpoint_average=3)  # ckpt-2, 3, 4
    for a, b in zip(one.weights, avg.weights):
        np.testing.assert_allclose(b.numpy(), a.numpy() + 2.0, atol=1e-5)  # mean(2,3,4) - 1
    # The same through t2t-avg-checkpoints into a new model dir.
    from t2t_lite.bin import t2t_avg_checkpoints
    out = str(tmp_path / "avg")
    assert t2t_avg_checkpoints.main([f"--output_dir={model_dir}", "--num_last_checkpoints=2",
                                     f"--avg_dir={out}"]) == 0
    written, _ = load_model(out)
    for a, b in zip(one.weights, written.weights):
        np.testing.assert_allclose(b.numpy(), a.numpy() + 2.5, atol=1e-5)  # mean(3,4) - 1
    names = [name for name, _ in tf.train.list_variables(out + "/ckpt-4")]
    assert not any("optimizer" in n for n in names)
    assert checkpoints.list_checkpoints(out) == [out + "/ckpt-4"]


def test_mismatched_checkpoints_are_rejected(model_dir, tmp_path):
    other = make_model_dir(str(tmp_path / "other"), steps=(7,), hparams_overrides="hidden_size=16")
    model, _ = load_model(model_dir)
    with pytest.raises(T2TError, match="does not match the model"):
        averaging.average_into(model, [model_dir + "/ckpt-1", other + "/ckpt-7"])
    with pytest.raises(T2TError, match="does not exist"):
        load_model(model_dir, checkpoint_path=model_dir + "/ckpt-99")


def test_decoding_keeps_line_count_and_order(translator):
    lines = ["five hundred", "", "twelve thousand, three hundred and forty-five", "   ",
             "seven", "ninety-nine thousand, nine hundred and ninety-nine", "one"]
    outputs = decoding.decode_lines(translator, lines, OPTIONS)
    assert len(outputs) == len(lines)
    assert outputs[1] == "" and outputs[3] == ""
    for line, output in zip(lines, outputs):
        if line.strip():  # batching and sorting must not change any translation
            assert output == translator.translate([line])[0]


def test_one_line_and_over_long_input(translator):
    assert len(decoding.decode_lines(translator, ["three"], OPTIONS)) == 1
    long_line = " ".join(["seven hundred"] * 400)  # far beyond max_length subwords
    ids = translator.encode([long_line])
    assert ids.shape[1] == translator.max_input_length
    assert int(ids[0, -1]) == 1  # truncated, EOS kept
    assert len(decoding.decode_lines(translator, [long_line, "two"], OPTIONS)) == 2


@pytest.mark.parametrize("options, expected", [
    (decoding.DecodeOptions(), "a b c\td"),  # line breaks only; a TAB is text
    (decoding.DecodeOptions(return_beams=True), "a b c d\tz"),
    (decoding.DecodeOptions(write_beam_scores=True), "a b c d\t-1.5000"),
])
def test_a_hypothesis_with_line_breaks_is_written_on_one_line(options, expected):
    assert decoding.format_hypotheses(["a\r\nb\rc\td", "z"], [-1.5, -2.0], options) == expected


def test_outputs_stay_one_per_line_when_the_model_emits_line_breaks(translator):
    # Byte pieces let a model emit "\n" (<0x0A>); here the postprocess step puts
    # one into every hypothesis, which reaches the writer the same way.
    lines = ["five", "", "six"]
    outputs = decoding.decode_lines(translator, lines, OPTIONS,
                                    postprocess=lambda h, line: f"{line}\n{h}\r")
    plain = decoding.decode_lines(translator, lines, OPTIONS)
    assert outputs == ["five " + plain[0] + " ", "", "six " + plain[2] + " "]


def test_standard_input_is_read_by_the_files_rules(model_dir, monkeypatch, capfd):
    import io
    import sys
    from t2t_lite.bin import t2t_decoder
    stdin = io.TextIOWrapper(io.BytesIO("one\u2028two\r\n\nthree\n".encode("utf-8")))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert t2t_decoder.main([f"--output_dir={model_dir}", "--decode_hparams=beam_size=1"]) == 0
    out = capfd.readouterr().out
    assert len(out.split("\n")) == 4 and out.split("\n")[1] == ""  # 3 lines, not 4
    stdin = io.TextIOWrapper(io.BytesIO(b"one\n\xff\n"))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert t2t_decoder.main([f"--output_dir={model_dir}"]) == 1
    assert capfd.readouterr().err.startswith(
        "t2t-decoder: error: standard input, line 2: not valid UTF-8")


@pytest.mark.parametrize("beam_size", [1, 4])
def test_finished_sentences_leaving_the_batch_change_no_output(numbers_model, beam_size):
    # The README's trained model (growing self-attention cache, cross-attention
    # keys and values under "static"), alone and in an ensemble with its
    # earlier checkpoint (nested caches): 58 sentences of 2 to 14 subwords stop
    # at different steps. A trained model, not random weights: those tie beams
    # to 1e-6, and which of two tied beams wins moves with the batch's size
    # (float rounding), with or without compaction.
    path = numbers_model.path
    final, vocab = load_model(path, path + "/ckpt-2000")
    earlier, _ = load_model(path, path + "/ckpt-1000")
    lines = number_sentences(400)[::7]
    params = SearchParams(beam_size=beam_size, alpha=0.6, extra_length=8)
    for models in ([final], [final, earlier]):
        inputs = Translator(Search(models, params), vocab).encode(lines)
        kept, compact = Search(models, params, compact=False), Search(models, params)
        assert compact.compact and not kept.compact
        ids, scores = kept.run(inputs)
        compact_ids, compact_scores = compact.run(inputs)
        np.testing.assert_array_equal(compact_ids, ids)
        np.testing.assert_allclose(compact_scores, scores, rtol=1e-5)
        # The same useful work; without compaction every sentence's beams run
        # every step the loop runs after the first (one row per sentence), with
        # it fewer (greedy: exactly the tokens).
        assert compact.work["useful"] == kept.work["useful"]
        assert (kept.work["computed"] - len(lines)) % (len(lines) * beam_size) == 0
        assert compact.work["useful"] <= compact.work["computed"] < kept.work["computed"]
        if beam_size == 1:
            assert compact.work["computed"] == compact.work["useful"]


def test_cached_greedy_equals_rerunning_the_full_model(model_dir):
    model, vocab = load_model(model_dir, model_dir + "/ckpt-1")
    greedy = Translator(Search(model, SearchParams(beam_size=1, extra_length=6)), vocab)
    inputs = greedy.encode(["four hundred and two", "eighty"])
    ids, _ = greedy.search.search(inputs)
    ids = ids[:, 0].numpy()
    prefix = np.zeros([2, 0], np.int32)
    for step in range(ids.shape[1]):
        targets = np.concatenate([prefix, np.zeros([2, 1], np.int32)], axis=1)
        logits = model({"inputs": inputs, "targets": tf.constant(targets)})
        next_ids = np.argmax(logits[:, -1].numpy(), axis=-1).astype(np.int32)
        for row in range(2):  # rows that ended (EOS or max length) are padded in the output
            ended = step > 0 and 1 in ids[row, :step]
            if ended or step >= int(np.count_nonzero(inputs[row])) + 6:
                next_ids[row] = 0
        np.testing.assert_array_equal(ids[:, step], next_ids)
        prefix = np.concatenate([prefix, next_ids[:, None]], axis=1)


def test_decoder_program_end_to_end(model_dir, tmp_path, capfd):
    from t2t_lite.bin import t2t_decoder
    source = tmp_path / "in.txt"
    source.write_text("one\n\ntwo hundred\n", encoding="utf-8")
    out = tmp_path / "out.txt"
    assert t2t_decoder.main([f"--output_dir={model_dir}", f"--decode_from_file={source}",
                             f"--decode_to_file={out}", "--decode_hparams=beam_size=2",
                             f"--decode_reference={source}"]) == 0
    lines = out.read_text(encoding="utf-8").split("\n")
    assert len(lines) == 4 and lines[1] == "" and lines[3] == ""
    assert "BLEU = " in capfd.readouterr().err
    scores = tmp_path / "scores.txt"
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("one\teins\ntwo\tzwei\n", encoding="utf-8")
    assert t2t_decoder.main([f"--output_dir={model_dir}", f"--score_file={pairs}",
                             f"--decode_to_file={scores}"]) == 0
    values = [float(x) for x in scores.read_text().split()]
    assert len(values) == 2 and all(v < 0 for v in values)


def test_scoring_in_batches_gives_each_pair_its_own_score(model_dir):
    # --score_file scores batch_size pairs at a time, sorted by length: each score must
    # come back at its pair's index and equal the pair scored alone.
    model, vocab = load_model(model_dir, model_dir + "/ckpt-1")
    sources = number_sentences(400)[:11]
    targets = sources[::-1]  # other lengths than the sources'
    batched = score_pairs(model, vocab, sources, targets, batch_size=3)
    alone = [score_pairs(model, vocab, [s], [t])[0] for s, t in zip(sources, targets)]
    np.testing.assert_allclose(batched, alone, rtol=1e-5)
    assert len(set(np.round(alone, 2))) == len(alone)  # distinct: a swap would show
    assert score_pairs(model, vocab, [], []) == []


@pytest.mark.parametrize("argv, message", [
    (["--output_dir=/nonexistent/model"], "not a t2t-lite model directory"),
    (["--output_dir=MODEL", "--decode_hparams=beam_sise=2"], "Did you mean 'beam_size'"),
    (["--output_dir=MODEL", "--decode_hparams=stop_rule=beam_fll"], "Did you mean 'beam_full'"),
    (["--output_dir=MODEL", "--decode_from_file=/nonexistent.txt"], "Cannot read"),
])
def test_decoder_user_errors_are_one_line(model_dir, capfd, argv, message):
    from t2t_lite.bin import t2t_decoder
    argv = [a.replace("MODEL", model_dir) for a in argv]
    assert t2t_decoder.main(argv) == 1
    err = capfd.readouterr().err.strip()
    assert err.startswith("t2t-decoder: error: ") and message in err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_non_utf8_input_names_the_line(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\xfe broken\n")
    with pytest.raises(T2TError, match=r"bad\.txt, line 2: not valid UTF-8"):
        read_lines(str(bad), strip="newline")


def test_number_sentences_are_distinct():
    assert len(set(number_sentences())) > 300


def test_sampling_is_seeded_and_top_k_1_is_greedy(model_dir):
    model, vocab = load_model(model_dir, model_dir + "/ckpt-1")
    lines = ["four hundred and two", "eighty", "seven thousand"]

    def run(**params):
        search = Search(model, SearchParams(extra_length=6, **params))
        return Translator(search, vocab).translate(lines)

    greedy = run(beam_size=1)
    assert run(sampling_temperature=1.0, top_k=1) == greedy
    assert run(sampling_temperature=5.0, sampling_seed=3) == run(sampling_temperature=5.0,
                                                                 sampling_seed=3)
    assert run(sampling_temperature=5.0, sampling_seed=3) != greedy


def test_xla_search_pads_shapes_and_matches_the_plain_graph(model_dir):
    model, vocab = load_model(model_dir, model_dir + "/ckpt-1")
    params = SearchParams(beam_size=2, extra_length=5)
    plain = Search(model, params)
    xla = Search(model, params, jit_compile=True)
    inputs = Translator(plain, vocab).encode(["five hundred and six", "seven", "eighty-one"])
    plain_ids, plain_scores = plain.run(inputs, pad_rows=4)  # inputs [3, S]
    xla_ids, xla_scores = xla.run(inputs, pad_rows=4)
    assert xla_ids.shape[0] == 3  # the padding row is dropped
    # Inputs padded to 8k tokens give a longer output buffer, all PAD beyond the plain one's.
    # (Only the best beam is compared: this random model has near-ties among the others.)
    width = plain_ids.shape[2]
    np.testing.assert_array_equal(xla_ids[:, 0, :width], plain_ids[:, 0])
    assert not xla_ids[:, :, width:].numpy().any()
    np.testing.assert_allclose(xla_scores, plain_scores, rtol=1e-4)
    # The padding row is computed but never useful: both count, for the 3 real rows,
    # one row for the first token (step 0 runs before the beam expands), then beam x
    # each further token of the best output.
    tokens = np.count_nonzero(plain_ids[:, 0])
    assert xla.work["useful"] == plain.work["useful"] == 3 + 2 * (tokens - 3)
    assert xla.work["computed"] > xla.work["useful"]


def test_bfloat16_decoding_keeps_float32_weights_and_close_scores(model_dir):
    f32, vocab = load_model(model_dir, model_dir + "/ckpt-1")
    bf16, _ = load_model(model_dir, model_dir + "/ckpt-1", precision="bfloat16")
    assert bf16.decoder_layers[0].feed_forward.compute_dtype == "bfloat16"
    for a, b in zip(f32.weights, bf16.weights):
        assert b.dtype == "float32"
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    import keras
    assert keras.config.dtype_policy().name == "float32"  # the global policy is restored
    sources = ["four hundred and two", "eighty"]
    targets = ["vierhundertzwei", "achtzig"]
    params = SearchParams(beam_size=2, extra_length=5)
    exact = score_pairs(f32, vocab, sources, targets)
    approx = score_pairs(bf16, vocab, sources, targets)
    np.testing.assert_allclose(approx, exact, rtol=0.03)
    assert len(decoding.decode_lines(Translator(Search(bf16, params), vocab),
                                     sources + [""])) == 3
    with pytest.raises(T2TError, match="precision must be one of"):
        load_model(model_dir, precision="float16")


def test_an_ensemble_of_a_model_with_itself_decodes_like_the_model(model_dir, tmp_path):
    model, vocab = load_model(model_dir, model_dir + "/ckpt-1")
    params = SearchParams(beam_size=3, extra_length=6)
    inputs = Translator(Search(model, params), vocab).encode(["four hundred and two", "eighty"])
    single_ids, single_scores = Search(model, params).run(inputs)
    pair_ids, pair_scores = Search([model, model], params).run(inputs)
    # log(mean(p, p)) = log p up to float32 rounding: the best hypothesis is the same;
    # this random model has near-ties among the lower beams, which rounding may swap,
    # but their scores agree.
    np.testing.assert_array_equal(pair_ids[:, 0], single_ids[:, 0])
    np.testing.assert_allclose(pair_scores, single_scores, atol=1e-5)
    other = make_model_dir(str(tmp_path / "other"), vocab_size=290)
    small, _ = load_model(other)
    with pytest.raises(T2TError, match="share one vocabulary"):
        Search([model, small], params)


def test_ensemble_logits_are_the_log_of_the_mean_probability():
    from t2t_lite.decode.search import ensemble_logits
    probs = [np.array([[0.5, 0.25, 0.25]]), np.array([[0.1, 0.8, 0.1]])]
    steps = [lambda ids, i, cache, p=p: (tf.math.log(tf.constant(p, tf.float32)) + 3.0, cache)
             for p in probs]
    logits, cache = ensemble_logits(steps)(tf.zeros([1], tf.int32), 0,
                                           {"model_0": {}, "model_1": {}})
    # By hand: mean = [0.3, 0.525, 0.175]; the ensemble picks token 1, which neither
    # model's argmax alone agrees on with the other.
    np.testing.assert_allclose(np.exp(logits.numpy()), [[0.3, 0.525, 0.175]], rtol=1e-6)
    assert set(cache) == {"model_0", "model_1"}


def test_decoder_ensemble_of_a_model_with_itself_and_mismatches(model_dir, tmp_path, capfd):
    from t2t_lite.bin import t2t_decoder
    source = tmp_path / "in.txt"
    source.write_text("one\n\ntwo hundred\nseventy-three\n", encoding="utf-8")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("one\teins\ntwo\tzwei\n", encoding="utf-8")
    outputs = {}
    for name, dirs in (("single", model_dir), ("pair", f"{model_dir},{model_dir}")):
        for kind, flags in (("beam", ["--decode_hparams=beam_size=3,return_beams=True,"
                                      "write_beam_scores=True"]),
                            ("greedy", ["--decode_hparams=beam_size=1"]),
                            ("score", [f"--score_file={pairs}"])):
            out = tmp_path / f"{name}.{kind}"
            argv = [f"--output_dir={dirs}", f"--decode_to_file={out}", *flags]
            if kind != "score":
                argv.append(f"--decode_from_file={source}")
            assert t2t_decoder.main(argv) == 0, capfd.readouterr().err
            outputs[name, kind] = out.read_text(encoding="utf-8")
    # Greedy and --score_file: a model with itself decodes as the model. n-best: the same
    # best hypothesis, and every beam's score within rounding (log(mean(p, p)) = log p up
    # to float32 rounding, which may swap this random model's near-tied lower beams).
    for kind in ("greedy", "score"):
        assert outputs["pair", kind] == outputs["single", kind], kind
    for pair, single in zip(outputs["pair", "beam"].splitlines(),
                            outputs["single", "beam"].splitlines()):
        pair, single = pair.split("\t"), single.split("\t")
        assert len(single) in (1, 6) and pair[0] == single[0]  # "" for the empty line
        np.testing.assert_allclose([float(x) for x in pair[1::2]],
                                   [float(x) for x in single[1::2]], atol=1e-3)

    other = make_model_dir(str(tmp_path / "other"), vocab_size=290)
    capfd.readouterr()
    assert t2t_decoder.main([f"--output_dir={model_dir},{other}",
                             f"--decode_from_file={source}"]) == 1
    err = capfd.readouterr().err.strip()
    assert err.startswith("t2t-decoder: error: ") and "different vocabularies" in err
    assert len(err.splitlines()) == 1
