"""A directory replacement cut short by a kill is finished later, and read meanwhile.

`atomic.write_dir` fills `.<name>.tmp-<kind>-<owner>`, moves the old directory
aside to `.<name>.replaced-<owner>`, then renames the new one in. The states a
SIGKILL leaves between those steps are built here by hand, with the pid of a
process that has ended (and, for writers still running, this process's own
pid or another host's).
"""

import os
import socket
import subprocess

from t2t_lite import atomic


def owner(pid: int, host: str = "") -> str:
    """The owner part of a `make_temp_dir` name for `pid` on `host` (default: this one)."""
    return f"{pid}@{host or socket.gethostname()}@k2j9x1"


def gone() -> str:
    """The owner part for a process that has ended (and been reaped)."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return owner(proc.pid)


def make_dir(path, text: str) -> str:
    """A directory holding `a.txt` = `text`."""
    os.makedirs(path)
    with open(os.path.join(path, "a.txt"), "w", encoding="utf-8") as f:
        f.write(text)
    return str(path)


def text(path: str) -> str:
    with open(os.path.join(path, "a.txt"), encoding="utf-8") as f:
        return f.read()


def test_killed_between_the_renames_the_old_copy_is_read_then_the_new_one_renamed_in(tmp_path):
    final, who = str(tmp_path / "best"), gone()
    old = make_dir(tmp_path / f".best.replaced-{who}", "old")
    make_dir(tmp_path / f".best.tmp-best-{who}", "new")
    assert atomic.readable_dir(final) == old
    atomic.recover_dir(final)
    assert os.listdir(tmp_path) == ["best"] and text(final) == "new"
    assert atomic.readable_dir(final) == final


def test_without_the_new_directory_the_old_one_is_put_back(tmp_path):
    final = str(tmp_path / "best")
    make_dir(tmp_path / f".best.replaced-{gone()}", "old")
    other = f".best.tmp-best-{owner(os.getpid())}"  # a running writer's, not the new one
    make_dir(tmp_path / other, "another writer's")
    atomic.recover_dir(final)
    assert sorted(os.listdir(tmp_path)) == [other, "best"] and text(final) == "old"


def test_an_aside_copy_left_after_the_new_directory_arrived_is_deleted(tmp_path):
    final = make_dir(tmp_path / "best", "new")
    make_dir(tmp_path / f".best.replaced-{gone()}", "old")
    assert atomic.readable_dir(final) == final
    atomic.recover_dir(final)
    assert os.listdir(tmp_path) == ["best"] and text(final) == "new"


def test_the_replacement_of_a_writer_still_running_is_read_but_left_alone(tmp_path):
    final = str(tmp_path / "best")
    names = sorted([f".best.replaced-{owner(os.getpid())}",
                    f".best.replaced-{owner(os.getpid(), 'another-host')}"])
    for name in names:
        make_dir(tmp_path / name, name)
    atomic.recover_dir(final)
    assert sorted(os.listdir(tmp_path)) == names
    assert atomic.readable_dir(final) == str(tmp_path / names[0])


def test_write_dir_finishes_a_killed_replacement_before_its_own(tmp_path):
    final, who = str(tmp_path / "best"), gone()
    make_dir(tmp_path / f".best.replaced-{who}", "old")
    make_dir(tmp_path / f".best.tmp-best-{who}", "new")
    seen = []

    def fill(tmp: str) -> None:
        seen.append(text(final))
        with open(os.path.join(tmp, "a.txt"), "w", encoding="utf-8") as f:
            f.write("newer")

    atomic.write_dir(final, "best", fill)
    assert seen == ["new"]
    assert os.listdir(tmp_path) == ["best"] and text(final) == "newer"
