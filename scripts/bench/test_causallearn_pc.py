"""Checks scripts/bench/causallearn_pc.py end to end on two 3-variable nonlinear data sets (n = 200):
a chain x -> y -> z (skeleton x-y, y-z, no x-z) and a collider x -> z <- y (v-structure oriented).
Run with the bench venv's python: `-m pytest scripts/bench/test_causallearn_pc.py`, or plain."""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).with_name("causallearn_pc.py")


def write_csv(path, names, cols):
    np.savetxt(path, np.column_stack(cols), delimiter=",", header=",".join(names), comments="")


def run_anchor(tmp):
    rng = np.random.default_rng(36)
    n = 200
    x = rng.normal(size=n)
    y = np.sin(2 * x) + 0.3 * rng.normal(size=n)
    z = y ** 2 + 0.3 * rng.normal(size=n)
    write_csv(tmp / "chain.csv", ["x", "y", "z"], [x, y, z])
    x, y = rng.normal(size=n), rng.normal(size=n)
    z = np.tanh(x) + np.cos(y) + 0.3 * rng.normal(size=n)
    write_csv(tmp / "collider.csv", ["x", "y", "z"], [x, y, z])
    subprocess.run([sys.executable, str(SCRIPT), str(tmp), "--timeout", "300"], check=True)
    return {g["name"]: g for g in json.loads((tmp / "causallearn.json").read_text())["graphs"]}


def skeleton(g):
    return {tuple(sorted(e)) for e in g["directed"] + g["undirected"] + g["bidirected"]}


def test_chain_and_collider():
    with tempfile.TemporaryDirectory() as d:
        graphs = run_anchor(Path(d))
    chain, collider = graphs["chain"], graphs["collider"]
    assert chain["error"] is None and collider["error"] is None
    assert chain["names"] == ["x", "y", "z"]
    assert skeleton(chain) == {(0, 1), (1, 2)}  # x-y, y-z, no x-z
    assert chain["directed"] == []  # a chain's Markov equivalence class orients nothing
    assert sorted(collider["directed"]) == [[0, 2], [1, 2]] and skeleton(collider) == {(0, 2), (1, 2)}
    assert chain["seconds"] > 0


def test_a_rerun_reuses_unchanged_data_sets():
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        first = run_anchor(tmp)
        out = tmp / "causallearn.json"
        doc = json.loads(out.read_text())
        for g in doc["graphs"]:
            g["seconds"] = -1.0  # a marker: a reused entry keeps it
        out.write_text(json.dumps(doc))
        with (tmp / "collider.csv").open("a") as f:
            f.write("0.1,0.2,0.3\n")  # the collider's data change: it must rerun
        subprocess.run([sys.executable, str(SCRIPT), str(tmp)], check=True)
        again = {g["name"]: g for g in json.loads(out.read_text())["graphs"]}
    assert again["chain"]["seconds"] == -1.0 and again["chain"]["sha256"] == first["chain"]["sha256"]
    assert again["collider"]["seconds"] > 0 and again["collider"]["n"] == 201


if __name__ == "__main__":
    test_chain_and_collider()
    test_a_rerun_reuses_unchanged_data_sets()
    print("2 passed, 0 failed")
