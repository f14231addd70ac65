"""Subword regularization in t2t-datagen: sampled segmentations, reproducible bytes.

On real Multi30k sentences with a small unigram vocabulary learned here: every
draw is a segmentation of the sentence (it decodes back to it), a draw depends
on (copy, side, text) alone, a sharp alpha gives the best segmentation, and
t2t-datagen writes K copies per pair with the same bytes in two runs.
"""

import hashlib
import json

import pytest
import sentencepiece as spm

from t2t_lite.bin import t2t_datagen
from t2t_lite.data.datagen import generate_data
from t2t_lite.data.layout import EOS_ID
from t2t_lite.data.subword_sampling import SubwordSampling, from_flags, sample_ids
from t2t_lite.data.vocab import train_sentencepiece
from t2t_lite.errors import T2TError


@pytest.fixture(scope="module")
def sentences(request):
    from paths import SHARED_DATA
    path = SHARED_DATA / "multi30k" / "train.en"
    if not path.is_file():
        pytest.skip(f"real data samples not found at {SHARED_DATA}")
    with open(path, encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(400)]


@pytest.fixture(scope="module")
def processor(sentences):
    return spm.SentencePieceProcessor(model_proto=train_sentencepiece(sentences, 600))


def test_every_draw_is_a_segmentation_of_the_sentence_and_repeats(processor, sentences):
    sampling = SubwordSampling(copies=2, nbest=64, alpha=0.1)
    for text in sentences[:50]:
        ids = sample_ids(processor, text, 1, "source", sampling)
        assert ids[-1] == EOS_ID and EOS_ID not in ids[:-1]
        assert processor.decode(ids[:-1]) == text
        assert sample_ids(processor, text, 1, "source", sampling) == ids


def test_copies_and_sides_draw_differently_and_a_sharp_alpha_gives_the_best(processor,
                                                                           sentences):
    sampling = SubwordSampling(copies=2, nbest=64, alpha=0.1)
    texts = sentences[:100]
    best = [processor.encode(t) + [EOS_ID] for t in texts]
    copy0 = [sample_ids(processor, t, 0, "source", sampling) for t in texts]
    copy1 = [sample_ids(processor, t, 1, "source", sampling) for t in texts]
    target = [sample_ids(processor, t, 0, "target", sampling) for t in texts]
    assert sum(a != b for a, b in zip(copy0, copy1)) > 50
    assert sum(a != b for a, b in zip(copy0, target)) > 50
    assert sum(a != b for a, b in zip(copy0, best)) > 50
    # alpha=1000: a segmentation behind the best by 0.05 in log probability has weight
    # e^-50 against it. (Near ties exist: "▁n e w" and "▁ ne w" differ by 0.015.)
    sharp = SubwordSampling(copies=1, nbest=64, alpha=1000.0)
    clear = [t for t in texts if gap(processor, t) >= 0.05]
    assert len(clear) > 80
    assert ([sample_ids(processor, t, 0, "source", sharp) for t in clear]
            == [processor.encode(t) + [EOS_ID] for t in clear])


def gap(processor, text):
    """How far the best segmentation's log probability leads the second best's."""
    first, second = processor.nbest_encode_as_proto(text, nbest_size=2).nbests
    return first.score - second.score


@pytest.mark.parametrize("settings, message", [
    (dict(copies=-1), "--subword_samples must be between 0 and 1000, not -1."),
    (dict(copies=2, nbest=1), "--subword_nbest must be between 2 and 1000, not 1."),
    (dict(copies=2, alpha=0.0), "--subword_alpha must be a positive number, not 0.0."),
    (dict(copies=2, alpha=float("nan")), "--subword_alpha must be a positive number, not nan."),
    (dict(copies=None, alpha=0.5), "--subword_nbest and --subword_alpha need --subword_samples."),
])
def test_bad_settings_are_one_line(settings, message):
    with pytest.raises(T2TError) as error:
        from_flags(settings.get("copies"), settings.get("nbest"), settings.get("alpha"))
    assert str(error.value) == message


def datagen(data_dir, corpus, *flags, capsys):
    code = t2t_datagen.main([f"--data_dir={data_dir}", "--source_lang=en", "--target_lang=de",
                             f"--train_files={corpus}", "--vocab_size=500", *flags])
    out = capsys.readouterr().out
    assert code == 0, out
    meta = json.loads((data_dir / "translate_ende_files.datagen.json").read_text())
    return meta, out


def shard_digests(data_dir, meta):
    return [hashlib.sha256((data_dir / name).read_bytes()).hexdigest()
            for name in meta["splits"]["train"]["shards"]]


