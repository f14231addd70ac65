"""Every documented command parses, every link resolves, and the docs speak to users.

Commands are collected from README.md and docs/ (`docs_commands`); each runs
through its program's own argument handling, so a renamed, removed or
misspelled flag, or a missing required one, fails here naming the page and line.
"""

import re

import pytest

from docs_commands import Command, broken_links, check, commands, doc_pages
from paths import REPO_ROOT

ALL_COMMANDS = [c for page in doc_pages() for c in commands(page)]


def test_the_docs_have_commands_of_every_program():
    programs = {c.program for c in ALL_COMMANDS}
    assert len(ALL_COMMANDS) >= 45  # 48 when this was written
    assert {"t2t-datagen", "t2t-trainer", "t2t-decoder", "t2t-exporter", "t2t-server",
            "t2t-avg-checkpoints", "t2t-tune-decoder", "t2t-import", "t2t-bleu",
            "recipes/multi30k_ende.py"} <= programs


@pytest.mark.parametrize("command", ALL_COMMANDS, ids=lambda c: c.where)
def test_each_documented_command_parses(command):
    assert check(command) is None


@pytest.mark.parametrize("text, problem", [
    ("t2t-trainer --problem=translate_ende_numbers --hparams_set=transformer_tiny "
     "--data_dir=D --output_dir=M --train_step=10", "unrecognized arguments: --train_step=10"),
    ("t2t-decoder --decode_from_file=x", "give --output_dir (model directory) or "
                                         "--checkpoint_path"),
    ("t2t-trainer --data_dir=D ... --no_such_flag=1", "unknown flag --no_such_flag"),
    ("t2t-exporter --output_dir=M --export_dir=E --quantization=int8",
     "--quantization applies to --format=ctranslate2 only"),
])
def test_a_broken_command_in_a_page_fails_naming_page_and_line(tmp_path, monkeypatch, text,
                                                                problem):
    page = REPO_ROOT / "docs" / "broken-copy.md"  # a page only this test writes
    try:
        page.write_text(f"# A page\n\nSome text.\n\n```bash\n{text}\n```\n", encoding="utf-8")
        [command] = commands(page)
        assert command.where == "docs/broken-copy.md:6"
        message = check(command)
        assert message is not None and message.startswith("docs/broken-copy.md:6: ")
        assert problem in message
    finally:
        page.unlink()


def test_continuations_pipes_and_prompts_are_read_as_a_shell_would(tmp_path, monkeypatch):
    page = REPO_ROOT / "docs" / "shell-copy.md"
    try:
        page.write_text(
            "Text.\n\n    printf 'x\\n' | .venv/bin/t2t-decoder --output_dir=M \\\n"
            "        --decode_hparams=beam_size=2   # a comment\n\n"
            "```console\n$ CUDA_VISIBLE_DEVICES=0 t2t-bleu --translation=O --reference=R > s\n"
            "```\n", encoding="utf-8")
        assert [(c.line, c.program, c.argv) for c in commands(page)] == [
            (3, "t2t-decoder", ["--output_dir=M", "--decode_hparams=beam_size=2"]),
            (7, "t2t-bleu", ["--translation=O", "--reference=R"])]
    finally:
        page.unlink()


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_links_to_files_and_pages_exist(page):
    assert broken_links(page) == []


# How the project was developed, not what it does ("sessions" alone can be TensorFlow's).
_HISTORY = re.compile(r"\b(this|that|last|previous|next|earlier|later|second|third) sessions?\b|"
                      r"\bissue \d+|\bthis work\b|before this change", re.IGNORECASE)


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: str(p.relative_to(REPO_ROOT)))
def test_pages_speak_of_the_software_not_its_development(page):
    text = page.read_text(encoding="utf-8")
    found = [f"{n}: {line.strip()[:80]}" for n, line in enumerate(text.split("\n"), start=1)
             if _HISTORY.search(line)]
    assert found == []


def test_the_readme_is_a_front_page():
    lines = (REPO_ROOT / "README.md").read_text(encoding="utf-8").split("\n")
    assert len(lines) <= 200
    head = "\n".join(lines[:40])
    assert "pip install" in head and "pytest" in head and "docs/" in head


def test_command_dataclass_names_its_place():
    assert Command("docs/x.md", 3, "t2t-bleu", []).where == "docs/x.md:3"
