"""Run the CLI as a person does: through a pseudo-terminal of a given width."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def terminal(cols: int, *args) -> str:
    """``analyze ARGS`` through a pseudo-terminal of ``cols`` columns (COLUMNS set, TERM dumb),
    colours and carriage returns stripped; asserts exit 0."""
    main, sub = pty.openpty()
    env = {**os.environ, "COLUMNS": str(cols), "PYTHONPATH": str(ROOT), "TERM": "dumb"}
    p = subprocess.Popen([sys.executable, "-m", "cli.main", *map(str, args)], stdout=sub,
                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, env=env, cwd=ROOT)
    os.close(sub)
    chunks = []
    while True:
        try:
            b = os.read(main, 65536)
        except OSError:
            break
        if not b:
            break
        chunks.append(b)
    p.wait(timeout=120)
    os.close(main)
    assert p.returncode == 0
    return re.sub(r"\x1b\[[0-9;]*m", "", b"".join(chunks).decode("utf-8")).replace("\r", "")
