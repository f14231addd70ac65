"""t2t-exporter --format=ctranslate2 of a model imported from tensor2tensor (t2t-import).

Such a model's vocabulary is t2t's SubwordTextEncoder file, so its export
carries that file and its client tokenizes with the pure-Python encoder
(t2t_lite/data/t2t_subwords_text.py) instead of SentencePiece. Evidence:

  - the pure-Python encoder gives t2t's own ids and round trips on all 8,013
    reference lines, and agrees with the TensorFlow `T2TSubwordVocab` on
    hand-made edge cases, without importing TensorFlow;
  - the export's teacher-forced log probabilities are t2t-lite's (and t2t's);
  - CTranslate2's greedy translations of t2t's 212 test lines, through the
    export's user path (`CT2Translator`), are t2t-decoder's (t2t-lite) line for
    line, and t2t's own.

The references are tensor2tensor 1.15.7's outputs in ../shared/t2t-reference
(its README says how they were made); tensor2tensor itself is never imported.
"""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf

from paths import REPO_ROOT, T2T_REFERENCE
from t2t_lite.data.t2t_subwords import T2TSubwordVocab
from t2t_lite.export.ctranslate2_client import (T2T_UNK_TOKEN, T2TTokenizer,
                                                t2t_ctranslate2_tokens)
from t2t_lite.data.t2t_subwords_text import T2TSubwordText

MODEL_A = T2T_REFERENCE / "model_a"
VOCAB = MODEL_A / "data_dir" / "vocab.translate_ende_multi30k.8192.subwords"
EXPECTED = MODEL_A / "expected"
NO_REFERENCE = (f"tensor2tensor reference outputs not found at {T2T_REFERENCE} "
                "(../shared/t2t-reference)")
needs_reference = pytest.mark.skipif(not T2T_REFERENCE.is_dir(), reason=NO_REFERENCE)
NO_CTRANSLATE2 = "the ctranslate2 extra is not installed (pip install -e '.[ctranslate2]')"
PAD, EOS = 0, 1


def read_lines(path):
    """A file's lines split at "\\n" only (a "\\r" or U+2028 inside a line stays)."""
    with open(path, encoding="utf-8", newline="\n") as f:
        lines = f.read().split("\n")
    assert lines[-1] == "", path
    return lines[:-1]


# -- The pure-Python SubwordTextEncoder ---------------------------------------------

@needs_reference
def test_pure_python_encoder_reproduces_t2t_on_all_reference_lines():
    """All 8,013 lines: ids == t2t's SubwordTextEncoder.encode, decode(encode(line)) ==
    t2t's, in a few seconds (the time is printed; -s shows it)."""
    lines = read_lines(EXPECTED / "subwords_input.txt")
    want_ids = read_lines(EXPECTED / "t2t.subwords.ids")
    want_back = read_lines(EXPECTED / "t2t.subwords.roundtrip")
    assert len(lines) == len(want_ids) == len(want_back) == 8013
    start = time.perf_counter()
    encoder = T2TSubwordText.from_file(str(VOCAB))
    ids = [encoder.encode(line) for line in lines]
    back = [encoder.decode(row) for row in ids]
    seconds = time.perf_counter() - start
    print(f"pure-Python SubwordTextEncoder: 8,013 lines encoded and decoded in {seconds:.2f} s")
    assert [i for i in range(len(lines)) if " ".join(map(str, ids[i])) != want_ids[i]] == []
    assert [i for i in range(len(lines)) if back[i] != want_back[i]] == []
    assert encoder.vocab_size == 8079 and encoder.max_subtoken_length == 22
    assert encoder.subtokens[:3] == ["<pad>_", "<EOS>_", "._"]


# A hand-made vocabulary (t2t's rules worked by hand on it below).
HAND = (["<pad>_", "<EOS>_", "a", "b", "_", " ", "\\", "u", ";"] + list("0123456789")
        + ["ab_", " _", "\\u", "b_", "!", "a_", "aa", "", "a_"])
H = {s: i for i, s in enumerate(HAND)}  # the later "a_" (id 27) wins, as in t2t


