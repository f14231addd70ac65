"""t2t-server's answers are t2t-decoder's lines, with scores up to float rounding.

The promise docs/serving.md makes of either engine, checked on the shared numbers model:
a sentence keeps its best translation whatever its batch-mates, and its scores move by
float rounding only (README_SCORE_BOUND).
"""

import numpy as np
import pytest

pytest.importorskip("ctranslate2", reason="pip install -e '.[test]' (ctranslate2)")

from t2t_lite import registry  # noqa: E402
from t2t_lite.decode.decoding import decode_lines  # noqa: E402

from conftest import CTRANSLATE2_DECODE as DECODE  # noqa: E402
from paths import REPO_ROOT  # noqa: E402


def numbers_test_sources():
    """The numbers problem's first 400 test sentences."""
    return [s for s, _ in list(registry.problem("translate_ende_numbers").raw_pairs(
        "test", None))[:400]]


# -- t2t-server's answers: t2t-decoder's lines, scores up to float rounding ------------

# What the serving docs state of every answer, and checks here: a sentence
# in other batch-mates than t2t-decoder gives it keeps its line (the best translation)
# and moves its scores by float rounding only, at most this much.
README_SCORE_BOUND = "2e-5"


def in_batches(engine, lines, batches):
    """The engine's `Translation` of each line, translated in `batches` (index lists)."""
    results = [None] * len(lines)
    for batch in batches:
        for i, translation in zip(batch, engine.translate([lines[i] for i in batch])):
            results[i] = translation
    return results


def decoder_batches(engine, lines, batch_size):
    """t2t-decoder's batches of `lines` (`decode_lines`: longest first, stable)."""
    lengths = engine.token_lengths(lines)
    order = sorted(range(len(lines)), key=lambda i: -lengths[i])
    return [order[begin:begin + batch_size] for begin in range(0, len(order), batch_size)]


@pytest.mark.parametrize("engine_name", ["tensorflow", "ctranslate2"])
def test_a_servers_answer_is_the_decoders_line_whatever_its_batch_mates(numbers_model,
                                                                       numbers_model_copy,
                                                                       engine_name):
    """Each of the 400 test sentences translated by t2t-server's engine in shuffled
    batches of 8 (other requests' sentences of other lengths as batch-mates) against
    t2t-decoder's batches (the TF engine in `decode_lines`' batches, whose lines it
    writes exactly; CTranslate2: the whole input in one call, as t2t-decoder
    --engine=ctranslate2 makes it): every best translation (the decoder's line) the
    same, and every beam found in both scored within README_SCORE_BOUND."""
    from t2t_lite.serve.ctranslate2_engine import CT2Engine
    from t2t_lite.model_dir import ModelDir
    from t2t_lite.serve.engine import TFEngine

    model_dir, sources = numbers_model.path, numbers_test_sources()
    decode = DECODE + ",return_beams=true,write_beam_scores=true"
    if engine_name == "tensorflow":
        engine = TFEngine.load(ModelDir.open(model_dir), decode)
        batches = decoder_batches(engine, sources, engine.options.batch_size)
        decoder = in_batches(engine, sources, batches)
        assert [t.line for t in decoder] == decode_lines(
            engine.translator, sources, engine.options, postprocess=engine.problem.postprocess)
    else:  # converted into the copy's cache, not the shared model directory
        engine = CT2Engine.load(ModelDir.open(numbers_model_copy), decode)
        decoder = engine.translate(sources)
    order = list(range(len(sources)))
    np.random.default_rng(0).shuffle(order)
    served = in_batches(engine, sources, [order[b:b + 8] for b in range(0, len(order), 8)])
    assert [t.best for t in served] == [t.best for t in decoder]
    moves = [abs(a - b) for s, d in zip(served, decoder)  # beams at the same rank
             for h, a, g, b in zip(s.hypotheses, s.scores, d.hypotheses, d.scores) if h == g]
    assert len(moves) >= 3 * len(sources)
    assert max(moves) <= float(README_SCORE_BOUND)


def test_the_serving_docs_state_what_is_checked():
    """README.md (or the docs page it moves to) promises the best translation and the
    score bound checked above, not every written line bit for bit."""
    pages = [REPO_ROOT / "README.md"] + sorted((REPO_ROOT / "docs").rglob("*.md"))
    texts = {page.relative_to(REPO_ROOT).as_posix(): " ".join(
        page.read_text(encoding="utf-8").split()) for page in pages}
    promise = (f"every best translation, the line written by default, the same, and every "
               f"score within {README_SCORE_BOUND}")
    assert any(promise in text for text in texts.values())
    stale = [name for name, text in texts.items()
             if "Every output is what `t2t-decoder` writes" in text]
    assert stale == [], "these pages still promise every output bit for bit"
