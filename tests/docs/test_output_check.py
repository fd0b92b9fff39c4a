#!/usr/bin/python3
"""The docs test's comparison of printed output with a page's shown output (run_page_commands.py),
on small made-up pages: a shown number altered by one digit fails, a timing does not, a block's
tolerance and "…" work as its comment says, and a number in the prose is checked against its
source. Exits non-zero naming the first case that went wrong."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run_page_commands as docs  # noqa: E402

PRINTED = """training 118528 parameters, layout serial on 1 rank
step     1/10 | loss 5.5076 | grad norm 14.088 | lr 5.00e-04 | 192.5 ms | 5320 tok/s
step     2/10 | loss 4.5346 | grad norm 6.430 | lr 1.00e-03 | 122.6 ms | 8349 tok/s
equivalence: L4 gradient relative error (worst: transformer.h.0.ln_2.bias) 8.367e-07
"""


def page(marker, shown):
    comment = f"<!-- output: {marker} -->\n" if marker else ""
    return f"Text.\n\n{comment}```\n$ build/optimus train --steps 10\n{shown}```\n"


def verdict(marker, shown):
    """None when the shown output passes against PRINTED, else the checker's complaint."""
    (command,) = docs.commands_of(page(marker, shown))
    problem, _, _ = docs.check_output(command["shown"], PRINTED, command["rule"])
    return problem


CASES = [  # (what, marker, shown output, whether it must pass)
    ("the printed lines as shown", None,
     "step     1/10 | loss 5.5076 | grad norm 14.088 | lr 5.00e-04 | 192.5 ms | 5320 tok/s\n", True),
    ("another machine's timings", None,
     "step     1/10 | loss 5.5076 | grad norm 14.088 | lr 5.00e-04 | 776.9 ms | 1318 tok/s\n", True),
    ("a loss altered in its last digit", None,
     "step     1/10 | loss 5.5077 | grad norm 14.088 | lr 5.00e-04 | 192.5 ms | 5320 tok/s\n", False),
    ("lines left out with ...", None, "training 118528 parameters, layout serial on 1 rank\n...\n"
     "step     2/10 | loss 4.5346 | grad norm 6.430 | lr 1.00e-03 | 1.0 ms | 1 tok/s\n", True),
    ("lines in another order", None, "step     2/10 | loss 4.5346 | grad norm 6.430 | lr 1.00e-03 | 1 ms | 1 tok/s\n"
     "step     1/10 | loss 5.5076 | grad norm 14.088 | lr 5.00e-04 | 1 ms | 1 tok/s\n", False),
    ("a parameter count altered", None, "training 118529 parameters, layout serial on 1 rank\n", False),
    ("a word altered", None, "training 118528 parameters, layout 1d on 1 rank\n", False),
    ("within an absolute bound", "numbers within 1e-6",
     "equivalence: L4 gradient relative error (worst: …) 8.9e-07\n", True),
    ("outside an absolute bound", "numbers within 1e-7",
     "equivalence: L4 gradient relative error (worst: …) 9.9e-07\n", False),
    ("within a relative bound", "numbers within 1%", "step     1/10 | loss 5.51 | grad norm 14.1 | lr 5.00e-04 | 1 ms | 1 tok/s\n", True),
    ("outside a relative bound", "numbers within 0.01%", "step     1/10 | loss 5.51 | grad norm 14.1 | lr 5.00e-04 | 1 ms | 1 tok/s\n", False),
    ("text only", "text only", "step     9/99 | loss 1.0 | grad norm 1.0 | lr 1.00e-03 | 1 ms | 1 tok/s\n", True),
    ("text only, a word altered", "text only", "step     9/99 | lost 1.0 | grad norm 1.0 | lr 1.00e-03 | 1 ms | 1 tok/s\n", False),
]


def main():
    failures = 0
    for what, marker, shown, passes in CASES:
        problem = verdict(marker, shown)
        ok = (problem is None) == passes
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {what}: expected to {'pass' if passes else 'fail'}, "
              f"{'passed' if problem is None else 'failed'}" + ("" if problem is None else f" ({problem.splitlines()[0]})"))
    (unchecked,) = docs.commands_of(page("not checked, a reason", "anything\n"))
    if unchecked["rule"]["mode"] != "none" or unchecked["rule"]["reason"] != "a reason":
        failures += 1
        print(f"FAIL a 'not checked' comment read as {unchecked['rule']}")
    (tied,) = docs.commands_of("<!-- output: exact; of: build/optimus plan --model tiny -->\n```text\nmemory\n```\n")
    if tied["text"] != "build/optimus plan --model tiny" or tied["shown"] != ["memory"]:
        failures += 1
        print(f"FAIL an output block tied by 'of:' read as {tied}")
    (bench,) = docs.commands_of("<!-- output: exact; of: scripts/bench.sh --report bench/serial.jsonl -->\n"
                                "```\n$ scripts/bench.sh \\\n    --x\nmodel  impl\n```\n")
    if bench["text"] != "scripts/bench.sh --report bench/serial.jsonl" or bench["shown"] != ["model  impl"]:
        failures += 1
        print(f"FAIL a benchmark's transcript tied by 'of:' read as {bench}")
    prose = "The plan says each rank peaks at 11.8 GiB.\n\n<!-- numbers\n" \
            "peaks at 11.8 | build/optimus plan | total\\s+([0-9.]+) | /1024 | 0.05\n-->\n"
    (row,) = docs.prose_numbers(prose)
    for printed, passes in (("    total    12062.4    11966.4", True), ("    total    12600.0    11966.4", False)):
        problem = docs.check_number(row, prose, printed)
        if (problem is None) != passes:
            failures += 1
            print(f"FAIL the prose number 11.8 GiB against {printed.split()[1]} MiB: {problem or 'passed'}")
    if docs.check_number(row, prose.replace("at 11.8 GiB", "at 12.3 GiB"), "total 12062.4") is None:
        failures += 1
        print("FAIL a prose number altered in the text (12.3 GiB) still passed")
    print(f"{len(CASES) + 6 - failures} of {len(CASES) + 6} cases as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
