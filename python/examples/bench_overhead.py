"""Overhead of a Python `bke.mmd_test` call over the same call in Rust (the library: MmdParams →
check → fit → test → JSON, `cargo run -p bke-bench --example mmd_call`), at n = m = 200 and 2000,
median heuristic, 1000 permutations, one worker thread; CPU and wall seconds per call. Run from the
repository root with the package installed (`cargo xtask test --python` builds it):

    python python/examples/bench_overhead.py
"""

import json
import subprocess
import time

import numpy as np

import bke


def sample(n, shift):
    i = np.arange(n, dtype=float)
    return np.column_stack([np.sin(0.37 * i), np.cos(0.53 * i)]) + shift


def python_call(n, reps):
    x, y = sample(n, 0.0), sample(n, 0.1)
    bke.mmd_test(x, y, permutations=1000, n_jobs=1)  # warm-up
    c0, t0 = time.process_time(), time.perf_counter()
    for _ in range(reps):
        bke.mmd_test(x, y, permutations=1000, n_jobs=1)
    return (time.process_time() - c0) / reps, (time.perf_counter() - t0) / reps


if __name__ == "__main__":
    out = subprocess.run(
        ["cargo", "run", "--quiet", "-p", "bke-bench", "--example", "mmd_call"],
        capture_output=True, text=True, check=True,
    ).stdout
    for line in out.splitlines():
        rust = json.loads(line)
        cpu, wall = python_call(rust["n"], rust["reps"])
        print(json.dumps({
            "n": rust["n"], "reps": rust["reps"],
            "rust_cpu_s": rust["cpu_s"], "python_cpu_s": round(cpu, 6),
            "overhead_cpu_s": round(cpu - rust["cpu_s"], 6),
            "rust_wall_s": rust["wall_s"], "python_wall_s": round(wall, 6),
            "overhead_wall_s": round(wall - rust["wall_s"], 6),
        }))
