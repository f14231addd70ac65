"""Files and directories that a reader, or a kill, never sees half-written.

A file is written beside its final name and renamed over it (`os.replace` is
atomic on one file system). A directory is filled under a hidden temporary
name in the same parent and renamed into place when complete.

A process killed while it fills a directory leaves that hidden temporary
directory behind. Its name carries the writer's host and pid,

    <prefix><pid>@<host>@<random>      e.g. .tmp-export-4242@node7@k2j9x1

so a later writer removes it when that process is gone (`remove_stale`) and
never touches the one of a writer still running, on this host or another.

A complete directory `<name>` that replaces another moves the old one aside,
under the owner part of the new one's temporary name,

    .<name>.replaced-<pid>@<host>@<random>      e.g. .best.replaced-4242@node7@k2j9x1

then renames the new one in and deletes the old one. A process killed between
the two renames leaves no `<name>`, but both complete directories: readers
read the old one meanwhile (`readable_dir`), and the next writer finishes the
replacement (`recover_dir`).
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


def write_bytes(path: str, data: bytes) -> None:
    """Writes `data` to `path` through a temporary file renamed over it."""
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(data)
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


def _aside_prefix(final: str) -> str:
    """The name prefix of the directory `final` is moved aside to while it is replaced."""
    return f".{os.path.basename(final)}.replaced-"


def _asides(final: str) -> List[str]:
    """The paths of `final`'s moved-aside copies (see the module doc), by name."""
    parent, prefix = os.path.dirname(final), _aside_prefix(final)
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return []
    return [os.path.join(parent, n) for n in names if _owner(n, prefix)]


def readable_dir(final: str) -> str:
    """`final`; while it is being replaced (or was, by a process killed between
    the two renames of `replace_dir`), its complete previous copy set aside;
    `final` itself when neither exists."""
    if os.path.lexists(final):
        return final
    return next(iter(_asides(os.path.abspath(final))), final)


def _new_of(aside: str, final: str) -> Optional[str]:
    """The complete new directory that was to replace `final` when `final` was
    moved to `aside`: the temporary directory `.<name>.tmp-<kind>-<owner>` of
    the same owner part, if it is still there."""
    parent = os.path.dirname(aside)
    owner = os.path.basename(aside)[len(_aside_prefix(final)):]
    prefix = f".{os.path.basename(final)}.tmp-"
    return next((os.path.join(parent, n) for n in sorted(os.listdir(parent))
                 if n.startswith(prefix) and n.endswith(f"-{owner}")), None)


def recover_dir(final: str) -> None:
    """Finishes the replacements of `final` that killed processes cut short.

    A process gone (`process_gone`) between moving the old `final` aside and
    renaming the new one in left `final` missing: its new directory, complete,
    is renamed in, or if that is gone too the old one is put back. An aside
    copy whose replacement did finish is deleted. Replacements of writers
    still running are left alone.
    """
    final = os.path.abspath(final)
    for aside in _asides(final):
        if not process_gone(*_owner(os.path.basename(aside), _aside_prefix(final))):
            continue
        if not os.path.lexists(final):
            try:
                os.rename(_new_of(aside, final) or aside, final)
            except OSError:
                pass  # another writer recovered `final` first; or, if not, keep the aside
        if os.path.lexists(final) and os.path.exists(aside):
            shutil.rmtree(aside, ignore_errors=True)


def replace_dir(tmp: str, final: str, aside: str) -> None:
    """Renames the complete directory `tmp` to `final`, replacing a directory there.

    `final` is at every moment the old directory or the new one, each
    complete, or absent: absent while the old one is moved to `aside` (a new
    name beside it; see the module doc) and the new one is not yet renamed
    in. The old directory is deleted last.
    """
    try:
        os.rename(tmp, final)  # atomic; also replaces an empty directory
        return
    except OSError as e:
        if e.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    os.rename(final, aside)
    os.rename(tmp, final)
    shutil.rmtree(aside, ignore_errors=True)


def write_dir(final: str, kind: str, fill: Callable[[str], T]) -> T:
    """Writes the directory `final` in full under a temporary name, then renames it into place.

    `fill(tmp)` writes the contents into a new hidden directory
    `.<name of final>.tmp-<kind>-<pid>@<host>@*` beside `final`, which then
    replaces `final` (`replace_dir`): `final` is at every moment absent, its
    previous contents or the new ones, even if this process is killed.
    Replacements and temporary directories that earlier writers left when
    killed are recovered and removed first (`recover_dir`, `remove_stale`);
    an error in `fill` removes this one.

    Returns:
      What `fill` returns.
    """
    final = os.path.abspath(final)
    parent = os.path.dirname(final)
    prefix = f".{os.path.basename(final)}.tmp-{kind}-"
    os.makedirs(parent, exist_ok=True)
    recover_dir(final)
    remove_stale(parent, prefix)
    tmp = make_temp_dir(parent, prefix)
    aside = os.path.join(parent, _aside_prefix(final) + os.path.basename(tmp)[len(prefix):])
    try:
        result = fill(tmp)
        replace_dir(tmp, final, aside)
    finally:
        if os.path.exists(tmp):  # an error before the rename: nothing half-written stays
            shutil.rmtree(tmp, ignore_errors=True)
    return result
