"""The local process pool from a plain script: a script with no `if __name__ == "__main__":` guard, run as a
file, piped to `python -` and run as a module (`python -m`), maps on two worker processes, and the workers never
run the script again (spawn would hand them its path or module name; from stdin, a file named `<stdin>`)."""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """\
from poolbench_data.players.pool import imap_bounded
print("the script ran")
print(list(imap_bounded(abs, [1, -2, 3], 2)))
"""
RUNS = {"file": ["plain.py"], "stdin": ["-"], "module": ["-m", "plain"]}


@pytest.mark.parametrize("how", RUNS)
def test_a_plain_script_maps_on_worker_processes_that_do_not_run_it(how, tmp_path):
    (tmp_path / "plain.py").write_text(SCRIPT)
    done = subprocess.run([sys.executable, *RUNS[how]], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          input=SCRIPT if how == "stdin" else None)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == ["the script ran", "[1, 2, 3]"], done.stdout
