"""A Marian vocabulary computes MarianTokenizer's ids and texts (transformers 5.23's own,
recorded in tests/t2t_import/marian/*/expected/), in t2t-lite's ids, in-graph; a
multilingual model refuses a line without one of its language tokens; damaged files are
refused in one line."""

import base64
import json
import pathlib
import shutil

import numpy as np
import pytest
import tensorflow as tf

import t2t_lite
from t2t_lite import model_dir, model_dir_writer, registry
from t2t_lite.bin import t2t_decoder
from t2t_lite.errors import T2TError
from t2t_lite.marian.vocab_file import VOCAB_FILE, write_vocab
from t2t_lite.marian.vocabulary import MarianVocab

MARIAN = pathlib.Path(__file__).parent / "marian"
MODELS = ("shared_swish", "separate_relu", "multilingual_gelu")
BEAMS = {"shared_swish": 4, "separate_relu": 4, "multilingual_gelu": 6}
LANGUAGES = ">>deu<<, >>fra<<, >>spa<<"
REFUSAL = ("This model translates into several languages: each line must start with the "
           f"token of the language to translate into, one of {LANGUAGES}.")
# multilingual_gelu's lines of input.txt that t2t-lite refuses (transformers translates
# them): no language token, one the model does not have, a space before the token.
REFUSED = ("three hundred and twelve", ">>ita<< thirty", " >>fra<< thirty")


@pytest.fixture(scope="module")
def vocabs(tmp_path_factory):
    """{model: its MarianVocab, loaded from the file write_vocab wrote}."""
    out = {}
    for name in MODELS:
        directory = tmp_path_factory.mktemp(name)
        path = write_vocab(str(MARIAN / name), str(directory))
        assert path == str(directory / "marian_vocab.json")
        out[name] = MarianVocab.from_file(path)
    return out


def renumbered(name: str, target: bool):
    """Marian id -> t2t-lite id of a model's (source or target) vocabulary, worked out
    here from the table: <pad> 0, </s> 1, <unk> 2, the others in their order from 3."""
    file = "target_vocab.json" if target and name == "separate_relu" else "vocab.json"
    table = json.loads((MARIAN / name / file).read_text(encoding="utf-8"))
    specials = {table["<pad>"]: 0, table["</s>"]: 1, table["<unk>"]: 2}
    others = sorted(i for i in table.values() if i not in specials)
    new = {**specials, **{old: 3 + k for k, old in enumerate(others)}}
    return lambda ids: [new[int(i)] for i in ids]


def lines(path: pathlib.Path):
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return text[:-1].split("\n")


@pytest.mark.parametrize("name,compared", [("shared_swish", 60), ("separate_relu", 60),
                                           ("multilingual_gelu", 59)])
def test_input_lines_encode_to_transformers_ids(vocabs, name, compared):
    expected = MARIAN / name / "expected"
    source = renumbered(name, target=False)
    pairs = [(line, source(ids.split()))
             for line, ids in zip(lines(expected / "input.txt"), lines(expected / "input.ids"))
             if line not in REFUSED]
    assert len(pairs) == compared
    texts = [line for line, _ in pairs]
    assert vocabs[name].encode_input_texts(texts) == [ids for _, ids in pairs]
    assert vocabs[name].encode_inputs(tf.constant(texts)).to_list() == [ids for _, ids in pairs]


@pytest.mark.parametrize("name", MODELS)
def test_outputs_decode_to_transformers_texts(vocabs, name):
    expected = MARIAN / name / "expected"
    target = renumbered(name, target=True)
    k = BEAMS[name]
    for stem in ("greedy", f"beam{k}", f"beam{k}.no_renormalize"):
        ids = [target(row.split()) for row in lines(expected / f"{stem}.ids")]
        assert vocabs[name].decode_ids(ids) == lines(expected / f"{stem}.txt"), stem


