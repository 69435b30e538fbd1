"""Shared fixtures: the bundled datasets and a runner for the ``bke`` command-line tool (the oracle
of the "same results as the CLI" tests). ``cargo xtask test`` sets ``BKE_CLI`` to the debug binary."""

import csv
import json
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"


def load(name, columns=None):
    """A bundled CSV as a float64 array (all columns, or the named ones, in that order)."""
    with open(DATA / f"{name}.csv") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], np.array(rows[1:], dtype=np.float64)
    if columns is None:
        return body
    return body[:, [header.index(c) for c in columns]]


@pytest.fixture(scope="session")
def cli():
    """Runs ``bke ARGS...`` and returns its JSON output."""
    exe = os.environ.get("BKE_CLI") or shutil.which("bke")
    if not exe or not Path(exe).exists():
        pytest.skip("the bke binary is not available (cargo xtask test sets BKE_CLI)")

    def run(*args):
        out = subprocess.run([exe, *map(str, args)], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(out.stderr)
        return json.loads(out.stdout)

    return run


def write_csv(path, a, names=None):
    """Writes a 2-D array as a CSV with a header row; returns the path."""
    a = np.asarray(a, dtype=np.float64)
    names = names or [f"x{j}" for j in range(a.shape[1])]
    with open(path, "w") as f:
        f.write(",".join(names) + "\n")
        for row in a:
            f.write(",".join(repr(float(v)) for v in row) + "\n")
    return path
