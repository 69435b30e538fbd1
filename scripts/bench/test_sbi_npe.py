"""Checks scripts/bench/sbi_npe.py end to end (about 50 s, and as long again for SNPE):
- conjugate Gaussian: θ ~ N(0, 1), x̄ | θ ~ N(θ, 0.5²/4) (the mean of 4 draws of N(θ, 0.5²)),
  2000 simulations; the exact posterior is N(16 x̄/17, 1/17). NPE's posterior mean and sd at four
  x̄ must be near the exact ones (tolerances below, from 20 training seeds), and the rank field
  must agree with the quantiles;
- a 2-D uniform prior with an observation at the box's corner, where 23 % of the flow's own draws
  fall outside the box (measured once): every kept sample lies inside it;
- reuse: a rerun keeps the unchanged problem and not the one whose files changed (here: lost its
  obs file, an error); another --seed reuses nothing; --timeout ends a problem with an error;
- --method snpe2 on the conjugate Gaussian (500 simulations from the prior, 500 per obs row from
  round 1's posterior, simulated by SIMULATOR below): the calls the simulator receives, the
  posterior mean and sd at two x̄ near the exact ones; a failing simulator is the problem's error.
Run with the sbi venv's python: `-m pytest scripts/bench/test_sbi_npe.py`, or plain."""
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

SCRIPT = Path(__file__).with_name("sbi_npe.py")
XBARS = [-1.5, -0.5, 0.5, 1.5]  # obs rows of the conjugate problem (x̄ ~ N(0, 1.0625) a priori)
EXACT_SD = 1 / math.sqrt(17)


def write_csv(path, names, rows):
    np.savetxt(path, np.atleast_2d(rows), delimiter=",", header=",".join(names), comments="",
               fmt="%.17g")


def write_conjugate(folder, name, n, xbars, seed, truth=None):
    """The conjugate Gaussian problem: n simulations (theta_mu, xbar) from the prior, obs rows
    xbars, prior N(0, 1), and truth rows when given."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n)
    xbar = theta + 0.5 / 2 * rng.normal(size=n)
    write_csv(folder / f"{name}.sims.csv", ["theta_mu", "xbar"], np.column_stack([theta, xbar]))
    write_csv(folder / f"{name}.obs.csv", ["xbar"], np.reshape(xbars, (-1, 1)))
    (folder / f"{name}.prior.json").write_text('{"kind": "normal", "mean": [0], "sd": [1]}')
    if truth is not None:
        write_csv(folder / f"{name}.truth.csv", ["theta_mu"], np.reshape(truth, (-1, 1)))


def write_box(folder, name, n, seed):
    """θ ~ U([0, 1]²), x = θ + N(0, 0.3² I); obs at the corner (0, 1) and the centre."""
    rng = np.random.default_rng(seed)
    theta = rng.uniform(size=(n, 2))
    x = theta + 0.3 * rng.normal(size=(n, 2))
    write_csv(folder / f"{name}.sims.csv", ["theta_a", "theta_b", "x_a", "x_b"],
              np.column_stack([theta, x]))
    write_csv(folder / f"{name}.obs.csv", ["x_b", "x_a"], [[1.0, 0.0], [0.5, 0.5]])  # by name
    (folder / f"{name}.prior.json").write_text('{"kind": "uniform", "low": [0, 0], "high": [1, 1]}')


# The --simulator of the snpe2 test: the conjugate Gaussian's x̄ | θ ~ N(θ, 0.25²) at THETA's rows,
# seeded by its arguments; it appends its arguments to calls.txt beside THETA's folder's parent.
SIMULATOR = """import sys, numpy as np
from pathlib import Path
name, theta, out, seed, row = sys.argv[1:]
with open(Path(sys.argv[0]).with_name("calls.txt"), "a") as f:
    f.write(" ".join([name, seed, row]) + "\\n")
t = np.loadtxt(theta, delimiter=",", skiprows=1, ndmin=2)
x = t[:, 0] + 0.25 * np.random.default_rng([int(seed), int(row)]).normal(size=len(t))
np.savetxt(out, x[:, None], header="xbar", comments="", fmt="%.17g")
"""


def run(folder, *extra):
    """Runs the script in folder, which it must leave without sbi's TensorBoard logs."""
    subprocess.run([sys.executable, str(SCRIPT), str(folder), *extra], check=True, cwd=folder)
    assert not (folder / "sbi-logs").exists()
    return json.loads((folder / "sbi.json").read_text())