@pytest.mark.parametrize("name", MODELS)
def test_pairs_encode_to_the_teacher_forced_ids(vocabs, name):
    expected = MARIAN / name / "expected"
    recorded = np.load(expected / "logprobs.npz")
    source, target = renumbered(name, target=False), renumbered(name, target=True)
    pairs = [line.split("\t") for line in lines(expected / "pairs.tsv")]
    assert len(pairs) == 30
    assert vocabs[name].encode_texts([t for _, t in pairs]) == \
        [target(recorded[f"tgt_{i}"]) for i in range(30)]
    assert vocabs[name].encode_input_texts([s for s, _ in pairs]) == \
        [source(recorded[f"src_{i}"]) for i in range(30)]


# transformers 5.23's tokenizer(line)["input_ids"] / tokenizer(text_target=line)["input_ids"]
# (Marian ids) of lines holding its added tokens </s>, <unk>, <pad>: the line is cut there,
# each segment tokenized alone (a >>xxx<< at its start cut off). Printed by
# marian/check_tokenizer.py (README: "Checking t2t-lite's vocabulary").
SPECIALS = [
    ("separate_relu", "source", "eleven</s>eleven", [23, 6, 8, 0, 23, 6, 8, 0]),
    ("separate_relu", "source", "<unk>>>deu<< one", [1, 1, 34, 0]),
    ("separate_relu", "source", "a <pad> b", [23, 3, 60, 23, 1, 0]),
    ("separate_relu", "source", ">>deu<< one</s>>>fra<< two", [1, 34, 0, 1, 45, 0]),
    ("separate_relu", "source", " </s> ", [0, 0]),
    ("separate_relu", "source", ">>de</s>u<< one", [23, 1, 46, 4, 0, 23, 55, 1, 34, 0]),
    ("multilingual_gelu", "source", ">>deu<< one</s>>>fra<< two", [2, 176, 0, 3, 208, 0]),
    ("multilingual_gelu", "target", "eleven</s>eleven",
     [118, 35, 17, 1, 17, 36, 0, 118, 35, 17, 1, 17, 36, 0]),
    ("multilingual_gelu", "target", ">>deu<< one</s>>>fra<< two",
     [2, 83, 44, 36, 17, 0, 3, 83, 63, 1, 44, 0]),
    ("multilingual_gelu", "target", ">>de</s>u<< one",
     [83, 1, 12, 17, 0, 83, 68, 1, 83, 44, 36, 17, 0]),
]


@pytest.mark.parametrize("name,side,line,marian_ids", SPECIALS)
def test_special_tokens_written_in_a_line_are_their_ids(vocabs, name, side, line, marian_ids):
    vocab = vocabs[name]
    encode = vocab.encode_input_texts if side == "source" else vocab.encode_texts
    assert encode([line]) == [renumbered(name, target=side == "target")(marian_ids)]


def test_sizes_pieces_and_language_tokens(vocabs):
    sizes = {name: (v.vocab_size, v.source_vocab_size, v.separate_vocabs, list(v.language_tokens))
             for name, v in vocabs.items()}
    assert sizes == {"shared_swish": (188, 188, False, []),
                     "separate_relu": (51, 61, True, []),
                     "multilingual_gelu": (240, 240, False, [">>deu<<", ">>fra<<", ">>spa<<"])}
    relu = vocabs["separate_relu"]
    assert relu.pieces()[:5] == ["<pad>", "</s>", "<unk>", "-", "cinq"]
    assert relu.source_pieces()[:5] == ["<pad>", "</s>", "<unk>", "-", "a"]
    assert relu.pieces([50, 3]) == ["▁vingt", "-"]
    assert vocabs["multilingual_gelu"].pieces([3, 4, 5]) == [">>deu<<", ">>fra<<", ">>spa<<"]


def test_decode_stops_at_eos_drops_pad_and_skips_unk(vocabs):
    gelu = vocabs["multilingual_gelu"]
    assert gelu.pieces([7, 8, 9, 10, 239]) == ["a", "acht", "achtund", "achtz", "▁zweiund"]
    # unk (2) and ids outside the table give nothing; a language token is text, as in
    # transformers; PAD (0) is dropped; the first EOS (1) ends the line
    assert gelu.decode_ids([[7, 2, 8, 0, 9, 1, 10], [1, 7], [0, 0],
                            [239, 240, 5000, 4]]) == ["aachtachtund", "", "", "zweiund>>fra<<"]


