#!/usr/bin/python3
"""Runs the shell commands of one documentation page as a reader would, and fails naming the page,
the command and its output when one of them fails (ctest label docs).

Which lines are commands. Only fenced code blocks (```) whose info string is empty or sh, bash,
shell or console hold commands; ```cpp, ```python and the like never do. In such a block:
  - a transcript (a block with a line starting with "$ "): each "$ " line starts a command, and
    every other line is the output shown for it;
  - otherwise, a block whose first line starts with a command word (build/, scripts/, .venv/bin/,
    mpirun, mpiexec, cd, export, srun, sbatch, salloc, ctest, /usr/bin/python3, or NAME=value before
    a command) is a list of commands, one per line; any other block (C++, pseudo-code, formulas, a
    folder tree, output) holds none.
A command goes on over the following lines while it is not yet complete shell syntax (a trailing
backslash, an open quote, a here-document before its delimiter, a trailing && or |). A command
whose shown output starts with "error:" is expected to fail: it must exit non-zero and print that
line.

What runs. The commands of a page run in page order, in one bash session (so cd, export and $?
carry over, as in a reader's terminal), from a temporary copy of the repository: the files git
lists (tracked and untracked, not ignored; the whole folder without git), with build/ a link to
the build tree, .venv/ a link to the repository's, and data/fortunes made by scripts/prepare_corpus.
Whatever a command writes under the repository (runs/, data/, bench/) lands in the copy, which is
deleted at the end; folders the page names outside it (/tmp/c1run) are written as the page says,
and those it writes with --out are removed before the page runs, as for a first-time reader.
Each command runs as written except for:
  - placeholders: FILE becomes a small text file the test makes (50 kB of the validation text), and
    a "..." argument (standing for "your other flags") is dropped;
  - scaling flags, listed in SCALE with their reason: each replaces the value of the same flag in
    the command, or is appended (before a trailing comment);
  - listed exceptions (EXCEPTIONS, each with its reason) are not run, only counted.
A command expected to fail runs exactly as written. The exact text that runs is printed before it
runs.

What a command prints is checked against the output the page shows for it (a transcript's lines
after its "$ " line). Each shown line must appear in what the command printed, in the page's order
(other lines may come between; a line "..." or "…" stands for lines left out, a "…" in a line for
text left out), compared piece by piece: the text between numbers exactly (a run of blanks matches
any run), a timing (a number followed by
ms, s, µs, tok/s, GFLOP/s, GB/s or MB/s) as any number, since no two machines or runs agree on
one, and the other numbers as the block says in an HTML comment on the line before its fence:
  <!-- output: exact -->                   every number as written (the default, without a comment)
  <!-- output: numbers within 5% -->       each number within 5 % of the shown one
  <!-- output: numbers within 1e-6 -->     each number within 1e-6 of it (both: "within 5% or 1e-6")
  <!-- output: text only -->               any number where the page shows one
  <!-- output: not checked, REASON -->     nothing compared; the reason is printed
A block of output with no "$ " line (test output, a table) is tied to the command that prints it by
"of: COMMAND" in its comment, e.g. <!-- output: numbers within 1%; of: build/optimus plan ... -->;
that command runs in its place in the page (once: a later block of the same command's output is
compared with what it printed then). So is the transcript of a command the test cannot run
(a benchmark of minutes): its output is compared with what "of:" prints from the file the run kept,
e.g. <!-- output: exact; of: scripts/bench.sh --report bench/serial.jsonl -->. A scaled command's output is not compared (its flags
are not the page's), and neither is the output of a command expected to fail beyond its error line.

Numbers in the prose that come from a bench file or a plan are listed in an HTML comment, one row
a number, after the page's commands have run:
  <!-- numbers
  6.65 B | build/optimus plan ... | ([0-9]+) parameters | x1e-9 | 0.5%
  -->
that is: the text as the prose writes it (it must be in the page), the command that prints the
source (a plan, `cat bench/FILE`), a regular expression whose group is the value, a scale (xK or
/K, or 1) that turns it into the prose's unit, and the tolerance (R% or an absolute bound). The row
passes when the last number of the text is the scaled value within the tolerance. Rows that name the
same command share one run of it. build/ is a link, not a copy, because building again would take many minutes and the commands
only read it (scripts/build finds it up to date). The environment adds what mpirun needs as root on
a small machine (the OMPI_* variables of the chapters' "Run it") and one thread per process, as in
every MPI test of the suite, and keeps Jupyter and matplotlib settings in the temporary folder.

Usage: run_page_commands.py SOURCE_DIR BUILD_DIR PAGE        (PAGE relative to SOURCE_DIR)
       run_page_commands.py --list PAGE                       prints the commands found, runs nothing
"""