def hand_file(tmp_path, subtokens=HAND, quote="'") -> str:
    path = tmp_path / "hand.subwords"
    path.write_bytes("".join(f"{quote}{s}{quote}\n" for s in subtokens).encode("utf-8"))
    return str(path)


def test_pure_python_encoder_hand_worked_cases(tmp_path):
    encoder = T2TSubwordText.from_file(hand_file(tmp_path))
    digits = lambda number: [H[d] for d in number]  # noqa: E731
    # Tokens: runs of alphanumeric / other characters; a single space between two
    # tokens goes, at either end it stays (escaped " _").
    assert encoder.tokenize("ab a!b") == ["ab", "a", "!", "b"]
    assert encoder.encode("ab a") == [H["ab_"], H["a_"]]
    assert encoder.encode(" a ") == [H[" _"], H["a_"], H[" _"]]
    # "_" -> "\u", "\\" -> "\\\\"; characters outside the alphabet and "\n" -> \NNN;.
    assert encoder.encode("_") == [H["\\u"], H["_"]]
    assert encoder.encode("\\") == [H["\\"], H["\\"], H["_"]]
    assert encoder.encode("c") == [H["\\"]] + digits("99") + [H[";"], H["_"]]
    assert encoder.encode("\n") == [H["\\"]] + digits("10") + [H[";"], H["_"]]
    # Greedy longest match; the empty subtoken (id 26) never matches.
    assert encoder.encode("aab") == [H["aa"], H["b_"]]
    assert encoder.encode("") == [] and encoder.tokenize("") == []
    # Decoding: split at "_", unescape, a space between two alphanumeric-first tokens.
    assert encoder.decode([H["a_"], H["b_"], H["!"], H["_"], H["a_"]]) == "a b!a"
    assert encoder.decode([H["\\u"], H["_"]]) == "_"
    assert encoder.decode([H["\\"]] + digits("9999999") + [H[";"], H["_"]]) == "\u3013"
    assert encoder.decode([H["\\"]] + digits("55296") + [H[";"], H["_"]]) == "\ufffd"
    assert encoder.decode([H["a_"], 999, -1, H["b_"]]) == "a b"  # outside: nothing
    assert encoder.decode([PAD, EOS]) == "<pad><EOS>"  # t2t's decode, id for id
    assert encoder.decode_output([H["a_"], PAD, H["b_"], EOS, H["a_"]]) == "a b"
    assert encoder.encode_inputs("\u2028 ab a\t ") == encoder.encode("ab a")


def test_pure_python_encoder_agrees_with_t2t_subword_vocab(tmp_path):
    """Edge cases through both implementations of t2t's rules (T2TSubwordVocab is
    checked against t2t itself in tests/data/test_t2t_subwords.py)."""
    path = hand_file(tmp_path)  # an empty and a repeated subtoken too
    # (Not "d", "p", "E", "O", "S", "<", ">": of the alphabet, through "<pad>_" and
    # "<EOS>_", but no subtokens of their own, so t2t cannot encode them.)
    texts = ["ab a", " a ", "a  b", "_\\", "c\nx", "ä €😀", "a\u2028b", "  ", " ", "a" * 40,
             "!a!", "9a 9", "\\u", "b_a_", "\r\t", "ab!ab ab"]
    encoder, vocab = T2TSubwordText.from_file(path), T2TSubwordVocab.from_file(path)
    ids = [encoder.encode(t) for t in texts]
    assert [row + [EOS] for row in ids] == vocab.encode_texts(texts)
    assert [encoder.decode_output(row) for row in ids] == vocab.decode_ids(ids)
    odd = [[H["\\"]] + [H[d] for d in "12345678"] + [H[";"], H["_"]], [H["\\"], H["u"]],
           [H["_"], H["_"], H["a"]], [H["\\"], H["9"], H["a_"]], [PAD, H["a_"], EOS, H["b_"]]]
    assert [encoder.decode_output(row) for row in odd] == vocab.decode_ids(odd)


