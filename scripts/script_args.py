"""The argument checks of the Python scripts in scripts/, made before anything is measured or built:
a refusal is one sentence on stderr, `SCRIPT: error: ...`, and exit status 2, never a traceback.

  parser = script_args.Parser("bench_memory", description=__doc__)    argparse, its errors one line
  parser.add_argument("--repeats", type=script_args.whole(1, 100))    a whole number in a range
  parser.add_argument("--rates", type=script_args.whole_list(1, 100000))     "100,400"
  parser.add_argument("--models", type=script_args.names(["tiny", "small"]))  "tiny,small"
  script_args.output_file("bench_memory", "--out", args.out)          writable, checked first

scripts/script_args.sh does the same for the bash scripts.
"""
import argparse
import contextlib
import io
import json
import math
import os
import re
import sys


def fail(script, message):
    """The refusal: one sentence on stderr, exit status 2."""
    print(f"{script}: error: {message}", file=sys.stderr)
    sys.exit(2)


class Parser(argparse.ArgumentParser):
    """argparse with its refusals in one line (no usage block) and exit status 2."""

    def __init__(self, prog, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(prog=prog, **kwargs)

    def error(self, message):
        fail(self.prog, f"{message} (see {self.prog} --help)")


def _whole(text, low, high):
    """int(text) when text is a whole number in [low, high] (no sign, no wrap-around); else None."""
    text = text.strip()
    if not re.fullmatch(r"[0-9]{1,18}", text) or not low <= int(text) <= high:
        return None
    return int(text)


def whole(low, high, why=""):
    """An argparse type: a whole number from low to high (`why`: the reason for the range, if any)."""
    def parse(text):
        value = _whole(text, low, high)
        if value is None:
            raise argparse.ArgumentTypeError(f"must be a whole number from {low} to {high}{why}, not '{text}'")
        return value
    return parse


def whole_list(low, high):
    """An argparse type: comma-separated whole numbers from low to high, none empty or repeated."""
    def parse(text):
        parts = text.split(",")
        values = [_whole(p, low, high) for p in parts]
        if not text or None in values or len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"must be whole numbers from {low} to {high}, comma-separated, each "
                                             f"once, not '{text}'")
        return values
    return parse


def names(allowed):
    """An argparse type: comma-separated names from `allowed`, none empty or repeated."""
    def parse(text):
        parts = [p.strip() for p in text.split(",")]
        unknown = [p for p in parts if p not in allowed]
        if unknown or len(set(parts)) != len(parts):
            what = f"'{unknown[0]}' is not one of them" if unknown else "a name is repeated"
            raise argparse.ArgumentTypeError(f"takes names from {', '.join(allowed)}, comma-separated, each once; "
                                             f"{what} in '{text}'")
        return parts
    return parse


def positive(high):
    """An argparse type: a number above 0 and at most `high`."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 < value <= high:  # also refuses nan and inf
            raise argparse.ArgumentTypeError(f"must be a number above 0 and at most {high:.15g}, not '{text}'")
        return value
    return parse


def _probe(script, flag, path, folder):
    """Writes one byte into `folder` and removes it; the refusal when that fails."""
    probe = os.path.join(folder, f".{os.path.basename(path) or 'out'}.probe-{os.getpid()}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, b"x")
        finally:
            os.close(fd)
        os.unlink(probe)
    except OSError as e:
        fail(script, f"cannot write {flag} {path}: {e.strerror} in {folder}")


def writable_folder(script, flag, path, what=None):
    """Refuses a folder that cannot be written: it exists as something else, cannot be made, or a
    probe file cannot be written into it. A folder made to check this is removed again, so that a
    refusal later leaves nothing behind."""
    what = what or path
    folder = os.path.abspath(path)
    missing = []  # the folders to make, innermost first
    while not os.path.exists(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    if not os.path.isdir(folder):
        fail(script, f"cannot write {flag} {what}: {folder} is not a folder")
    for d in reversed(missing):
        try:
            os.mkdir(d)
        except OSError as e:
            for made in missing:
                if os.path.isdir(made):
                    os.rmdir(made)
            fail(script, f"cannot write {flag} {what}: cannot make the folder {d} ({e.strerror})")
    try:
        _probe(script, flag, what, os.path.abspath(path))
    finally:
        for d in missing:
            os.rmdir(d)


def output_file(script, flag, path):
    """Refuses an output file that cannot be written (checked before anything is measured): the path
    is a folder or another kind of non-regular file, or its folder cannot be made or written."""
    if not path:
        fail(script, f"{flag} is empty; name a file")
    if os.path.isdir(path):
        fail(script, f"{flag} {path} is a folder; name a file")
    if os.path.lexists(path) and not os.path.isfile(path):
        fail(script, f"{flag} {path} is not a regular file")
    writable_folder(script, flag, os.path.dirname(os.path.abspath(path)), what=path)


def input_file(script, flag, path):
    """Refuses an input file that is missing, not a regular file, or unreadable."""
    if not os.path.exists(path):
        fail(script, f"{flag} {path} does not exist")
    if not os.path.isfile(path):
        fail(script, f"{flag} {path} is not a regular file")
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        fail(script, f"cannot read {flag} {path}: {e.strerror}")


def json_file(script, flag, path):
    """input_file, and the file holds one JSON object."""
    input_file(script, flag, path)
    try:
        with open(path) as f:
            value = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        fail(script, f"{flag} {path} is not JSON ({e})")
    if not isinstance(value, dict):
        fail(script, f"{flag} {path} holds no JSON object")
    return value


def jsonl_file(script, flag, path):
    """input_file, and every non-blank line holds a JSON object; the objects."""
    input_file(script, flag, path)
    rows = []
    try:
        with open(path) as f:
            for number, line in enumerate(f, start=1):
                if line.strip():
                    rows.append(json.loads(line))
                    if not isinstance(rows[-1], dict):
                        raise ValueError(f"line {number} is not a JSON object")
    except (ValueError, UnicodeDecodeError) as e:
        fail(script, f"{flag} {path} is not JSON lines ({e})")
    if not rows:
        fail(script, f"{flag} {path} holds no rows")
    return rows


def program(script, path, how):
    """Refuses a program that is not there to run: `how` says how to make it."""
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        fail(script, f"{path} is not built; {how}")


def tables(script, flag, path, print_tables, *args):
    """Runs print_tables(*args), the tables of a finished run's file, and prints them whole; the
    refusal, printing nothing, when the file lacks what they need (it is not that script's file)."""
    buffer = io.StringIO()
    try:
        with contextlib.redirect_stdout(buffer):
            print_tables(*args)
    except (KeyError, IndexError, StopIteration, TypeError, ValueError, ZeroDivisionError, AttributeError) as e:
        fail(script, f"{flag} {path} does not hold the rows of these tables "
             f"(its tables stop at {type(e).__name__}{': ' if str(e) else ''}{e})")
    print(buffer.getvalue(), end="")


def hardware_profile(script, flag, value):
    """A hardware profile for `optimus plan --hardware`: a JSON file, or the name of one in
    data/hardware/; the refusal otherwise."""
    named = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data/hardware", value + ".json")
    if not os.path.exists(value) and os.path.isfile(named):
        value = named
    json_file(script, flag, value)
    return value