def test_multilingual_lines_without_a_language_token_are_refused(vocabs):
    gelu = vocabs["multilingual_gelu"]
    for i, line in enumerate(REFUSED):
        with pytest.raises(T2TError) as eager:
            gelu.encode_inputs(tf.constant([">>deu<< one", line]))
        assert str(eager.value) == f"{REFUSAL} Refused: {line!r}."
        with pytest.raises(T2TError) as checked:
            gelu.check_inputs([">>fra<< two", "", line], first_line=10)
        assert str(checked.value) == f"{REFUSAL} Refused line 12: {line!r}."
    long_line = "one " * 30
    with pytest.raises(T2TError, match=r"Refused line 1: 'one one one one .{41}\.\.\.'\.$"):
        gelu.check_inputs([long_line])
    # blank lines (answered "" without translating) and known tokens pass, >>spa<< too
    gelu.check_inputs(["", " ", "\t", ">>deu<<", ">>spa<< thirty", ">>deu<<thirty"])
    # models of one target language check nothing (a >>xxx<< there is <unk>, as transformers)
    swish = vocabs["shared_swish"]
    swish.check_inputs(list(REFUSED))
    assert swish.encode_inputs(tf.constant([">>ita<< one"])).to_list()[0][:1] == [2]
    # targets are never checked
    assert gelu.encode_texts(["drei"])[0][-1] == 1


def test_tokenize_with_offsets_spans_the_language_token(vocabs):
    gelu = vocabs["multilingual_gelu"]
    ids, starts, ends = gelu.tokenize_with_offsets([">>deu<< eleven €", ">>fra<<"])
    assert [gelu.source_pieces(row) for row in ids] == [
        [">>deu<<", "▁", "el", "even", "▁", "<unk>", "</s>"], [">>fra<<", "</s>"]]
    # byte spans in the UTF-8 line; '€' is 3 bytes; EOS empty at the end
    assert starts == [[0, 8, 8, 10, 14, 15, 18], [0, 7]]
    assert ends == [[7, 8, 10, 14, 15, 18, 18], [7, 7]]
    with pytest.raises(T2TError, match="Refused line 1: 'eleven'"):
        gelu.tokenize_with_offsets(["eleven"])
    relu = vocabs["separate_relu"]
    ids, starts, ends = relu.tokenize_with_offsets(["eleven</s>eleven", "<unk> one"])
    assert [relu.source_pieces(row) for row in ids] == [
        ["▁", "el", "even", "</s>", "▁", "el", "even", "</s>"], ["<unk>", "▁one", "</s>"]]
    assert starts == [[0, 0, 2, 6, 10, 10, 12, 16], [0, 6, 9]]
    assert ends == [[0, 2, 6, 10, 10, 12, 16, 16], [5, 9, 9]]


class _Module(tf.Module):
    """Holds a vocabulary and uses it inside tf.function, as the exporter does."""

    def __init__(self, vocab):
        super().__init__()
        self.vocab = vocab

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string)], autograph=False)
        def round_trip(inputs):
            ids = vocab.encode_inputs(inputs)                     # [B, (S)]
            return {"ids": ids.to_tensor(), "texts": vocab.decode(ids.to_tensor())}

        self.round_trip = round_trip


def test_a_saved_model_encodes_decodes_and_refuses_in_graph(vocabs, tmp_path):
    gelu = vocabs["multilingual_gelu"]
    tf.saved_model.save(_Module(gelu), str(tmp_path / "saved"))
    loaded = tf.saved_model.load(str(tmp_path / "saved"))
    out = loaded.round_trip(tf.constant([">>deu<< eleven", ""]))
    # input.txt's '>>deu<< eleven' is 2 83 22 24 0 in Marian's ids (<pad> 239): each
    # id + 1 here, </s> 1; the blank line is </s> alone, padded with <pad> 0
    assert out["ids"].numpy().tolist() == [[3, 84, 23, 25, 1], [1, 0, 0, 0, 0]]
    assert [t.decode() for t in out["texts"].numpy()] == [">>deu<< eleven", ""]
    with pytest.raises(tf.errors.InvalidArgumentError) as refused:
        loaded.round_trip(tf.constant([">>deu<< one", "three hundred and twelve"]))
    assert REFUSAL in refused.value.message