def test_pure_python_encoder_refuses_what_t2t_subword_vocab_refuses(tmp_path):
    with pytest.raises(ValueError, match=r"line 3: 'a' is not a quoted subtoken"):
        T2TSubwordText.from_bytes(b"'<pad>_'\n'<EOS>_'\na\n", "v.subwords")
    with pytest.raises(ValueError, match=r"first two subtokens are \['<EOS>_', '<pad>_'\]"):
        T2TSubwordText.from_bytes(b"'<EOS>_'\n'<pad>_'\n", "v.subwords")
    with pytest.raises(ValueError, match="line 2: not UTF-8"):
        T2TSubwordText.from_bytes(b"'<pad>_'\n'\xff'\n", "v.subwords")
    # Double quotes, "\r\n" and trailing blanks are t2t's file format too.
    encoder = T2TSubwordText.from_bytes(b'"<pad>_"\r\n"<EOS>_"  \r\n"a_"\r\n')
    assert encoder.subtokens == ["<pad>_", "<EOS>_", "a_"]
    # An alphabet character that is no subtoken: t2t fails (AssertionError), so do both.
    encoder = T2TSubwordText(["<pad>_", "<EOS>_", "xy_"])
    with pytest.raises(ValueError, match="cannot split"):
        encoder.encode("y")


