"""`charon`'s last line of defence: an exception that is not a CharonError (a bug,
not bad input) still ends in one line and a non-zero exit, unless CHARON_DEBUG asks
for the traceback."""

import os
import subprocess
import sys

SCRIPT = """
import sys
import charon_ir.api as api
import charon_ir.cli as cli

def boom(*args, **kwargs):
    raise ZeroDivisionError("an internal bug")

api.simulate = boom
sys.argv = ["charon", "simulate", "--model", "llama-3.1-8b", "--gpus", "8"]
cli.main()
"""


def run(debug: bool) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "CHARON_DEBUG"}
    if debug:
        env["CHARON_DEBUG"] = "1"
    return subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120)


def test_an_internal_error_is_one_line():
    r = run(debug=False)
    assert r.returncode != 0
    assert r.stderr.count("\n") == 1
    assert "Traceback" not in r.stderr
    assert "internal error" in r.stderr and "ZeroDivisionError: an internal bug" in r.stderr


def test_charon_debug_shows_the_traceback():
    r = run(debug=True)
    assert r.returncode != 0
    assert "Traceback" in r.stderr
