"""Runs a program and SIGKILLs it at a chosen file-system operation of its own.

    python tests/kill_at.py PREFIX[,PREFIX...] N MODULE [ARGS...]

runs `python -m MODULE ARGS...` and, at the N-th file-system operation (an
audit event: mkdtemp, mkdir, open, copyfile, rename, remove, rmtree, chmod)
on a path that contains `PREFIX<its own pid>@` for one of the PREFIXes (the
hidden directories `t2t_lite.atomic.make_temp_dir` names after the process:
a temporary one, or the copy a replaced directory is moved aside to), sends
itself SIGKILL before the operation happens (mkdtemp: just after, as Python
audits it only then). The kill is real and lands at a reproducible moment of
the write; temporary directories of other (earlier, killed) processes never
count. N=0 only prints the operations it would count, one a line, to stderr.
"""

import os
import runpy
import signal
import sys

EVENTS = {"tempfile.mkdtemp", "os.mkdir", "open", "shutil.copyfile", "os.rename", "os.remove",
          "shutil.rmtree", "os.chmod"}


def install(prefixes: str, n: int) -> None:
    """Adds the audit hook that kills this process at the `n`-th matching operation
    (`prefixes`: comma-separated)."""
    watched = [f"{prefix}{os.getpid()}@" for prefix in prefixes.split(",")]
    seen = [0]

    def hook(event, args):
        if event not in EVENTS:
            return
        paths = [os.fsdecode(a) for a in args if isinstance(a, (str, bytes, os.PathLike))]
        if not any(w in p for w in watched for p in paths):
            return
        seen[0] += 1
        if n == 0:
            print(f"kill_at {seen[0]}: {event} {paths}", file=sys.stderr, flush=True)
        elif seen[0] == n:
            os.kill(os.getpid(), signal.SIGKILL)

    sys.addaudithook(hook)


def main() -> None:
    prefix, n, module, *args = sys.argv[1:]
    install(prefix, int(n))
    sys.argv = [module, *args]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