import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time

# A command matching one of these is not run; the reason is printed with it.
EXCEPTIONS = [
    (r"--device cuda", "needs a GPU"),
    (r"\bscripts/gpu_check\.sh\b", "needs a GPU"),
    # (Slurm's commands given to the emulated cluster's Slurm, `scripts/cluster slurm ...`, run.)
    (r"^(?!scripts/cluster slurm\b).*(\b(srun|sbatch|salloc)\b|--hostfile|ppr:\d+:node)",
     "needs a cluster (Slurm, or ranks on several nodes)"),
    (r"\bscripts/bench(_1d|_2d)?\.sh\b(?!.*--report)", "a benchmark of several minutes that no flag scales down"),
    (r"\bscripts/(validate_time_model|bench_cluster|compare_tokenizers|calibrate)\b(?!.*--quick)",
     "a measurement of minutes (calibration, benchmarks) that no flag scales down"),
    (r"\bscripts/bench_3d\b(?!.*--report)", "a measurement of minutes, as root on the emulated cluster"),
    (r"\bscripts/bench_ab\b", "builds two revisions from git and times them for minutes (the copy has no git)"),
    (r"^scripts/test\b", "runs the whole test suite, this test included"),
    (r"\bctest\b", "runs tests of this suite, which ctest runs on its own (this one included)"),
    (r"\bnbconvert\b.*--execute.*notebooks/\*\.ipynb",
     "executes every notebook, which the notebooks label runs and checks on its own, figures included"),
]

# Scaling: the first pattern that matches a command gives the flags that replace its own values of
# the same flags, or are appended.
SCALE = [
    (r"\bscripts/run\b", "--steps 2 --eval-batches 1 --sample 20",
     "600 steps (or the chapter's 400) become 2; one validation batch, a 20-byte sample"),
    (r"\boptimus train\b.*--steps 200\b", "--batch 1 --eval-batches 1",
     "200 steps are kept (later commands read step_000200), with one sequence per step"),
    (r"\boptimus train\b(?!.*--steps)", "--steps 2 --eval-batches 1",
     "the default 200 steps become 2"),
]

COMMAND_START = re.compile(
    r"^(build/|scripts/|\.venv/bin/|mpirun\b|mpiexec\b|cd\b|export\b|srun\b|sbatch\b|salloc\b|ctest\b|"
    r"/usr/bin/python3\b|[A-Z_][A-Z0-9_]*=\S*\s)")
SHELL_INFO = {"", "sh", "bash", "shell", "console"}
COMMAND_TIMEOUT_S = 180  # below the ctest TIMEOUT, so a command that hangs is named


def is_complete(text):
    """Whether text is complete shell syntax (bash -n), so the command ends on this line."""
    if text.rstrip().endswith("\\"):
        return False
    check = subprocess.run(["bash", "-n"], input=text + "\n", capture_output=True, text=True)
    return check.returncode == 0 and "delimited by end-of-file" not in check.stderr


