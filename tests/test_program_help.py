"""Every program's --help gives each flag a help text and names the flag's default.

The programs are setup.py's console_scripts; each module's `build_parser()` is the
parser its `main` uses and the one the docs' reference pages are generated from.
"""

import argparse
import ast
import importlib

import pytest

from paths import REPO_ROOT
from t2t_lite.bin import cli


def console_scripts():
    """[(program, module)] of setup.py's console_scripts, read without running setup()."""
    tree = ast.parse((REPO_ROOT / "setup.py").read_text(encoding="utf-8"))
    [entry_points] = [ast.literal_eval(node.value) for node in ast.walk(tree)
                      if isinstance(node, ast.keyword) and node.arg == "entry_points"]
    scripts = [line.split("=") for line in entry_points["console_scripts"]]
    return [(prog.strip(), target.strip().split(":")[0]) for prog, target in scripts]


def names_a_default(action: argparse.Action) -> bool:
    """Whether --help must name `action`'s default: not for None or "" (not given), nor
    for an on/off switch."""
    switch = isinstance(action.default, bool) and action.nargs == 0
    return action.default not in (None, "", argparse.SUPPRESS) and not switch


def flag_problems(parser: argparse.ArgumentParser) -> list:
    """Each flag whose --help block has no help text or does not name its default."""
    problems = []
    for action in parser._actions:  # pylint: disable=protected-access
        if isinstance(action, argparse._HelpAction):  # pylint: disable=protected-access
            continue
        formatter = parser._get_formatter()  # pylint: disable=protected-access
        formatter.add_argument(action)
        block = formatter.format_help()  # the flag's lines of --help
        name = "/".join(action.option_strings) or action.dest
        if not (action.help or "").strip():
            problems.append(f"{name}: no help text")
        elif names_a_default(action) and "default" not in block.lower():
            problems.append(f"{name}: default {action.default!r} not shown")
    return problems


PROGRAMS = console_scripts()


def test_every_program_is_walked():
    assert len(PROGRAMS) == 12 and ("t2t-trainer", "t2t_lite.bin.t2t_trainer") in PROGRAMS


@pytest.mark.parametrize("prog, module", PROGRAMS, ids=[p for p, _ in PROGRAMS])
def test_every_flag_has_help_text_and_its_default_shown(prog, module):
    parser = importlib.import_module(module).build_parser()
    assert parser.prog == prog
    assert parser.format_help().startswith(f"usage: {prog} ")
    assert flag_problems(parser) == []


def test_the_check_finds_a_flag_without_help_and_a_hidden_default():
    def flags(parser):
        parser.add_argument("--steps", type=int, default=1000, help="steps in total")
        parser.add_argument("--seed", type=int, default=1)
        parser.add_argument("--name", default=None, help="a name")
        parser.add_argument("--fast", action="store_true", help="run fast")
        parser.add_argument("--train_steps", type=int, default=0,
                            help="steps (default: the hparams set's)")
        return parser
    assert flag_problems(flags(argparse.ArgumentParser())) == [
        "--steps: default 1000 not shown", "--seed: no help text"]
    assert flag_problems(flags(cli.ArgumentParser())) == ["--seed: no help text"]
    shown = " ".join(flags(cli.ArgumentParser()).format_help().split())
    assert "--steps STEPS steps in total (default: 1000)" in shown
    assert "--train_steps TRAIN_STEPS steps (default: the hparams set's) " in shown + " "
    assert "--seed SEED --name" in shown and "run fast --train_steps" in shown
