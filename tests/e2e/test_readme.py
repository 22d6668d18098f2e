"""Every command of the README runs as written (the README cannot drift from the command line).

The ``sh`` blocks after the set-up section are read from README.md; each command runs from the
repository root with ``--out`` moved into a temporary folder (a command without one gets one), and
must exit 0 within its time limit. The set-up commands themselves are what CI runs.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import MPIEXEC, ROOT

TIMEOUT_S = 240


def readme_commands() -> list[str]:
    """The commands of the README's ``sh`` blocks after its set-up section, one per line."""
    text = (ROOT / "README.md").read_text()
    after = text[text.index("## Commands"):]
    out = []
    for block in re.findall(r"```sh\n(.*?)```", after, re.S):
        for line in block.splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def test_the_readme_has_commands():
    cmds = readme_commands()
    assert len(cmds) >= 5 and all("pwormhole" in c for c in cmds), cmds


@pytest.mark.slow
@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_runs(command, tmp_path):
    argv = shlex.split(command)
    if argv[0].endswith("mpiexec"):
        if not MPIEXEC:
            pytest.skip("no mpiexec")
        argv[0] = MPIEXEC
    bin_dir = Path(sys.executable).parent
    argv = [str(bin_dir / "pwormhole") if a in ("pwormhole", ".venv/bin/pwormhole") else a for a in argv]
    if "--out" in argv:
        i = argv.index("--out") + 1
        argv[i] = str(tmp_path / Path(argv[i]).name)
    else:
        argv += ["--out", str(tmp_path / "out")]
    r = subprocess.run(argv + ["--no-progress"] if "run" in argv or "compare" in argv else argv, cwd=ROOT,
                       capture_output=True, text=True, timeout=TIMEOUT_S)
    assert r.returncode == 0, (command, r.stderr[-2000:])
    assert "Traceback" not in r.stderr
