"""The wheel installs and works where no Rust toolchain is on ``PATH``, as most Python users have it.
``cargo xtask test`` sets ``BKE_WHEEL`` to the wheel it built and installed for the other tests."""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

WHEEL = os.environ.get("BKE_WHEEL")
RUST_TOOLS = ("cargo", "rustc", "rustup", "maturin")

# Runs in the fresh environment: a two-sample test on clearly different samples must reject.
SMOKE = """
import numpy as np, bke
rng = np.random.default_rng(0)
x, y = rng.normal(size=(60, 1)), rng.normal(1.5, 1.0, size=(60, 1))
stat, pvalue = bke.MMD().test(x, y)
assert pvalue < 0.05, pvalue
print(bke.__version__, bke.backends())
"""


def path_without_rust():
    """``PATH`` less every folder that holds a Rust tool (or maturin)."""
    folders = os.environ.get("PATH", "").split(os.pathsep)
    keep = [d for d in folders if d and not any(shutil.which(t, path=d) for t in RUST_TOOLS)]
    return os.pathsep.join(keep)


@pytest.mark.skipif(not WHEEL, reason="BKE_WHEEL is set by cargo xtask test")
def test_wheel_installs_and_runs_without_rust(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CARGO", "RUSTUP", "VIRTUAL_ENV"))}
    env["PATH"] = path_without_rust()
    for tool in RUST_TOOLS:
        assert shutil.which(tool, path=env["PATH"]) is None, f"{tool} is still on PATH"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(tmp_path / "venv")], check=True, env=env)
    python = tmp_path / "venv" / "bin" / "python"
    start = time.monotonic()
    subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", WHEEL],
        check=True,
        env=env,
        timeout=600,
    )
    seconds = time.monotonic() - start
    print(f"pip install {Path(WHEEL).name}: {seconds:.1f} s")
    out = subprocess.run([python, "-c", SMOKE], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "faer" in out.stdout
