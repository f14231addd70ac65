"""Files and directories that a reader, or a kill, never sees half-written.

A file is written beside its final name and renamed over it (`os.replace` is
atomic on one file system). A directory is filled under a hidden temporary
name in the same parent and renamed into place when complete.

A process killed while it fills a directory leaves that hidden temporary
directory behind. Its name carries the writer's host and pid,

    <prefix><pid>@<host>@<random>      e.g. .tmp-export-4242@node7@k2j9x1

so a later writer removes it when that process is gone (`remove_stale`) and
never touches the one of a writer still running, on this host or another.
"""

import errno
import os
import shutil
import socket
import tempfile
from typing import Callable, List, Optional, TypeVar

T = TypeVar("T")

_SEPARATOR = "@"  # never in a host name (letters, digits, '-' and '.')


def write_text(path: str, text: str) -> None:
    """Writes `text` to `path` through a temporary file renamed over it."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def copy_file(src: str, dst: str) -> None:
    """Copies `src` to `dst` through a temporary file renamed over it."""
    tmp = f"{dst}.tmp-{os.getpid()}"
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def process_gone(host: Optional[str], pid) -> bool:
    """Whether `pid` names a process of this host that no longer runs.

    A process of another host cannot be checked: it counts as running. A pid
    that is not a positive integer counts as gone (a record written by a
    process killed mid-write).
    """
    if host != socket.gethostname():
        return False
    if not isinstance(pid, int) or pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return False


def make_temp_dir(parent: str, prefix: str) -> str:
    """A new empty hidden directory in `parent` named after this process (see the module doc).

    Args:
      prefix: starts with "." so that readers listing `parent` pass over it.
    """
    owner = f"{os.getpid()}{_SEPARATOR}{socket.gethostname()}{_SEPARATOR}"
    path = tempfile.mkdtemp(prefix=prefix + owner, dir=parent)
    os.chmod(path, 0o755)  # mkdtemp makes it private to the user; the result is shared
    return path


def _owner(name: str, prefix: str):
    """(host, pid) from a `make_temp_dir` name, or None for another kind of name."""
    fields = name[len(prefix):].split(_SEPARATOR)
    if not name.startswith(prefix) or len(fields) != 3 or not fields[0].isdigit():
        return None
    return fields[1], int(fields[0])


def remove_stale(parent: str, prefix: str) -> List[str]:
    """Removes the `make_temp_dir(parent, prefix)` directories of processes that are gone.

    Returns:
      The names removed.
    """
    removed = []
    for name in sorted(os.listdir(parent)):
        owner = _owner(name, prefix)
        if owner and process_gone(*owner):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
            removed.append(name)
    return removed


def replace_dir(tmp: str, final: str) -> None:
    """Renames the complete directory `tmp` to `final`, replacing a directory there.

    `final` is at every moment absent, the old directory or the new one, each
    complete; the old one is moved aside under `tmp`'s name + ".old" (hidden,
    removed by `remove_stale` if this process is killed before it does).
    """
    try:
        os.rename(tmp, final)  # atomic; also replaces an empty directory
        return
    except OSError as e:
        if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    old = tmp + ".old"
    os.rename(final, old)
    os.rename(tmp, final)
    shutil.rmtree(old, ignore_errors=True)


def write_dir(final: str, kind: str, fill: Callable[[str], T]) -> T:
    """Writes the directory `final` in full under a temporary name, then renames it into place.

    `fill(tmp)` writes the contents into a new hidden directory
    `.<name of final>.tmp-<kind>-<pid>@<host>@*` beside `final`, which then
    replaces `final` (`replace_dir`): `final` is at every moment absent, its
    previous contents or the new ones, even if this process is killed.
    Temporary directories of earlier killed writers are removed first; an
    error in `fill` removes this one.

    Returns:
      What `fill` returns.
    """
    final = os.path.abspath(final)
    parent = os.path.dirname(final)
    prefix = f".{os.path.basename(final)}.tmp-{kind}-"
    os.makedirs(parent, exist_ok=True)
    remove_stale(parent, prefix)
    tmp = make_temp_dir(parent, prefix)
    try:
        result = fill(tmp)
        replace_dir(tmp, final)
    finally:
        if os.path.exists(tmp):  # an error before the rename: nothing half-written stays
            shutil.rmtree(tmp, ignore_errors=True)
    return result
