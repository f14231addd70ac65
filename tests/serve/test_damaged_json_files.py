"""The JSON files t2t-server reads at start-up (an export's assets.extra, a model directory's
hparams.json) stop it in one line when Python cannot read them, also for an integer of more
than 4,300 digits (a ValueError, not a JSONDecodeError)."""

import pytest

from t2t_lite import model_dir
from t2t_lite.errors import T2TError
from t2t_lite.serve.saved_model_engine import SavedModelEngine

LONG = "9" * 5_000
LONG_MESSAGE = ("Exceeds the limit (4300 digits) for integer string conversion: value has 5000 "
                "digits; use sys.set_int_max_str_digits() to increase the limit")


@pytest.mark.parametrize("name, text, message", [
    ("export.json", '{"decode_params": {"max_input_length": %s}}' % LONG, LONG_MESSAGE),
    ("hparams.json", '{"max_length": %s}' % LONG, LONG_MESSAGE),
    ("problem.json", '{"vocab_file": "vocab', "Unterminated string starting at: line 1 "
                                              "column 16 (char 15)"),
    ("export.json", "[1]", "expected a JSON object, got list."),
], ids=["long-integer", "long-integer-hparams", "truncated", "not-an-object"])
def test_an_exports_damaged_json_is_one_error(tmp_path, name, text, message):
    (tmp_path / "assets.extra").mkdir()
    path = tmp_path / "assets.extra" / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(T2TError) as raised:
        SavedModelEngine._lengths_of(str(tmp_path))  # pylint: disable=protected-access
    assert str(raised.value) == f"Corrupt {path}: {message}"


def test_a_model_directorys_long_integer_is_one_error(tmp_path):
    (tmp_path / model_dir.PROBLEM_FILE).write_text(
        '{"problem": "p", "vocab_file": "v.model", "vocab_size": 3}', encoding="utf-8")
    (tmp_path / model_dir.HPARAMS_FILE).write_text('{"max_length": %s}' % LONG, encoding="utf-8")
    with pytest.raises(T2TError) as raised:
        model_dir.ModelDir.open(str(tmp_path))
    assert str(raised.value) == f"Corrupt {tmp_path / model_dir.HPARAMS_FILE}: {LONG_MESSAGE}"
