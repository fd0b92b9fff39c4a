#!/usr/bin/python3
"""The scripts of scripts/ refuse bad arguments before they measure, build or write anything: for each
bad case of one script, the script ends within a few seconds with exit status 2, prints exactly one
line in all (stdout and stderr together), "SCRIPT: error: ..." naming the problem, no traceback and
no "unbound variable", and leaves every file as it was (a temporary workspace, and the repository's
bench/ and data/hardware/, where the scripts write by default). The programs a script would go on to run (mpiexec, cmake,
ip, apt-get, ...) are stand-ins that fail loudly, and OPTIMUS_BUILD_DIR names an empty folder, so a
check that lets a bad case through cannot start a measurement or a build.

Usage: test_script_args.py SCRIPT ROOT   (SCRIPT: a file name in scripts/, a key of CASES below)
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

# The placeholders in the cases: {tmp} the workspace, {file} a file of text there, {rows} a file of
# JSON lines of another script's results, {folder} a folder there, {missing} a path that does not exist.
# /proc/NAME: a path in a folder no file can be written into, even by root.
OUT_CASES = [(["--out", "{folder}"], "--out {folder} is a folder"),
             (["--out", "{file}/results.jsonl"], "{file} is not a folder"),
             (["--out", "/proc/results.jsonl"], "cannot write --out /proc/results.jsonl")]
HEAD = ["HEAD", "HEAD"]  # bench_ab's two revisions

# SCRIPT: (the name its messages start with, [(arguments, a phrase of the error line, environment)]).
CASES = {
    "calibrate": ("calibrate", [
        (["--batch", "0"], "--batch: must be a whole number from 1 to 64, not '0'"),
        (["--batch", "-8"], "--batch: must be a whole number from 1 to 64, not '-8'"),
        (["--batch", "9223372036854775808"], "not '9223372036854775808'"),
        (["--batch", "two"], "not 'two'"),
        (["--model", "bogus"], "--model: invalid choice: 'bogus'"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["--out"], "--out: expected one argument"),
        (["--quick", "--out", "{folder}"], "--out {folder} is a folder"),
        (["--quick", "--out", "{file}/local.json"], "{file} is not a folder"),
        (["--quick", "--out", "/proc/local.json"], "cannot write --out /proc/local.json")]),
    "bench.sh": ("bench", [
        (["--rounds", "9223372036854775808"], "--rounds must be a whole number from 1 to 100, not '9223372036854775808'"),
        (["--rounds", "0"], "--rounds must be a whole number from 1 to 100, not '0'"),
        (["--rounds", "two"], "not 'two'"),
        (["--rounds"], "--rounds needs a value"),
        (["--report"], "--report needs a value"),
        (["--report", "{missing}"], "--report {missing} does not exist"),
        (["--report", "{folder}"], "--report {folder} is not a regular file"),
        (["--report", "{file}"], "--report {file} is not JSON lines"),
        (["--report", "{rows}"], "--report {rows} does not hold the rows of these tables"),
        (["--report", "{rows}", "extra"], "--report takes one file and nothing else"),
        (["--bogus"], "unknown option '--bogus'"),
        (["{tmp}/a.jsonl", "{tmp}/b.jsonl"], "give one OUT file, not 2"),
        (["{folder}"], "OUT {folder} is a folder"),
        (["{file}/serial.jsonl"], "{file} is not a folder"),
        (["/proc/serial.jsonl"], "cannot write OUT /proc/serial.jsonl")]),
    "bench_1d.sh": ("bench", [
        (["--report", "{missing}"], "--report {missing} does not exist"),
        (["--report", "{rows}"], "--report {rows} does not hold the rows of these tables"),
        (["--report"], "--report needs a value"),
        (["-x"], "unknown option '-x'"),
        (["{tmp}/a.jsonl", "{tmp}/b.jsonl"], "give one OUT file, not 2 arguments"),
        (["{folder}"], "OUT {folder} is a folder"),
        (["/proc/tp1d.jsonl"], "cannot write OUT /proc/tp1d.jsonl")]),
    "bench_2d.sh": ("bench", [
        (["--report", "{file}"], "--report {file} is not JSON lines"),
        (["--report", "{rows}"], "--report {rows} does not hold the rows of these tables"),
        (["-x"], "unknown option '-x'"),
        (["{folder}"], "OUT {folder} is a folder"),
        (["{file}/tp2d.jsonl"], "{file} is not a folder"),
        (["{tmp}/tp2d.jsonl"], "MAX_BATCH_MIB must be a whole number from 1 to 1048576, not '0'",
         {"MAX_BATCH_MIB": "0"})]),
    "bench_ab": ("bench_ab", [
        (HEAD + ["--threads", "a"], "--threads: must be whole numbers from 1 to 256"),
        (HEAD + ["--threads", "0"], "not '0'"),
        (HEAD + ["--threads", "1,1"], "each once, not '1,1'"),
        (HEAD + ["--models", "bogus"], "'bogus' is not one of them"),
        (HEAD + ["--models", "tiny,"], "'' is not one of them in 'tiny,'"),
        (HEAD + ["--op-kinds", "layernorm,bogus"], "'bogus' is not one of them"),
        (HEAD + ["--rounds", "1"], "--rounds: must be a whole number from 3 to 1000 (a verdict"),
        (HEAD + ["--rounds", "2"], "not '2'"),
        (HEAD + ["--steps", "0"], "--steps: must be a whole number from 1 to 1000"),
        (HEAD + ["--warmup", "-1"], "--warmup: must be a whole number from 0 to 1000"),
        (HEAD + ["--batch", "9223372036854775808"], "--batch: must be a whole number from 1 to 1024"),
        (["HEAD"], "the following arguments are required: rev_b"),
        (["no-such-revision", "HEAD"], "'no-such-revision' is not a commit of this repository")]
        + [(HEAD + args, phrase) for args, phrase in OUT_CASES]),
    "bench_3d": ("bench_3d", [
        (["--rates", "0"], "--rates: must be whole numbers from 1 to 100000"),
        (["--rates", "400,"], "not '400,'"),
        (["--rates", "fast"], "not 'fast'"),
        (["--repeats", "0"], "--repeats: must be a whole number from 1 to 100"),
        (["--profile", "{missing}"], "--profile {missing} does not exist"),
        (["--profile", "{file}"], "--profile {file} is not JSON"),
        (["--report", "{missing}"], "--report {missing} does not exist"),
        (["--report", "{rows}"], "--report {rows} does not hold the rows of these tables")] + OUT_CASES),
    "bench_allreduce_algorithm": ("bench_allreduce_algorithm", [
        ([], "RATE must be a whole number from 1 to 100000, not '0'", {"RATE": "0"}),
        ([], "ROUNDS must be a whole number from 1 to 100, not '9223372036854775808'",
         {"ROUNDS": "9223372036854775808"}),
        (["{folder}"], "OUT {folder} is a folder"),
        (["/proc/ar.txt"], "cannot write OUT /proc/ar.txt"),
        (["-x"], "unknown option '-x'"),
        (["{tmp}/a.txt", "{tmp}/b.txt"], "give one OUT file, not 2 arguments")]),
    "bench_cluster": ("bench_cluster", [
        (["--rates", "0"], "--rates: must be whole numbers from 1 to 100000"),
        (["--rates", "100,,400"], "not '100,,400'")] + OUT_CASES),
    "bench_gpt2.sh": ("bench_gpt2", [
        (["--threads", "0"], "--threads must be a whole number from 1 to 256, not '0'"),
        (["--threads"], "--threads needs a value"),
        (["--bogus"], "unknown argument '--bogus'")]),
    "bench_memory": ("bench_memory", [
        (["--budget", "0"], "--budget: must be a number above 0 and at most 1000000, not '0'"),
        (["--budget", "nan"], "not 'nan'"),
        (["--budget", "-1"], "not '-1'"),
        (["--repeats", "0"], "--repeats: must be a whole number from 1 to 100")] + OUT_CASES),
    "bench_overlap": ("bench_overlap", [
        (["--rate", "0"], "--rate: must be a whole number from 1 to 100000"),
        (["--rate", "9223372036854775808"], "not '9223372036854775808'"),
        (["--repeats", "x"], "--repeats: must be a whole number from 1 to 100")] + OUT_CASES),
    "bench_placement": ("bench_placement", [(["--bogus"], "unrecognized arguments: --bogus")] + OUT_CASES),
    "bench_practice": ("bench_practice", [(["--bogus"], "unrecognized arguments: --bogus")] + OUT_CASES),
    "bench_scale": ("bench_scale", [
        (["--repeats", "0"], "--repeats: must be a whole number from 1 to 100"),
        (["--cluster", "--rate", "0"], "--rate: must be a whole number from 1 to 100000")] + OUT_CASES),
    "bench_torch.py": ("bench_torch.py", [
        (["--steps", "0"], "--steps: must be a whole number from 1 to 1000"),
        (["--warmup", "-1"], "--warmup: must be a whole number from 0 to 1000"),
        (["--batch", "0"], "--batch: must be a whole number from 1 to 4096"),
        (["--models", "bogus"], "--models: invalid choice: 'bogus'")]),
    "paper_claims": ("paper_claims", [(["--bogus"], "unrecognized arguments: --bogus")] + OUT_CASES),
    "validate_time_model": ("validate_time_model", [
        (["--repeats", "0"], "--repeats: must be a whole number from 1 to 100"),
        (["--runs", "0"], "--runs: must be a whole number from 1 to 100"),
        (["--profile", "{missing}"], "--profile {missing} does not exist"),
        (["--profile", "{file}"], "--profile {file} is not JSON")] + OUT_CASES),
    "crossover": ("crossover", [(["--bogus"], "unrecognized arguments: --bogus")] + OUT_CASES),
    "cluster": ("cluster", [
        ([], "give a subcommand"),
        (["bogus"], "unknown subcommand 'bogus'"),
        (["up", "--name", "clitest"], "up needs --hosts H (1 to 16)"),
        (["up", "--name", "clitest", "--hosts"], "--hosts needs a value"),
        (["up", "--name", "clitest", "--hosts", "0"], "--hosts must be a whole number from 1 to 16, not '0'"),
        (["up", "--name", "clitest", "--hosts", "17"], "not '17'"),
        (["up", "--name", "clitest", "--hosts", "2", "--rate", "0"], "--rate (Mbit/s) must be a whole number"),
        (["up", "--name", "clitest", "--hosts", "2", "--rate", "9223372036854775808"], "not '9223372036854775808'"),
        (["up", "--name", "CLI", "--hosts", "2"], "--name must be 1 to 8 lower-case letters"),
        (["up", "--name"], "--name needs a value"),
        (["up", "--name", "clitest", "--hosts", "2", "--bogus"], "unknown argument '--bogus' for 'cluster up'"),
        (["up", "--name", "clitest", "--hosts", "2", "--cores", "4"], "--cores belongs to --slurm"),
        (["down", "--name", "clitest", "--hosts", "2"], "--hosts belongs to 'cluster up', not to 'down'"),
        (["up", "--name", "clitest", "--hosts", "2", "--owner", "0"], "--owner must be a whole number from 1"),
        (["up", "--name", "clitest", "--hosts", "2", "--owner", "4194303"], "--owner 4194303 is no running process"),
        (["down", "--name", "clitest", "--owner", "1"], "--owner belongs to 'cluster up', not to 'down'"),
        (["run", "--name", "clitest", "--stale"], "--stale belongs to 'cluster down', not to 'run'"),
        (["kill-host", "--name", "clitest", "one"], "kill-host's host must be a whole number from 0 to 15"),
        (["slurm", "--name", "clitest"], "give a Slurm command")]),
    "remeasure_memory": ("remeasure_memory", [
        (["{missing}"], "FILE {missing} does not exist"),
        (["{file}"], "FILE {file} is not JSON lines"),
        (["{folder}"], "FILE {folder} is not a regular file"),
        (["--bogus"], "unrecognized arguments: --bogus")]),
    "prepare_corpus": ("prepare_corpus", [
        (["--source", "{missing}"], "{missing} is not a folder"),
        (["--out", "{file}"], "--out {file} exists and is not a folder"),
        (["--out", "{file}/fortunes"], "{file} is not a folder"),
        (["--bogus"], "unrecognized arguments: --bogus")]),
    "prepare_bpe": ("prepare_bpe", [
        (["--forse"], "unknown argument '--forse'"),
        (["--force", "x"], "unknown argument '--force'")]),
    "train_tokenizer": ("train_tokenizer", [
        (["--vocab", "10", "--out", "{tmp}/tok", "{file}"], "--vocab must be a whole number from 257 to 100000000"),
        (["--vocab", "9223372036854775808", "--out", "{tmp}/tok", "{file}"], "not '9223372036854775808'"),
        (["--vocab"], "--vocab needs a value"),
        (["--vocab", "300", "--out", "{file}", "{file}"], "--out {file} exists and is not a folder"),
        (["--vocab", "300", "--out", "{file}/tok", "{file}"], "{file} is not a folder"),
        (["--vocab", "300", "--out", "{tmp}/tok", "{missing}"], "the text file {missing} does not exist"),
        (["--vocab", "300", "--out", "{tmp}/tok"], "give --vocab V, --out DIR and one or more text files"),
        (["--bogus"], "unknown flag --bogus")]),
    "compare_tokenizers": ("compare_tokenizers", [
        (["--steps"], "--steps needs a value"),
        (["--steps", "0"], "--steps must be a whole number from 20 to 100000"),
        (["--steps", "9223372036854775808"], "not '9223372036854775808'"),
        (["--speed", "--repeats", "0"], "--repeats must be a whole number from 1 to 100"),
        (["--speed", "--steps", "100"], "--steps belongs to the runs, not to --speed"),
        (["--repeats", "2"], "--repeats belongs to --speed"),
        (["--bogus"], "unknown argument '--bogus'")]),
    "compare.sh": ("compare", [
        ([], "STEPS must be a whole number from 1 to 10000, not '0'", {"STEPS": "0"}),
        ([], "LAYOUTS names 1 run(s); give two or more", {"LAYOUTS": "serial"}),
        ([], "LAYOUTS: '4d:2' is not LAYOUT:RANKS", {"LAYOUTS": "serial 4d:2"}),
        ([], "LAYOUTS: the ranks of '1d:0' must be a whole number", {"LAYOUTS": "serial 1d:0"}),
        ([], "OUT {file} exists and is not a folder", {"OUT": "{file}"})]),
    "run": ("run", [
        ([], "RANKS must be a whole number from 1 to 1024, not 'four'", {"RANKS": "four"}),
        ([], "TOKENS must be bpe or bytes, not 'words'", {"TOKENS": "words"})]),
    "gpu_check.sh": ("gpu_check", [
        (["--bogus"], "unknown argument '--bogus'"),
        (["--dry-run", "x"], "not 2 arguments"),
        (["--dry-run"], "GPU_CHECK_SECONDS must be a whole number from 1 to 86400", {"GPU_CHECK_SECONDS": "-1"})]),
    "gpu_ab.sh": ("gpu_ab", [
        (["--prepare"], "--prepare needs a value"),
        (["--prepare", "no-such-revision"], "--prepare no-such-revision: not a commit of this repository"),
        (["--bogus"], "unknown argument '--bogus'"),
        ([], "GPU_AB_ROUNDS must be a whole number from 1 to 100, not '0'", {"GPU_AB_ROUNDS": "0"})]),
    "gpu_bare_dry_run": ("gpu_bare_dry_run", [
        (["--without"], "--without needs a value"),
        (["--without", "Not_A_Package"], "--without takes a Debian package name"),
        (["--bogus"], "unknown argument '--bogus'")]),
}

# What a script would start once past its checks: each stands in, says so and fails.
GUARDED = ["mpiexec", "mpirun", "cmake", "ninja", "ip", "tc", "apt-get", "unshare", "nvidia-smi", "sbatch"]
SECONDS = 5  # a refusal takes well under a second; this leaves room for a loaded machine


def snapshot(tmp, root):
    """Every entry of the workspace, and of the repository folders the scripts write their results
    into by default, with its size and modification time; and whether bench_ab's builds are there."""
    entries = [("build-ab", os.path.exists(os.path.join(root, "build-ab")))]
    for dirpath, dirnames, filenames in os.walk(tmp):
        for name in dirnames + filenames:
            st = os.lstat(os.path.join(dirpath, name))
            entries.append((os.path.join(dirpath, name), st.st_size, st.st_mtime_ns))
    for folder in ("bench", "data/hardware"):
        for name in sorted(os.listdir(os.path.join(root, folder))):
            st = os.lstat(os.path.join(root, folder, name))
            entries.append((os.path.join(folder, name), st.st_size, st.st_mtime_ns))
    return sorted(entries, key=str)


