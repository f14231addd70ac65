"""The commands and links of README.md and docs/, as the docs tests check them.

A command is a line of a fenced or indented code block that calls a `t2t-*`
program or a `recipes/*.py` script, with its continuation lines ("\\" at the
end) joined; a pipeline's or `&&` chain's parts are commands of their own.
Leading `.venv/bin/`, `$ ` prompts and `VAR=value` assignments are dropped,
and so is everything from a `#` comment on.

Omitted flags are marked with a lone `...` token: such a command is checked
flag by flag (each must exist, as spelled), not for required flags. A command
without `...` must parse completely, post-parse checks included
(`parse_args(argv)` of the program's module).
"""

import argparse
import contextlib
import dataclasses
import importlib
import io
import pathlib
import re
import shlex
from typing import Iterator, List, Optional

from paths import REPO_ROOT, recipe_module

ELLIPSIS = "..."
_FENCE = re.compile(r"^(\s*)(```+|~~~+)(.*)$")
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
_RECIPES = {"recipes/multi30k_ende.py": "multi30k_ende", "recipes/news_finetune.py":
            "news_finetune", "recipes/plot_curves.py": "plot_curves",
            "recipes/marian_finetune.py": "marian_finetune"}


@dataclasses.dataclass
class Command:
    page: str          # path relative to the repository
    line: int          # 1-based line of its first line
    program: str       # "t2t-trainer" or "recipes/multi30k_ende.py"
    argv: List[str]

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def doc_pages(root: pathlib.Path = REPO_ROOT) -> List[pathlib.Path]:
    """README.md and every Markdown page under docs/ (not the build output)."""
    return [root / "README.md"] + sorted(
        p for p in (root / "docs").rglob("*.md") if "_build" not in p.parts)


# Fenced blocks of these kinds hold no shell commands (MyST directives start with "{").
_NOT_SHELL = ("{", "python", "json", "yaml", "toml", "ini", "http")


def code_lines(text: str) -> Iterator[tuple]:
    """(line number, line) of every shell code-block line: fenced (but not
    Python, JSON, MyST directives...), or indented by 4 spaces after a blank line."""
    fence: Optional[str] = None
    shell = True
    previous_blank, indented = True, False
    for number, line in enumerate(text.split("\n"), start=1):
        found = _FENCE.match(line)
        if fence is None and found:
            fence, shell = found.group(2), not found.group(3).strip().startswith(_NOT_SHELL)
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            elif shell:
                yield number, line
            continue
        if line.startswith("    ") and (indented or previous_blank):
            indented = True
            yield number, line
        else:
            indented = indented and not line.strip() == "" and line.startswith("    ")
        previous_blank = not line.strip()


def _joined(lines) -> Iterator[tuple]:
    start, parts = None, []
    for number, line in lines:
        if start is None:
            start = number
        stripped = line.strip()
        if stripped.endswith("\\"):
            parts.append(stripped[:-1])
            continue
        parts.append(stripped)
        yield start, " ".join(parts)
        start, parts = None, []
    if parts:
        yield start, " ".join(parts)


def _program(token: str) -> Optional[str]:
    name = token.rsplit("/", 1)[-1]
    if re.fullmatch(r"t2t-[a-z0-9-]+", name):
        return name
    for script in _RECIPES:
        if token.endswith(script):
            return script
    return None


def commands(path: pathlib.Path) -> List[Command]:
    """Every command of one page."""
    found = []
    page = str(path.relative_to(REPO_ROOT))
    for number, line in _joined(code_lines(path.read_text(encoding="utf-8"))):
        try:
            tokens = shlex.split(line, comments=True)
        except ValueError:
            continue  # not shell (e.g. a Python line with an odd quote)
        for part in _split_chain(tokens):
            while part and (re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", part[0]) or part[0] in
                            ("$", "python", "python3", ".venv/bin/python", "sudo")):
                part = part[1:]
            if part and _program(part[0]):
                found.append(Command(page, number, _program(part[0]), part[1:]))
    return found


def _split_chain(tokens: List[str]) -> Iterator[List[str]]:
    part: List[str] = []
    for token in tokens:
        if token in ("|", "&&", "||", ";"):
            yield part
            part = []
        elif token.startswith((">", "<", "2>")):
            break  # a redirection ends the arguments
        else:
            part.append(token)
    yield part


def program_module(program: str):
    """The module whose `parse_args(argv)` a command of `program` runs."""
    if program in _RECIPES:
        return recipe_module(_RECIPES[program])
    return importlib.import_module("t2t_lite.bin." + program.replace("-", "_"))


def check(command: Command) -> Optional[str]:
    """None if the command parses; otherwise what is wrong, naming page and line."""
    module = program_module(command.program)
    if ELLIPSIS in command.argv:
        return _check_flags_only(command, module)
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            module.parse_args(command.argv)
    except SystemExit as e:
        if e.code:
            message = stderr.getvalue().strip().splitlines()[-1:] or ["exit " + str(e.code)]
            return f"{command.where}: {command.program} {shlex.join(command.argv)}: {message[0]}"
    return None


def _parser_of(module) -> argparse.ArgumentParser:
    if hasattr(module, "build_parser"):
        return module.build_parser()
    captured = {}

    class Capture(Exception):
        pass

    def fake_parse(self, args=None, namespace=None):
        captured["parser"] = self
        raise Capture

    original = argparse.ArgumentParser.parse_args
    argparse.ArgumentParser.parse_args = fake_parse
    try:
        module.parse_args([])
    except Capture:
        pass
    finally:
        argparse.ArgumentParser.parse_args = original
    return captured["parser"]


def _check_flags_only(command: Command, module) -> Optional[str]:
    known = set(_parser_of(module)._option_string_actions)
    for token in command.argv:
        if token.startswith("--") and token.split("=", 1)[0] not in known:
            return (f"{command.where}: {command.program}: unknown flag "
                    f"{token.split('=', 1)[0]}")
    return None


def broken_links(path: pathlib.Path) -> List[str]:
    """Links of a page to files or pages that do not exist ("page:line: target")."""
    broken = []
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        for target in _LINK.findall(line):
            if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                continue  # a web address or an anchor of the same page
            file_part = target.split("#", 1)[0]
            if not (path.parent / file_part).exists():
                broken.append(f"{path.relative_to(REPO_ROOT)}:{number}: {target}")
    return broken
