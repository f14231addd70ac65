"""t2t-import --marian_dir writes a model directory that t2t-decoder reads as its own and
decodes, with no decode flags, as transformers' `MarianMTModel.generate` did with the
model's generation_config.json (the committed outputs in tests/t2t_import/marian/*/expected/).

Lines t2t-lite does not translate as transformers does are left out, each for a documented
reason: an empty or whitespace-only line gives an empty line without decoding
(docs/decoding.md; transformers translates the lone `</s>`), and a multilingual model's
line without one of its language tokens is refused.
"""

import json
import re

import numpy as np
import pytest

from marian_models import MARIAN, expected, importer
from t2t_lite import model_dir
from t2t_lite.bin import t2t_decoder, t2t_import
from t2t_lite.marian.problem import MarianProblem


def run(capfd, program, *flags):
    code = program.main([*map(str, flags)])
    captured = capfd.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """name -> the model directory t2t-import wrote for it (each imported once)."""
    return importer(tmp_path_factory)


def test_the_model_directory_records_the_generation_settings(imported):
    opened = model_dir.ModelDir.open(str(imported("shared_swish")))
    assert opened.info == {"problem": "marian_en_de", "vocab_file": "marian_vocab.json",
                           "vocab_size": 188}
    problem = opened.problem()
    assert isinstance(problem, MarianProblem)
    # generation_config.json: num_beams 4, max_length 512, bad_words_ids [[187]] (<pad>),
    # forced_eos_token_id 0 (</s>), renormalize_logits true; length_penalty by default 1.0.
    assert problem.search_defaults == {
        "beam_size": 4, "alpha": 1.0, "length_penalty": "fairseq",
        "stop_rule": "transformers", "forbid_pad": True, "forced_eos": True,
        "renormalize": True, "max_output_length": 511}
    record = json.loads((imported("shared_swish") / "marian_import.json").read_text())
    assert sorted(record["files"]) == ["config.json", "generation_config.json", "model.safetensors",
                                       "source.spm", "target.spm", "tokenizer_config.json",
                                       "vocab.json"]


@pytest.mark.parametrize("name", ["shared_swish", "separate_relu"])
def test_the_decoder_writes_transformers_beam_translations(capfd, imported, tmp_path, name):
    lines = expected(name, "input.txt")
    beam = {"shared_swish": "beam4", "separate_relu": "beam4"}[name]
    out = tmp_path / "out.txt"
    code, _, err = run(capfd, t2t_decoder, f"--output_dir={imported(name)}",
                       f"--decode_from_file={MARIAN / name / 'expected' / 'input.txt'}",
                       f"--decode_to_file={out}")
    assert code == 0, err
    got = out.read_text(encoding="utf-8").split("\n")[:-1]
    want = expected(name, f"{beam}.txt")
    assert len(got) == len(lines) == len(want)
    compared = [i for i, line in enumerate(lines) if line.strip()]
    assert len(compared) == len(lines) - 2  # the empty line and the lone space
    assert [got[i] for i in compared] == [want[i] for i in compared]
    assert [got[i] for i, line in enumerate(lines) if not line.strip()] == ["", ""]


def test_the_decoder_writes_transformers_greedy_translations(capfd, imported, tmp_path):
    name = "multilingual_gelu"
    lines = expected(name, "input.txt")
    want = expected(name, "greedy.txt")
    # Every line with one of the model's language tokens first (the refused lines: one
    # without a token, >>ita<<, and one with a space before its token).
    tagged = [i for i, line in enumerate(lines) if re.match(r">>(deu|fra|spa)<<", line)]
    assert len(tagged) == 58
    source = tmp_path / "in.txt"
    source.write_text("".join(lines[i] + "\n" for i in tagged), encoding="utf-8")
    out = tmp_path / "out.txt"
    code, _, err = run(capfd, t2t_decoder, f"--output_dir={imported(name)}",
                       f"--decode_from_file={source}", f"--decode_to_file={out}",
                       "--decode_hparams=beam_size=1")
    assert code == 0, err
    assert out.read_text(encoding="utf-8").split("\n")[:-1] == [want[i] for i in tagged]


def test_a_second_import_into_the_same_directory_is_refused(capfd, imported):
    code, _, err = run(capfd, t2t_import, f"--marian_dir={MARIAN / 'shared_swish'}",
                       f"--output_dir={imported('shared_swish')}")
    assert code == 1
    assert err.strip().endswith("exists and is not empty; import into a new directory.")
    assert len(err.strip().splitlines()) == 1


def test_t2t_flags_with_marian_dir_are_a_usage_error(capfd, tmp_path):
    with pytest.raises(SystemExit) as stop:
        t2t_import.main([f"--marian_dir={MARIAN / 'shared_swish'}", "--t2t_data_dir=d",
                         f"--output_dir={tmp_path / 'm'}"])
    assert stop.value.code == 2
    assert "--t2t_data_dir belong to a tensor2tensor import" in capfd.readouterr().err


@pytest.mark.parametrize("name", ["shared_swish", "separate_relu", "multilingual_gelu"])
def test_scores_of_pairs_are_transformers_log_probabilities(capfd, imported, tmp_path, name):
    """t2t-decoder --score_file: the sum of transformers' teacher-forced log-probabilities
    (logprobs.npz) of each pair, targets encoded with the target side (separate_relu's
    own French vocabulary; multilingual_gelu's targets carry no language token)."""
    recorded = np.load(MARIAN / name / "expected" / "logprobs.npz")
    pairs = MARIAN / name / "expected" / "pairs.tsv"
    out = tmp_path / "scores.txt"
    code, _, err = run(capfd, t2t_decoder, f"--output_dir={imported(name)}",
                       f"--score_file={pairs}", f"--decode_to_file={out}")
    assert code == 0, err
    got = [float(x) for x in out.read_text().split()]
    want = [float(recorded[f"logp_{i}"].sum()) for i in range(30)]
    assert len(got) == 30
    np.testing.assert_allclose(got, want, atol=1e-4 + 5e-5)  # printed with 4 decimals
