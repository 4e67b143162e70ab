"""What a run of a sextant command did with bad input, judged one way for every test
that feeds it some (the fuzzer of the readers, the hostile-input probe).

Outcomes: "exit 0" (accepted: the caller checks the output), "clear error" (exit 1 or
2 with an error line that starts with "sextant"), and the failures: "crash" (killed by a
signal, an exit status sextant never uses, a Python traceback, a sanitizer report),
"hang" (past its time limit), "unclear error" (a non-zero exit without the line)."""
import subprocess

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:", "SUMMARY: UndefinedBehavior")
CRASH_MARKS = ("Traceback (most recent call last)", "Segmentation fault", "terminate called", "core dumped",
               "Assertion `") + SANITIZER_MARKS
FAILURES = ("crash", "hang", "unclear error", "silent wrong")


def judge_exit(returncode, stderr, allowed=(0, 1, 2)):
    """(outcome, detail) of a finished command."""
    mark = next((m for m in CRASH_MARKS if m in stderr), None)
    if mark:
        line = next(l for l in stderr.splitlines() if mark in l)
        return "crash", line.strip()[:200]
    if returncode not in allowed:
        return "crash", "exit status %d" % returncode
    if returncode == 0:
        return "exit 0", ""
    if not any(l.startswith("sextant") for l in stderr.splitlines()):
        return "unclear error", "exit %d without a 'sextant...' line: %r" % (returncode, stderr[-300:])
    return "clear error", stderr.strip().splitlines()[-1][:200]


def run(args, timeout, **kwargs):
    """(outcome, detail, completed process or None) of running args."""
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout, errors="replace", **kwargs)
    except subprocess.TimeoutExpired:
        return "hang", "over %g s" % timeout, None
    outcome, detail = judge_exit(p.returncode, p.stderr)
    return outcome, detail, p
