"""Where a user's code failed, in one line (for errors raised inside a --usr_dir)."""

import inspect
import os
import traceback
from typing import Optional


def in_directory(error: BaseException, directory: Optional[str]) -> str:
    """`file:line: Type: message` of the innermost frame inside `directory` (an
    absolute path; a syntax error: the line it names)."""
    frames = [f for f in traceback.extract_tb(error.__traceback__)
              if directory and os.path.abspath(f.filename).startswith(directory + os.sep)]
    if isinstance(error, SyntaxError) and error.filename:
        location = f"{error.filename}:{error.lineno}: "
    else:
        location = f"{frames[-1].filename}:{frames[-1].lineno}: " if frames else ""
    return location + traceback.format_exception_only(type(error), error)[-1].strip()


def where(error: BaseException, user_object) -> str:
    """`in_directory` for the directory that defines `user_object` (a class or
    function of the user directory)."""
    try:
        directory = os.path.dirname(os.path.abspath(inspect.getfile(user_object)))
    except TypeError:
        directory = None
    return in_directory(error, directory)