def fenced_blocks(lines):
    """Yields (info string, first line number, the block's lines, the text of an output comment on
    the line before its fence or None) of each fenced block; a block indented in a list loses the
    fence's indentation."""
    k = 0
    while k < len(lines):
        m = re.match(r"^(\s*)```\s*(\S*)", lines[k])
        if not m:
            k += 1
            continue
        indent, info = len(m.group(1)), m.group(2)
        marker = MARKER.match(lines[k - 1]) if k > 0 else None
        start, body = k + 1, []
        k += 1
        while k < len(lines) and not re.match(r"^\s*```\s*$", lines[k]):
            line = lines[k]
            body.append(line[min(indent, len(line) - len(line.lstrip())):])
            k += 1
        yield info.lower(), start + 1, body, marker.group(1) if marker else None
        k += 1


def commands_of(page_text):
    """The page's commands, in order: dicts with line (1-based), text, expected_error (or None), shown
    (the output lines the page shows for it) and rule (how they are compared, parse_marker's)."""
    found = []
    for info, first, body, marker in fenced_blocks(page_text.split("\n")):
        rule = parse_marker(marker)
        if rule["of"]:  # a block of output, tied to the command that prints it
            found.append({"line": first, "text": rule["of"], "expected_error": None,
                          "shown": output_after_command(body), "rule": rule})
            continue
        if info not in SHELL_INFO:
            continue
        transcript = any(line.startswith("$ ") for line in body)
        nonblank = [line for line in body if line.strip()]
        if not transcript and not (nonblank and COMMAND_START.match(nonblank[0])):
            continue
        k = 0
        while k < len(body):
            line = body[k]
            starts = line.startswith("$ ") if transcript else bool(line.strip())
            if not starts:
                k += 1
                continue
            start = k
            text = line[2:] if transcript else line
            while not is_complete(text) and k + 1 < len(body):
                k += 1
                text += "\n" + body[k]
            k += 1
            shown = []
            while transcript and k < len(body) and not body[k].startswith("$ "):
                shown.append(body[k])
                k += 1
            first_shown = next((line for line in shown if line.strip()), "")
            found.append({"line": first + start, "text": text, "shown": shown, "rule": rule,
                          "expected_error": first_shown.strip() if first_shown.startswith("error:") else None})
    return found

def output_after_command(body):
    """The output lines of a block tied by "of:": all of them, or, in a transcript of one command
    that the test cannot run (a benchmark of minutes), the lines after that command."""
    if not body or not body[0].startswith("$ "):
        return body
    k, text = 1, body[0][2:]
    while not is_complete(text) and k < len(body):
        text, k = text + "\n" + body[k], k + 1
    return body[k:]


NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
TIMING = re.compile(r"^ ?(ms|s|µs|us|tok/s|GFLOP/s|GB/s|MB/s)\b")  # the unit after a timing
MARKER = re.compile(r"^\s*<!--\s*output:\s*(.*?)\s*-->\s*$")


def parse_marker(text):
    """A block's output rule from its comment: dict(mode, rel, abs, reason, of)."""
    rule = {"mode": "exact", "rel": 0.0, "abs": 0.0, "reason": None, "of": None}
    if text is None:
        return rule
    if text.startswith("not checked"):  # the reason is the rest, semicolons and all
        rule["mode"], rule["reason"] = "none", text[len("not checked"):].lstrip(" ,:") or "the page says so"
        return rule
    parts = [part.strip() for part in text.split(";")]
    for part in parts:
        if part.startswith("of:"):
            rule["of"] = part[3:].strip()
        elif part == "exact":
            rule["mode"] = "exact"
        elif part == "text only":
            rule["mode"] = "text"
        elif part.startswith("numbers within"):
            rule["mode"] = "within"
            for bound in re.split(r"\s+or\s+", part[len("numbers within"):].strip()):
                if bound.endswith("%"):
                    rule["rel"] = float(bound[:-1]) / 100
                else:
                    rule["abs"] = float(bound)
        else:
            raise ValueError(f"an output comment this test does not know: {part!r}")
    return rule