def test_t2t_decoder_refuses_a_line_without_a_language_token(tmp_path, capsys):
    """A model directory with the multilingual vocabulary (random weights of a tiny
    transformer): t2t-decoder translates lines with a language token and refuses a file
    holding one without, in one line naming it."""
    vocab_path = write_vocab(str(MARIAN / "multilingual_gelu"), str(tmp_path))
    out = tmp_path / "model"
    hparams = registry.hparams("transformer_tiny").parse(
        "hidden_size=16,filter_size=32,num_hidden_layers=1,num_heads=2")
    model = t2t_lite.build_model(hparams, 240)
    model_dir_writer.prepare(str(out), hparams, "translate_ende_numbers", vocab_path, 240, None)
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), str(out),
                               max_to_keep=1).save(checkpoint_number=1)
    good, bad = tmp_path / "good.txt", tmp_path / "bad.txt"
    good.write_text(">>deu<< one\n\n>>fra<< two\n", encoding="utf-8")
    bad.write_text(">>deu<< one\n\nthree hundred and twelve\n", encoding="utf-8")
    flags = [f"--output_dir={out}", "--decode_hparams=beam_size=1,extra_length=2"]
    assert t2t_decoder.main(flags + [f"--decode_from_file={good}",
                                     f"--decode_to_file={tmp_path / 'good.out'}"]) == 0
    assert len((tmp_path / "good.out").read_text(encoding="utf-8").split("\n")) == 4
    capsys.readouterr()
    assert t2t_decoder.main(flags + [f"--decode_from_file={bad}",
                                     f"--decode_to_file={tmp_path / 'bad.out'}"]) == 1
    assert capsys.readouterr().err == (f"t2t-decoder: error: {REFUSAL} Refused line 3: "
                                       "'three hundred and twelve'.\n")


def test_model_dir_loads_it_by_its_file_name(vocabs, tmp_path):
    write_vocab(str(MARIAN / "separate_relu"), str(tmp_path))
    vocab = model_dir.load_vocab_file(str(tmp_path / VOCAB_FILE))
    assert isinstance(vocab, MarianVocab)
    assert vocab.model_proto == (tmp_path / VOCAB_FILE).read_bytes()
    assert vocab.encode_texts(["vingt-deux"]) == vocabs["separate_relu"].encode_texts(
        ["vingt-deux"])


def test_the_file_holds_both_spm_models_and_the_renumbered_tables(tmp_path):
    stored = json.loads(pathlib.Path(write_vocab(str(MARIAN / "separate_relu"),
                                                 str(tmp_path))).read_text(encoding="utf-8"))
    assert base64.b64decode(stored["source_spm"]) == \
        (MARIAN / "separate_relu" / "source.spm").read_bytes()
    assert base64.b64decode(stored["target_spm"]) == \
        (MARIAN / "separate_relu" / "target.spm").read_bytes()
    assert (stored["format"], stored["version"], stored["separate_vocabs"]) == \
        ("t2t-lite Marian vocabulary", 1, True)
    # target_vocab.json: </s> 0, <unk> 1, '-' 2, ..., '▁vingt' 49, <pad> 50
    assert stored["target_pieces"][:4] == ["<pad>", "</s>", "<unk>", "-"]
    assert stored["target_pieces"][-1] == "▁vingt" and len(stored["target_pieces"]) == 51
    assert len(stored["source_pieces"]) == 61