def workspace(tmp):
    """The placeholders' files and the stand-ins; the values of the placeholders."""
    places = {"tmp": tmp, "file": os.path.join(tmp, "text.txt"), "rows": os.path.join(tmp, "rows.jsonl"),
              "folder": os.path.join(tmp, "folder"), "missing": os.path.join(tmp, "missing.jsonl")}
    with open(places["file"], "w") as f:
        f.write("not the file a script wants\n")
    with open(places["rows"], "w") as f:
        f.write('{"impl": "someone else", "model": "tiny"}\n')
    os.mkdir(places["folder"])
    guard = os.path.join(tmp, "guard")
    os.mkdir(guard)
    for program in GUARDED:
        with open(os.path.join(guard, program), "w") as f:
            f.write(f'#!/bin/sh\necho "GUARD: {program} started: the script went past its argument checks" >&2\n'
                    "exit 99\n")
        os.chmod(os.path.join(guard, program), 0o755)
    return places, guard


def run_case(script, args, env, cwd):
    """(exit status, output, seconds): the script with `args`, stopped after 30 s."""
    command = [script, *args] if not script.endswith(".py") else ["/usr/bin/python3", script, *args]
    start = time.monotonic()
    p = subprocess.Popen(command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return None, out, time.monotonic() - start
    return p.returncode, out, time.monotonic() - start


def check(name, prefix, case, root, tmp, places, env):
    """The failures of one case (none: it passed)."""
    args, phrase, extra = case[0], case[1], (case[2] if len(case) > 2 else {})
    args = [a.format(**places) for a in args]
    phrase = phrase.format(**places)
    case_env = dict(env, **{k: v.format(**places) for k, v in extra.items()})
    before = snapshot(tmp, root)
    rc, out, seconds = run_case(os.path.join(root, "scripts", name), args, case_env, tmp)
    lines = out.splitlines()
    shown = " ".join(f"{k}={v}" for k, v in extra.items())
    print(f"$ {shown + ' ' if shown else ''}scripts/{name} {' '.join(args)}\n  exit {rc} in {seconds:.2f} s: "
          + "\n  ".join(lines or ["(no output)"]))
    failures = []
    if rc != 2:
        failures.append(f"exit status {rc}, not 2")
    if len(lines) != 1:
        failures.append(f"{len(lines)} lines of output, not 1")
    elif not lines[0].startswith(f"{prefix}: error: "):
        failures.append(f"the line does not start with '{prefix}: error: '")
    if sum("error:" in line for line in lines) != 1 or phrase not in out:
        failures.append(f"not one 'error:' line saying '{phrase}'")
    for bad in ("Traceback", "unbound variable", "GUARD:"):
        if bad in out:
            failures.append(f"the output holds '{bad}'")
    if seconds > SECONDS:
        failures.append(f"took {seconds:.1f} s, more than {SECONDS} s")
    if snapshot(tmp, root) != before:
        failures.append("a file was written, changed or removed")
    return [f"scripts/{name} {' '.join(args)}: {f}" for f in failures]


def main():
    name, root = sys.argv[1], sys.argv[2]
    prefix, cases = CASES[name]
    failures = []
    with tempfile.TemporaryDirectory(prefix="script_args_") as tmp:
        places, guard = workspace(tmp)
        env = dict(os.environ, PATH=f"{guard}:{os.environ.get('PATH', '/usr/bin:/bin')}",
                   OPTIMUS_BUILD_DIR=os.path.join(tmp, "no-build"))
        for k in ("RATE", "ROUNDS", "STEPS", "LAYOUTS", "OUT", "RANKS", "TOKENS", "MAX_BATCH_MIB"):
            env.pop(k, None)  # the scripts' own settings come from the cases alone
        refused = 0
        for case in cases:
            found = check(name, prefix, case, root, tmp, places, env)
            failures += found
            refused += not found
    for f in failures:
        print("FAIL:", f)
    print(f"{refused} of {len(cases)} cases refused as they must be")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