def test_the_client_imports_no_tensorflow():
    """What a CTranslate2 user imports: the client and the pure-Python encoder."""
    code = ("import sys; import t2t_lite.export.ctranslate2_client; "
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tensorflow', 'keras', 'tensorflow_text', 'numpy', 'tensor2tensor')); "
            "assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


def test_ctranslate2_tokens_stay_id_for_id(tmp_path):
    """Each t2t id gets its own CTranslate2 token: an earlier duplicate of a subtoken
    (which t2t never encodes to) gets a "\\n" name; the unknown token comes last."""
    tokens = t2t_ctranslate2_tokens(HAND)
    assert tokens[:-1] == HAND[:24] + ["a_\n24", "aa", "", "a_"] and tokens[-1] == T2T_UNK_TOKEN
    assert len(set(tokens)) == len(tokens) == len(HAND) + 1
    assert not any("\n" in s for s in HAND) and "\n" in T2T_UNK_TOKEN
    tokenizer = T2TTokenizer(hand_file(tmp_path), tokens)
    assert tokenizer.encode(["ab a"]) == [["ab_", "a_"]]
    assert tokenizer.decode(["a_\n24", "b_", T2T_UNK_TOKEN, "<pad>_", "a_", "<EOS>_", "b_"]) == (
        "a b a")


# -- The export of model_a -----------------------------------------------------------

@pytest.fixture(scope="module")
def ctranslate2():
    return pytest.importorskip("ctranslate2", reason=NO_CTRANSLATE2)


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """model_a (tensor2tensor's own model), imported with t2t-import."""
    if not MODEL_A.is_dir():
        pytest.skip(NO_REFERENCE)
    from t2t_lite.bin import t2t_import
    path = str(tmp_path_factory.mktemp("imported") / "model_a")
    assert t2t_import.main([f"--t2t_output_dir={MODEL_A / 'output_dir'}",
                            f"--t2t_data_dir={MODEL_A / 'data_dir'}",
                            f"--output_dir={path}"]) == 0
    return path


@pytest.fixture(scope="module")
def exported(ctranslate2, imported, tmp_path_factory):
    """The version path of t2t-exporter --format=ctranslate2 --decode_hparams=beam_size=1."""
    from t2t_lite.bin import t2t_exporter
    export_dir = tmp_path_factory.mktemp("ctranslate2") / "model_a"
    assert t2t_exporter.main(["--format=ctranslate2", f"--output_dir={imported}",
                              f"--export_dir={export_dir}", "--decode_hparams=beam_size=1"]) == 0
    return str(export_dir / "1")


def test_export_directory_holds_the_t2t_vocabulary(exported):
    from t2t_lite.export.ctranslate2_client import read_export_info, recorded_options
    assert sorted(os.listdir(exported)) == ["config.json", "model.bin", "shared_vocabulary.json",
                                            "t2t_lite", VOCAB.name]
    with open(os.path.join(exported, VOCAB.name), "rb") as f:
        assert f.read() == VOCAB.read_bytes()
    info = read_export_info(exported)
    assert (info["tokenizer"], info["t2t_subwords"]) == ("t2t_subwords", VOCAB.name)
    assert "sentencepiece" not in info
    assert recorded_options(exported)["beam_size"] == 1
    # t2t-decoder does not truncate inputs: only the position table's 1,024 rows limit them.
    assert recorded_options(exported)["max_input_length"] == 1024
    with open(os.path.join(exported, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    assert (config["decoder_start_token"], config["eos_token"], config["unk_token"],
            config["add_source_eos"]) == ("<pad>_", "<EOS>_", T2T_UNK_TOKEN, True)
    with open(os.path.join(exported, "shared_vocabulary.json"), encoding="utf-8") as f:
        tokens = json.load(f)
    subtokens = T2TSubwordText.from_file(str(VOCAB)).subtokens
    assert tokens == subtokens + [T2T_UNK_TOKEN]  # no duplicates in model_a: t2t's own strings
    assert tokens[2] == "._"  # an ordinary subtoken, not the unknown token


def test_teacher_forced_log_probs_are_t2t_lite_and_t2t(ctranslate2, imported, exported):
    """CTranslate2's score_batch on t2t's 50 reference pairs (t2t's own ids): every
    target token's log probability within 1e-4 of the imported Keras model's, and of
    t2t's; the unknown token's extra row changes none of them."""
    from t2t_lite.model_dir import ModelDir
    model, _ = ModelDir.open(imported).load_model()
    expected = np.load(EXPECTED / "t2t.logprobs.npz")
    tokens = t2t_ctranslate2_tokens(T2TSubwordText.from_file(str(VOCAB)).subtokens)
    sources = [[int(i) for i in expected[f"src_{n}"]] for n in range(50)]
    targets = [[int(i) for i in expected[f"tgt_{n}"]] for n in range(50)]
    assert all(row[-1] == EOS for row in sources + targets)
    translator = ctranslate2.Translator(exported, device="cpu", compute_type="float32")
    results = translator.score_batch([[tokens[i] for i in row[:-1]] for row in sources],
                                     [[tokens[i] for i in row[:-1]] for row in targets])
    worst_keras = worst_t2t = 0.0
    for n, (source, target, result) in enumerate(zip(sources, targets, results)):
        assert len(result.log_probs) == len(target)  # every subtoken and EOS
        logits = model({"inputs": tf.constant([source]), "targets": tf.constant([target])})
        keras = tf.nn.log_softmax(logits[0]).numpy()[np.arange(len(target)), target]
        worst_keras = max(worst_keras, float(np.max(np.abs(keras - result.log_probs))))
        worst_t2t = max(worst_t2t, float(np.max(np.abs(expected[f"logp_{n}"]
                                                       - result.log_probs))))
    print(f"largest log-probability difference: {worst_keras:.2e} from t2t-lite, "
          f"{worst_t2t:.2e} from t2t")
    assert worst_keras < 1e-4 and worst_t2t < 1e-4, (worst_keras, worst_t2t)


def greedy_margins(model, source, output, eos: bool) -> np.ndarray:
    """For each token of `output` (and EOS after it if `eos`): how far below the best
    log probability of its step, under the Keras model, it is (0: the argmax)."""
    target = output + [EOS] if eos else output
    logits = model({"inputs": tf.constant([source + [EOS]]), "targets": tf.constant([target])})
    log_probs = tf.nn.log_softmax(logits[0]).numpy()
    return log_probs.max(axis=-1) - log_probs[np.arange(len(target)), target]


def test_greedy_translations_are_t2t_decoders(ctranslate2, imported, exported, tmp_path):
    """All 212 lines of t2t's test input (Multi30k and hand-made lines: characters
    outside the alphabet, `_` and `\\`, spaces at both ends): CTranslate2's greedy
    output through CT2Translator equals t2t-decoder's (--decode_hparams=beam_size=1),
    and tensor2tensor's own on at least 210 lines (t2t-lite itself differs from t2t
    on at most 2: tests/t2t_import). A line where CTranslate2 and t2t-decoder differ
    would have to be a tie: CTranslate2's output also a greedy path of the Keras model
    to 1e-4 (none differs today)."""
    from t2t_lite.bin import t2t_decoder
    from t2t_lite.decode.decoding import one_line
    from t2t_lite.decode.search import SearchParams
    from t2t_lite.export.ctranslate2_client import CT2Translator
    from t2t_lite.model_dir import ModelDir

    source_file = EXPECTED / "input.en"
    out = tmp_path / "greedy.de"
    assert t2t_decoder.main([f"--output_dir={imported}", f"--decode_from_file={source_file}",
                             f"--decode_to_file={out}", "--decode_hparams=beam_size=1"]) == 0
    expected = read_lines(out)
    lines = read_lines(source_file)
    assert len(lines) == len(expected) == 212
    directory = ModelDir.open(imported)
    params = SearchParams.for_problem(directory.problem()).parse("beam_size=1")
    assert params.extra_length == 100  # t2t-decoder's default cap: source length + 100

    client = CT2Translator(exported, compute_type="float32")
    assert client.tokenizer_kind == "t2t_subwords" and client.strip_inputs
    got = client.translate(lines, extra_length=params.extra_length)
    differing = [i for i in range(212) if one_line(got[i]) != expected[i]]
    if differing:  # each must be a tie of the greedy choice, not a different model
        model, _ = directory.load_model()
        sources = client.tokenize([lines[i] for i in differing])
        hypotheses = client.translate_pieces(sources, extra_length=params.extra_length)
        for i, source, hypothesis in zip(differing, sources, hypotheses):
            source_ids = [client.tokenizer.ids[t] for t in source]
            output_ids = [client.tokenizer.ids[t] for t in hypothesis]
            cap = min(len(source_ids) + 1 + params.extra_length,
                      client.options["max_decoding_length"])
            margins = greedy_margins(model, source_ids, output_ids, len(output_ids) < cap)
            assert margins.max() < 1e-4, (i, lines[i], expected[i], got[i], margins.max())
    assert len(differing) <= 2, [(i, expected[i], got[i]) for i in differing]
    print(f"CTranslate2 greedy differs from t2t-decoder on {len(differing)} of 212 lines")

    # tensor2tensor's own greedy ids (t2t_reference.py, t2t 1.15.7).
    t2t_ids = [[int(t) for t in row.split()] for row in read_lines(EXPECTED / "t2t.greedy.ids")]
    hypotheses = client.translate_pieces(client.tokenize(lines), extra_length=params.extra_length)
    ct2_ids = [[client.tokenizer.ids[t] for t in hypothesis] for hypothesis in hypotheses]
    assert sum(a != b for a, b in zip(ct2_ids, t2t_ids)) <= 2
    assert [client.tokenizer.decode(h) for h in hypotheses] == got


def test_client_strips_lines_and_skips_blank_ones(ctranslate2, exported):
    """Whitespace at both ends is not translated (t2t-decoder strips lines of imported
    models), blank lines give "" without decoding; disable_unk (which masks the unknown
    token's own row) changes nothing."""
    from t2t_lite.export.ctranslate2_client import CT2Translator
    client = CT2Translator(exported, compute_type="float32")
    lines = ["A man in a red shirt is riding a bike.", "Two dogs play in the snow."]
    plain = client.translate(lines)
    assert all(plain)
    assert client.translate(["", " \t", f"  {lines[0]}\u3000 ", f"\t{lines[1]}\u2028"]) == (
        ["", ""] + plain)
    assert client.tokenize([f" {lines[0]} "]) == client.tokenize([lines[0]])
    unk_disabled = CT2Translator(exported, compute_type="float32", disable_unk=True)
    assert unk_disabled.translate(lines) == plain