def test_datagen_writes_k_copies_with_the_same_bytes_and_rewrites_on_change(
        shared_data, tmp_path, capsys):
    pairs = []
    with open(shared_data / "multi30k" / "train.en", encoding="utf-8") as en, \
            open(shared_data / "multi30k" / "train.de", encoding="utf-8") as de:
        for _ in range(300):
            pairs.append(f"{next(en).rstrip()}\t{next(de).rstrip()}\n")
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("".join(pairs), encoding="utf-8")
    sampled = ("--subword_samples=3", "--subword_alpha=0.2")

    one, out = datagen(tmp_path / "a", corpus, *sampled, capsys=capsys)
    train = one["splits"]["train"]
    kept_pairs = train["examples"] // 3
    assert train["examples"] == 3 * kept_pairs and kept_pairs >= 250  # the rest: held-out dev
    assert train["subword_sampling"] == {"copies": 3, "nbest": 64, "alpha": 0.2}
    assert "3 sampled segmentations of each pair (from the 64 best, alpha 0.2)" in out
    assert "subword_sampling" not in one["splits"]["dev"]
    two, _ = datagen(tmp_path / "b", corpus, *sampled, capsys=capsys)
    assert shard_digests(tmp_path / "a", one) == shard_digests(tmp_path / "b", two)
    # One encoding thread rather than one per core: the same bytes.
    generate_data("translate_ende_files", str(tmp_path / "b"), log=print, threads=1,
                  subword_sampling=SubwordSampling(copies=2, alpha=0.2))
    generate_data("translate_ende_files", str(tmp_path / "b"), log=print, threads=1,
                  subword_sampling=SubwordSampling(copies=3, alpha=0.2))
    capsys.readouterr()
    three = json.loads((tmp_path / "b" / "translate_ende_files.datagen.json").read_text())
    assert shard_digests(tmp_path / "a", one) == shard_digests(tmp_path / "b", three)

    # The same settings again: reused; so is the recorded setting when none is given (as
    # t2t-trainer --generate_data gives none). t2t-datagen without the flags: written again.
    for flags in (sampled, ()):
        _, out = datagen(tmp_path / "a", corpus, *flags, capsys=capsys)
        assert f"train: reusing {3 * kept_pairs:,} examples" in out
    generate_data("translate_ende_files", str(tmp_path / "a"), log=print)
    assert f"train: reusing {3 * kept_pairs:,} examples" in capsys.readouterr().out
    plain, out = datagen(tmp_path / "a", corpus, "--subword_samples=0", capsys=capsys)
    assert plain["splits"]["train"]["examples"] == kept_pairs
    assert "subword_sampling" not in plain["splits"]["train"]
    assert plain["splits"]["train"]["target_subwords"] < train["target_subwords"] / 3
    assert "dev: reusing" in out


def test_a_tensor2tensor_vocabulary_is_refused_in_one_line(tmp_path, capsys):
    """Sampling needs SentencePiece's n-best: with a t2t SubwordTextEncoder file
    (`--vocab_from=FILE.subwords`) t2t-datagen stops in one line, writing no shard."""
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("".join(f"a b {i}\tb a {i}\n" for i in range(40)), encoding="utf-8")
    subtokens = ["<pad>_", "<EOS>_", "a", "b", "_", " ", "\\", "u", ";", *"0123456789"]
    vocab = tmp_path / "hand.subwords"
    vocab.write_text("".join(f"'{s}'\n" for s in subtokens), encoding="utf-8")
    code = t2t_datagen.main([f"--data_dir={tmp_path / 'data'}", "--source_lang=en",
                             "--target_lang=de", f"--train_files={corpus}",
                             f"--vocab_from={vocab}", "--subword_samples=2"])
    captured = capsys.readouterr()
    assert code != 0
    errors = [line for line in captured.err.splitlines() if line.strip()]
    assert len(errors) == 1 and "needs a SentencePiece vocabulary" in errors[0], captured.err
    assert not list((tmp_path / "data").glob("*-train-*"))


@pytest.mark.parametrize("damaged", [{"copies": "3", "nbest": 64, "alpha": 0.2},
                                     {"copies": 3}, [3, 64, 0.2],
                                     {"copies": -1, "nbest": 64, "alpha": 0.2},
                                     {"copies": True, "nbest": 64, "alpha": 0.2},
                                     {"copies": 3, "nbest": 64, "alpha": True}])
def test_a_damaged_recorded_setting_is_one_line(shared_data, tmp_path, capsys, damaged):
    """Without --subword_samples datagen takes the recorded setting; a record that is not
    one (hand-edited, damaged) stops it in one line naming the file."""
    with open(shared_data / "multi30k" / "train.en", encoding="utf-8") as en, \
            open(shared_data / "multi30k" / "train.de", encoding="utf-8") as de:
        pairs = [f"{next(en).rstrip()}\t{next(de).rstrip()}\n" for _ in range(60)]
    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("".join(pairs), encoding="utf-8")
    meta, _ = datagen(tmp_path / "d", corpus, "--subword_samples=2", capsys=capsys)
    meta["splits"]["train"]["subword_sampling"] = damaged
    path = tmp_path / "d" / "translate_ende_files.datagen.json"
    path.write_text(json.dumps(meta), encoding="utf-8")
    code = t2t_datagen.main([f"--data_dir={tmp_path / 'd'}", "--source_lang=en",
                             "--target_lang=de", f"--train_files={corpus}", "--vocab_size=500"])
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code != 0 and len(errors) == 1, errors
    assert f"{path} records subword_sampling {damaged!r}, not a setting" in errors[0]