def line_pattern(shown):
    """A shown line as a regular expression for the printed one, its numbers, and which of them are
    timings: the text as written (a run of blanks as any run), each number as any number, each "…"
    as any text; the printed line may start with more words (a test's "equivalence: " or ctest's
    "74: ", which pages leave out)."""
    pattern, numbers, timings = [], [], []
    shown = shown.strip()
    k = 0
    for m in re.finditer(NUMBER.pattern + r"|…|\s+", shown):
        pattern.append(re.escape(shown[k:m.start()]))
        token = m.group(0)
        if token == "…":
            pattern.append(".*?")
        elif token.isspace():
            pattern.append(r"\s+")
        else:
            pattern.append("(" + NUMBER.pattern + ")")
            numbers.append(token)
            timings.append(bool(TIMING.match(shown[m.end():])))
        k = m.end()
    pattern.append(re.escape(shown[k:]))
    return re.compile(r"(?:.*\s)?" + "".join(pattern)), numbers, timings


def within(x, y, rule):
    """Whether y is x within the rule's bounds (relative to x, or absolute)."""
    return abs(x - y) <= max(rule["rel"] * abs(x), rule["abs"])


def line_matches(shown, printed, rule):
    """Whether a printed line is the shown one (line_pattern's) under the rule."""
    pattern, numbers, timings = shown
    m = pattern.fullmatch(printed.strip())
    if not m:
        return False
    for a, b, timing in zip(numbers, m.groups(), timings):
        if rule["mode"] == "text" or timing:
            continue
        if not (a == b if rule["mode"] == "exact" else within(float(a), float(b), rule)):
            return False
    return True


def check_output(shown_lines, printed, rule):
    """None when every shown line appears in the printed text in order, else the problem.
    Also returns how many lines and numbers were compared."""
    printed_lines = [line for line in printed.split("\n") if line.strip()]
    k, lines, numbers = 0, 0, 0
    for shown in shown_lines:
        if not shown.strip() or shown.strip() in ("...", "…"):
            continue
        start, compiled = k, line_pattern(shown)
        while k < len(printed_lines) and not line_matches(compiled, printed_lines[k], rule):
            k += 1
        if k == len(printed_lines):
            words = set(shown.split())
            nearest = max(printed_lines[start:] or [""], key=lambda p: len(words & set(p.split())))
            return (f"the page shows the line\n    {shown.strip()}\n  which it did not print (after the lines "
                    f"matched before it); its nearest line:\n    {nearest.strip()}"), lines, numbers
        lines += 1
        numbers += 0 if rule["mode"] == "text" else compiled[2].count(False)
        k += 1
    return None, lines, numbers


NUMBERS = re.compile(r"<!--\s*numbers\s*\n(.*?)-->", re.S)


def prose_numbers(page_text):
    """The rows of the page's numbers comments: dicts with text, command, pattern, scale, rule."""
    rows = []
    for block in NUMBERS.findall(page_text):
        for line in block.strip().split("\n"):
            fields = [f.strip() for f in line.split(" | ")]
            if len(fields) != 5:
                raise ValueError(f"a numbers row needs 5 fields separated by ' | ': {line!r}")
            text, command, pattern, scale, tolerance = fields
            factor = 1.0 if scale == "1" else float(scale[1:]) if scale[0] == "x" else 1.0 / float(scale[1:])
            rows.append({"text": text, "command": command, "pattern": pattern, "scale": factor,
                         "rule": parse_marker("numbers within " + tolerance)})
    return rows


def check_number(row, page_text, printed):
    """None when the prose holds the row's text and its number is the printed value, else why."""
    prose = NUMBERS.sub("", page_text)
    if " ".join(row["text"].split()) not in " ".join(prose.split()):
        return f"the page's text does not contain {row['text']!r}"
    m = re.search(row["pattern"], printed)
    if not m:
        return f"{row['command']!r} printed nothing matching {row['pattern']!r}"
    value = float(m.group(1).replace(",", "")) * row["scale"]
    written = float(NUMBER.findall(row["text"])[-1])
    if not within(value, written, row["rule"]):
        return f"the page writes {row['text']!r}, the source gives {value:.6g} ({m.group(0).strip()!r})"
    return None