def test_conjugate_box_and_reuse():
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        exact_mean = [16 * x / 17 for x in XBARS]
        write_conjugate(tmp, "conj", 2000, XBARS, seed=1, truth=exact_mean)
        write_box(tmp, "box", 500, seed=2)
        doc = run(tmp)
        assert doc["method"] == "npe" and doc["samples"] == 1000 and doc["tool"].startswith("sbi ")
        probs = {p["name"]: p for p in doc["problems"]}
        conj, box = probs["conj"], probs["box"]
        assert conj["error"] is None and box["error"] is None
        assert conj["n_sims"] == 2000 and conj["params"] == ["theta_mu"]
        assert conj["train_seconds"] > 0 and len(conj["results"]) == len(XBARS)
        for r, m in zip(conj["results"], exact_mean):
            assert r["samples_used"] == 1000
            # Tolerances from 20 simulation sets (data seeds 100..119, torch seed 0) at 2000
            # simulations, at these four x̄ (sbi 0.27.0, torch 2.15.0): |mean error| / exact sd
            # at most 0.32 (rms 0.11), sd / exact sd 0.875..1.163. The bounds leave room for
            # other platforms' float rounding to pick another of those networks.
            assert abs(r["mean"][0] - m) < 0.5 * EXACT_SD, (r["mean"], m)
            assert 0.75 < r["sd"][0] / EXACT_SD < 1.35, r["sd"]
            assert r["q025"][0] < r["q25"][0] < r["q75"][0] < r["q975"][0]
            # rank = samples below the truth (here the exact posterior mean, inside NPE's
            # quartiles given the bound above): then 250 <= rank <= 750 exactly
            assert r["q25"][0] < m < r["q75"][0]
            assert 250 <= r["rank"][0] <= 750
        assert box["params"] == ["theta_a", "theta_b"] and len(box["results"]) == 2
        for r in box["results"]:
            assert r["rank"] is None and r["samples_used"] == 1000
            assert min(r["min"]) >= 0 and max(r["max"]) <= 1
        corner = box["results"][0]  # x = (0, 1): θ_a near 0, θ_b near 1
        assert corner["mean"][0] < 0.4 < 0.6 < corner["mean"][1]  # exact: about 0.24, 0.76

        out = tmp / "sbi.json"
        for p in doc["problems"]:
            p["train_seconds"] = -1.0  # a marker: a reused entry keeps it
        out.write_text(json.dumps(doc))
        (tmp / "box.obs.csv").unlink()  # the box problem's files change: no reuse, and an error
        again = {p["name"]: p for p in run(tmp)["problems"]}
        assert again["conj"]["train_seconds"] == -1.0
        assert again["conj"]["sha256"] == conj["sha256"]
        assert "box.obs.csv" in again["box"]["error"] and again["box"]["results"] == []
        # another seed reuses nothing; a problem past --timeout gets an error, and the run ends
        timed = run(tmp, "--only", "conj", "--seed", "1", "--timeout", "2")
        assert timed["seed"] == 1 and [p["name"] for p in timed["problems"]] == ["conj"]
        assert timed["problems"][0]["error"] == "timeout after 2 s"


def test_snpe2():
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        sim = tmp / "sim.py"
        sim.write_text(SIMULATOR)
        xbars = [-1.5, 1.5]
        exact_mean = [16 * x / 17 for x in xbars]
        write_conjugate(tmp, "conj", 500, xbars, seed=1, truth=exact_mean)
        doc = run(tmp, "--method", "snpe2", "--simulator", f"{sys.executable} {sim}")
        assert doc["method"] == "snpe2"
        conj = doc["problems"][0]
        assert conj["error"] is None and conj["n_sims"] == 500 and conj["simulate_seconds"] > 0
        assert (tmp / "calls.txt").read_text().split("\n")[:2] == ["conj 0 0", "conj 0 1"]
        for r, m in zip(conj["results"], exact_mean):
            assert r["samples_used"] == 1000 and r["round2_sims"] == 500 and r["epochs_round2"] > 0
            # The bounds of the NPE test above (set there from 20 training seeds at 2000
            # simulations); not tuned for SNPE, which meets them at the pinned sbi and torch.
            assert abs(r["mean"][0] - m) < 0.5 * EXACT_SD, (r["mean"], m)
            assert 0.75 < r["sd"][0] / EXACT_SD < 1.35, r["sd"]
            assert 250 <= r["rank"][0] <= 750
        # a simulator that fails: the problem's error is its last stderr line
        write_conjugate(tmp, "small", 50, [0.0], seed=2)
        bad = f"{sys.executable} -c 'import sys; sys.exit(\"no simulator here\")'"
        doc = run(tmp, "--only", "small", "--method", "snpe2", "--simulator", bad)
        small = {p["name"]: p for p in doc["problems"]}["small"]
        assert small["error"] == "RuntimeError: simulator: no simulator here", small["error"]
        assert small["results"] == []


if __name__ == "__main__":
    test_conjugate_box_and_reuse()
    test_snpe2()
    print("2 passed, 0 failed")