def _damage(directory: pathlib.Path, how: str) -> str:
    """Breaks a copy of a Marian directory; returns the start of the expected message."""
    if how == "no source.spm":
        (directory / "source.spm").unlink()
        return f"{directory / 'source.spm'} is missing"
    if how == "target.spm not SentencePiece":
        (directory / "target.spm").write_bytes(b"\x0a\xff\xff not a model")
        return f"Corrupt {directory / 'target.spm'}: not a SentencePiece model"
    if how == "vocab.json cut short":
        data = (directory / "vocab.json").read_bytes()
        (directory / "vocab.json").write_bytes(data[:len(data) // 2])
        return f"Corrupt {directory / 'vocab.json'}: "
    table = json.loads((directory / "target_vocab.json").read_text(encoding="utf-8"))
    if how == "target ids not a permutation":
        table["-"] = table["cinq"]
        message = "the ids of its 51 pieces are not 0 .. 50, each once"
    elif how == "no <pad>":
        table["<PAD>"] = table.pop("<pad>")
        message = "no pad piece '<pad>'"
    else:  # "a string id"
        table["-"] = str(table["-"])
        message = "expected a JSON object of pieces and integer ids"
    (directory / "target_vocab.json").write_text(json.dumps(table), encoding="utf-8")
    return f"Corrupt {directory / 'target_vocab.json'}: {message}"


@pytest.mark.parametrize("how", ["no source.spm", "target.spm not SentencePiece",
                                 "vocab.json cut short", "target ids not a permutation",
                                 "no <pad>", "a string id"])
def test_a_damaged_marian_directory_is_refused_in_one_line(tmp_path, how):
    directory = tmp_path / "marian"
    shutil.copytree(MARIAN / "separate_relu", directory)
    expected = _damage(directory, how)
    with pytest.raises(T2TError) as refused:
        write_vocab(str(directory), str(tmp_path))
    assert str(refused.value).startswith(expected)
    assert "\n" not in str(refused.value)
    assert not (tmp_path / VOCAB_FILE).exists()


@pytest.fixture(scope="module")
def stored_file(tmp_path_factory):
    """The bytes of shared_swish's marian_vocab.json."""
    directory = tmp_path_factory.mktemp("stored")
    return pathlib.Path(write_vocab(str(MARIAN / "shared_swish"), str(directory))).read_bytes()


def _changed(data: bytes, **changes) -> bytes:
    value = json.loads(data)
    value.update(changes)
    return json.dumps(value).encode("utf-8")


@pytest.mark.parametrize("how,message", [
    ("cut short", "Corrupt {path}: Unterminated string"),
    ("another format", "Corrupt {path}: not a t2t-lite Marian vocabulary (written by t2t-import)."),
    ("version 2", "{path} is a t2t-lite Marian vocabulary of version 2; this t2t-lite reads "
                  "version 1."),
    ("spm not base64", "Corrupt {path}: target_spm is not base64."),
    ("spm not SentencePiece", "Corrupt {path} (source_spm): not a SentencePiece model"),
    ("a piece twice", "Corrupt {path}: target_pieces holds a piece twice."),
    ("pieces not a list", "Corrupt {path}: source_pieces is not a list of at least 3 pieces."),
])
def test_a_damaged_vocabulary_file_is_refused_in_one_line(stored_file, tmp_path, how, message):
    data = {
        "cut short": lambda d: d[:len(d) // 2],
        "another format": lambda d: _changed(d, format="something else"),
        "version 2": lambda d: _changed(d, version=2),
        "spm not base64": lambda d: _changed(d, target_spm="not base64!"),
        "spm not SentencePiece": lambda d: _changed(
            d, source_spm=base64.b64encode(b"\x0a\xff\xff").decode()),
        "a piece twice": lambda d: _changed(
            d, target_pieces=json.loads(d)["target_pieces"] + ["-"]),
        "pieces not a list": lambda d: _changed(d, source_pieces="<pad> </s> <unk>"),
    }[how](stored_file)
    path = tmp_path / VOCAB_FILE
    path.write_bytes(data)
    with pytest.raises(T2TError) as refused:
        model_dir.load_vocab_file(str(path))
    assert str(refused.value).startswith(message.format(path=path))
    assert "\n" not in str(refused.value)


def test_a_missing_vocabulary_file_is_refused_in_one_line(tmp_path):
    with pytest.raises(T2TError, match=r"^No Marian vocabulary at .*marian_vocab\.json\.$"):
        model_dir.load_vocab_file(str(tmp_path / VOCAB_FILE))