def split_comment(line):
    """(code, comment) of one shell line: the comment starts at an unquoted # after a blank."""
    quote = None
    for k, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (k == 0 or line[k - 1].isspace()):
            code = line[:k].rstrip()
            return code, line[len(code):]
    return line.rstrip(), ""


def as_run(text, small_file):
    """The command as it runs: placeholders filled, scaling flags set. Returns (text, scaling reason)."""
    lines = text.split("\n")
    code, comment = split_comment(lines[-1])
    code = re.sub(r"(?<![\w/.-])FILE(?![\w/.-])", small_file, code)
    code = re.sub(r"\s+\.\.\.(?=\s|$)", "", code)
    lines[:-1] = [re.sub(r"(?<![\w/.-])FILE(?![\w/.-])", small_file, line) for line in lines[:-1]]
    whole = "\n".join(lines[:-1] + [code])
    reason = None
    for pattern, flags, why in SCALE:
        if re.search(pattern, whole.replace("\\\n", " ")):
            reason = why
            flag_values = re.findall(r"(--[\w-]+) (\S+)", flags)
            for flag, value in flag_values:
                given = re.compile(r"(?<!\S)(" + re.escape(flag) + r")(=|\s+)\S+")
                if given.search(whole):
                    whole = given.sub(lambda m: m.group(1) + m.group(2) + value, whole)
                else:
                    whole += f" {flag} {value}"
            break
    return whole + comment, reason


def exception_of(text):
    flat = text.replace("\\\n", " ").strip()
    for pattern, why in EXCEPTIONS:
        if re.search(pattern, flat):
            return why
    return None


def make_checkout(source, build, scratch):
    """A copy of the repository under scratch, build/ and .venv/ linked, the corpus prepared."""
    checkout = os.path.join(scratch, "repo")
    git = ["git", "-C", source, "ls-files", "-z", "-c", "-o", "--exclude-standard"]
    listed = subprocess.run(git, capture_output=True) if shutil.which("git") else None
    if listed and listed.returncode == 0:
        for rel in sorted(set(p for p in listed.stdout.decode().split("\0") if p)):
            src = os.path.join(source, rel)
            if os.path.isfile(src) or os.path.islink(src):
                os.makedirs(os.path.dirname(os.path.join(checkout, rel)), exist_ok=True)
                shutil.copy2(src, os.path.join(checkout, rel), follow_symlinks=False)
    else:  # not a git checkout: everything but what .gitignore leaves out
        def ignored(folder, names):
            top = os.path.samefile(folder, source)
            return [n for n in names if n in ("__pycache__", ".ipynb_checkpoints") or
                    (top and (n.startswith("build") or n in (".venv", "data", "runs", "out", ".git")))]
        shutil.copytree(source, checkout, symlinks=True, ignore=ignored)
    os.symlink(os.path.abspath(build), os.path.join(checkout, "build"))
    if os.path.isdir(os.path.join(source, ".venv")):
        os.symlink(os.path.join(source, ".venv"), os.path.join(checkout, ".venv"))
    subprocess.run([os.path.join(checkout, "scripts", "prepare_corpus")], cwd=checkout, check=True,
                   stdout=subprocess.DEVNULL)
    small = os.path.join(scratch, "text.txt")
    with open(os.path.join(checkout, "data", "fortunes", "val.txt"), "rb") as f:
        data = f.read(50_000)
    with open(small, "wb") as f:
        f.write(data)
    return checkout, small


class Session:
    """One bash process reading commands from a pipe, as a terminal session would."""

    def __init__(self, cwd, env):
        self.proc = subprocess.Popen(["bash"], cwd=cwd, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, start_new_session=True)

    def run(self, text, out_path, timeout):
        """Runs text with its output in out_path; returns its exit status, or None on a timeout."""
        # The brace group keeps cd and export in this shell; (exit rc) leaves $? for the next one.
        script = (f"{{ {text}\n}} > '{out_path}' 2>&1 < /dev/null\n"
                  "__rc=$?; echo \"@@rc $__rc\"; (exit $__rc)\n")
        self.proc.stdin.write(script.encode())
        self.proc.stdin.flush()
        deadline, line = time.monotonic() + timeout, b""
        while not line.startswith(b"@@rc "):
            ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return None
            line = self.proc.stdout.readline()
            if not line:
                return -1  # the shell itself ended
        return int(line.split()[1])

    def close(self):
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass
        self.proc.wait()


def count(n, what):
    return f"{n} {what}" + ("" if n == 1 else "s")


def tail(path, n=60):
    with open(path, errors="replace") as f:
        lines = f.read().rstrip("\n").split("\n")
    return "\n".join(("    | " + line) for line in lines[-n:])


def main():
    sys.stdout.reconfigure(line_buffering=True)
    if len(sys.argv) == 3 and sys.argv[1] == "--list":
        with open(sys.argv[2]) as f:
            for c in commands_of(f.read()):
                why = exception_of(c["text"])
                tag = f"skip ({why})" if why else ("expect error" if c["expected_error"] else "run")
                print(f"{c['line']:5}  {tag:14}  {c['text']}")
        return 0
    if len(sys.argv) != 4:
        print(__doc__.split("\n\n")[-1], file=sys.stderr)
        return 2
    source, build, page = os.path.abspath(sys.argv[1]), sys.argv[2], sys.argv[3]
    with open(os.path.join(source, page)) as f:
        page_text = f.read()
    commands = commands_of(page_text)

    if all(exception_of(c["text"]) for c in commands) and not prose_numbers(page_text):
        for n, c in enumerate(commands, 1):
            print(f"[{n}/{len(commands)}] {page}:{c['line']}: skipped ({exception_of(c['text'])}): {c['text']}")
        print(f"{page}: ran 0 commands, skipped {len(commands)} as listed exceptions")
        return 0
    scratch = tempfile.mkdtemp(prefix="optimus-docs-")
    session = None
    try:
        needs_venv = [c for c in commands if not exception_of(c["text"])
                      and re.search(r"\bscripts/(setup|run)\b|\.venv/", c["text"])]
        if needs_venv and not os.path.isdir(os.path.join(source, ".venv")):
            print(f"FAIL: {page}:{needs_venv[0]['line']}: the command\n    {needs_venv[0]['text']}\n  needs the "
                  f"virtual environment {source}/.venv, which does not exist; run scripts/setup (it makes .venv)")
            return 1
        checkout, small = make_checkout(source, build, scratch)
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                   PYTHONNOUSERSITE="1", MPLCONFIGDIR=os.path.join(scratch, "matplotlib"),
                   JUPYTER_CONFIG_DIR=os.path.join(scratch, "jupyter"), JUPYTER_DATA_DIR=os.path.join(scratch, "jupyter"),
                   JUPYTER_PATH="", IPYTHONDIR=os.path.join(scratch, "ipython"), PYDEVD_DISABLE_FILE_VALIDATION="1")
        # The folders under /tmp that the page's commands write (--out) are removed first, so the page
        # runs as it does for a reader who runs it for the first time.
        for c in commands:
            for folder in re.findall(r"--out[= ]+(/tmp/\w[\w.-]*)", c["text"]):
                shutil.rmtree(folder, ignore_errors=True)
        session = Session(checkout, env)
        print(f"{page}: {count(len(commands), 'command')}, run from a copy of the repository in {checkout}")
        ran = skipped = 0
        printed_by = {}  # "of:" command -> the file of what it printed, for later blocks of its output
        checked = checked_lines = checked_numbers = unchecked = 0
        for n, c in enumerate(commands, 1):
            where = f"{page}:{c['line']}"
            why = exception_of(c["text"])
            if why:
                skipped += 1
                print(f"[{n}/{len(commands)}] {where}: skipped ({why}): {c['text']}")
                continue
            text, scaled = (c["text"], None) if c["expected_error"] else as_run(c["text"], small)
            print(f"[{n}/{len(commands)}] {where}: $ {text}" + (f"\n      (scaled: {scaled})" if scaled else ""),
                  flush=True)
            out_path = os.path.join(scratch, f"out{n}.txt")
            start = time.monotonic()
            if c["rule"]["of"] and text in printed_by:  # a second block of the same program's output
                rc, out_path = 0, printed_by[text]
            else:
                rc = session.run(text, out_path, COMMAND_TIMEOUT_S)
                ran += 1
                if c["rule"]["of"] and rc == 0:
                    printed_by[text] = out_path
            took = f"{time.monotonic() - start:.1f} s"
            with open(out_path, errors="replace") as f:
                output = f.read()
            if rc is None:
                problem = f"did not finish within {COMMAND_TIMEOUT_S} s"
            elif c["expected_error"] is None:
                problem = None if rc == 0 else f"exited with status {rc}"
            elif rc == 0:
                problem = f"was expected to fail with\n    {c['expected_error']}\n  but exited with status 0"
            elif " ".join(c["expected_error"].split()) not in " ".join(output.split()):
                problem = (f"failed (status {rc}) as expected, but without the error line the page shows:\n"
                           f"    {c['expected_error']}")
            else:
                problem = None
            verdict = ""
            if problem is None and c["expected_error"] is None and any(line.strip() for line in c["shown"]):
                if scaled:
                    unchecked += 1
                    verdict = "; its output not compared (scaled)"
                elif c["rule"]["mode"] == "none":
                    unchecked += 1
                    verdict = f"; its output not compared ({c['rule']['reason']})"
                else:
                    problem, lines, numbers = check_output(c["shown"], output, c["rule"])
                    if problem is None:
                        checked, checked_lines, checked_numbers = checked + 1, checked_lines + lines, checked_numbers + numbers
                        verdict = f"; output as the page shows it ({count(lines, 'line')}, {count(numbers, 'number')})"
            if problem:
                print(f"FAIL: {where}: the command\n    {text}\n  {problem}\n"
                      f"  (after {took}); the end of its output:\n{tail(out_path)}")
                print(f"{page}: FAILED at line {c['line']}; ran {count(ran, 'command')}, skipped {skipped} as listed exceptions")
                return 1
            print(f"      ok, {took}" + (f" (status {rc}, the page's error)" if c["expected_error"] else "") + verdict,
                  flush=True)
        numbers = prose_numbers(page_text)
        sources = {}  # a source command's status and output, run once however many rows read it
        for row in numbers:
            if row["command"] not in sources:
                out_path = os.path.join(scratch, "number.txt")
                rc = session.run(row["command"], out_path, COMMAND_TIMEOUT_S)
                with open(out_path, errors="replace") as f:
                    sources[row["command"]] = (rc, f.read())
            rc, printed = sources[row["command"]]
            problem = f"{row['command']!r} exited with status {rc}" if rc != 0 else check_number(row, page_text, printed)
            if problem:
                print(f"FAIL: {page}: the number {row['text']!r} in the prose: {problem}")
                return 1
            print(f"      number {row['text']!r}: as its source gives it")
        print(f"{page}: ran {count(ran, 'command')}, skipped {skipped} as listed exceptions; all ran as written")
        print(f"{page}: {count(len(numbers), 'number')} in the prose checked against their sources")
        print(f"{page}: output checked for {count(checked, 'command')} ({count(checked_lines, 'line')}, "
              f"{count(checked_numbers, 'number')}); shown but not compared for {unchecked}")
        return 0
    finally:
        if session:
            session.close()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
