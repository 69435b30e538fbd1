#!/usr/bin/env python3
"""Anchor run: sbi's neural posterior estimation (NPE, or SNPE with 2 rounds) on every problem of
a folder (issue 33).

Usage: sbi_npe.py DIR [--timeout S] [--only NAME...] [--seed N] [--method npe|snpe2 --simulator CMD]
Run it with the sbi venv's python (scripts/sbi-venv.sh prints it).

Contract:
- Input: every problem NAME with a DIR/NAME.sims.csv (sorted by name); --only restricts the run to
  the given names. Per problem, comma-separated files whose first row holds the column names:
  - NAME.sims.csv: one simulation per row; the columns named theta_* are the parameters θ, the
    others the statistics x (the simulations must come from the prior; rows whose x has NaN or
    inf, failed simulations, are dropped).
  - NAME.obs.csv: the statistics' names (any order), then one or more rows, each an observed x.
  - NAME.prior.json: {"kind": "uniform", "low": [...], "high": [...]} or
    {"kind": "normal", "mean": [...], "sd": [...]}, one entry per parameter (independent).
  - NAME.truth.csv (optional): the parameters' names (any order), then one row per obs row: the
    θ that generated that x, for simulation-based-calibration (SBC) ranks.
- Method: single-round NPE (sbi's NPE, i.e. NPE_C/APT, which in round one is maximum-likelihood
  training of q(θ|x) on the (θ, x) pairs) with sbi's default density estimator "maf": a masked
  autoregressive flow (nflows), 5 transforms, 50 hidden units, θ and x z-scored; sbi's default
  training (Adam, lr 5e-4, batch 200, 10 % held out, stop after 20 epochs without improvement).
  No simulator is called. torch is seeded with --seed (default 0) before building the network and
  again before sampling; 1 torch/BLAS thread. The trained network is amortized: it is evaluated
  at every obs row. Per row, L = 1000 posterior samples; sbi rejects draws outside a uniform
  prior's box and draws again, for at most 10 s per row, after which the row keeps what it has
  ("samples_used" < L; 0 samples gives null statistics).
- Method --method snpe2: sequential NPE with 2 rounds (sbi's NPE_C/APT, Greenberg et al. 2019),
  per obs row, not amortized. Round 1 is the NPE above on NAME.sims.csv (m rows, failed ones
  included: the round's budget). Then for each obs row x_o in turn: m draws θ from the round-1
  posterior at x_o (the same rejection and 10 s limit; fewer if it ends), simulated by the
  --simulator command, and a copy of the round-1 inference trained on to its end on both rounds'
  pairs with sbi's atomic (APT) loss and the round-1 posterior at x_o as round 2's proposal
  (sbi's defaults: 10 atoms, training resumed, not restarted); L samples of the round-2 posterior
  at x_o as above. Simulator calls in all: 2 m, so m = half the budget. torch is seeded with
  --seed before round 1 and with 100003 · seed + row + 1 before each row's round 2.
  --simulator CMD (required with snpe2; split like a shell line) is run as
  `CMD NAME THETA OUT SEED ROW`: THETA is a CSV with the theta_* names of NAME.sims.csv as its
  header and one θ per row; the command writes OUT, a CSV whose header holds the statistics' names
  of NAME.sims.csv and whose rows are the statistics simulated at THETA's rows, in order (NaN for
  a simulation that failed: it is dropped), and exits with 0; NAME is the problem, SEED is --seed,
  ROW the obs row (0-based), so that the command can pick independent random streams; its stdout
  is discarded, the last line of its stderr is the problem's error when it fails.
- Output: DIR/sbi.json, rewritten after every problem:
    {"tool": "sbi <version>", "torch": "<version>", "method": "npe" or "snpe2",
     "density_estimator": "maf", "seed": N, "samples": L,
     "problems": [{"name", "n_sims", "params": [theta names], "results": [per obs row, in order:
        {"mean", "sd" (ddof 1), "q025", "q975", "q10", "q90", "q25", "q75" (numpy's linear
         quantiles), "min", "max": one number per parameter; "rank": per parameter the number
         of samples below the true value (0..samples_used, the SBC rank statistic of Talts et
         al. 2018), or null without truth; "samples_used"}],
       "epochs", "train_seconds", "sample_seconds" (all rows together), "sha256", "error"}]}
  With snpe2 each results entry adds "round2_sims" (round 2's θ, failed simulations included) and
  "epochs_round2" (round 2 trains on the θ whose simulation did not fail); "epochs" is round 1's; "train_seconds" counts round 1 and every row's round 2,
  "sample_seconds" the proposal draws and the posterior samples, and the problem entry adds
  "simulate_seconds": the wall seconds of the simulator command (all rows).
  "sha256" is the SHA-256 of the bytes of NAME.sims.csv, .obs.csv, .prior.json and, when present,
  .truth.csv, concatenated in that order. A problem that fails or runs past --timeout wall seconds
  (default 600, counting the interpreter's start and imports, 5-10 s) gets "error" set (the last
  line of its stderr, or "timeout after S s") and empty results; "train_seconds" then holds the
  wall seconds until the failure. The run goes on.
- Reuse: an entry already in DIR/sbi.json (same tool, torch, method, seed and L) whose "sha256"
  matches its files and has no error is kept without rerunning (with snpe2 the simulator command
  is trusted to be the same). With --only, entries of other problems are kept too.
- stderr: one progress line per problem (name, sims, parameters, obs rows, seconds).
"""
import argparse
import contextlib
import hashlib
import json
import os
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

L = 1000  # posterior samples per obs row
SAMPLE_CAP_S = 10.0  # rejection sampling's time limit per obs row
SUFFIXES = (".sims.csv", ".obs.csv", ".prior.json", ".truth.csv")
THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
QUANTILES = {"q025": 0.025, "q975": 0.975, "q10": 0.1, "q90": 0.9, "q25": 0.25, "q75": 0.75}


def read_csv(path, names=None):
    """(header names, float rows as a 2-D array); with names given, the columns reordered to them."""
    import numpy as np
    header = [s.strip() for s in Path(path).read_text().splitlines()[0].split(",")]
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if data.shape[1] != len(header):
        raise ValueError(f"{Path(path).name}: {len(header)} names but {data.shape[1]} columns")
    if names is not None:
        if sorted(header) != sorted(names):
            raise ValueError(f"{Path(path).name}: columns {header}, expected {names}")
        data = data[:, [header.index(n) for n in names]]
    return header, data


def make_prior(spec, p):
    """The torch prior of NAME.prior.json: sbi's BoxUniform or independent normals."""
    import torch
    from sbi.utils import BoxUniform
    from torch.distributions import Independent, Normal
    kinds = {"uniform": ("low", "high"), "normal": ("mean", "sd")}
    if spec.get("kind") not in kinds:
        raise ValueError(f"prior: kind {spec.get('kind')!r}, expected uniform or normal")
    a, b = kinds[spec["kind"]]
    lo, hi = (torch.tensor(spec[k], dtype=torch.float32) for k in (a, b))
    if lo.shape != (p,) or hi.shape != (p,):
        raise ValueError(f"prior: {a} and {b} need {p} entries (one per parameter)")
    return BoxUniform(lo, hi) if spec["kind"] == "uniform" else Independent(Normal(lo, hi), 1)


def summary(s, truth):
    """One results entry from samples s (L' x p) and the true θ (or None)."""
    import numpy as np
    if len(s) == 0:
        return dict({k: None for k in ("mean", "sd", *QUANTILES, "min", "max", "rank")},
                    samples_used=0)
    out = {"mean": s.mean(0).tolist(), "sd": s.std(0, ddof=1).tolist() if len(s) > 1 else None}
    out.update({k: np.quantile(s, q, axis=0).tolist() for k, q in QUANTILES.items()})
    out.update(min=s.min(0).tolist(), max=s.max(0).tolist())
    out["rank"] = None if truth is None else (s < truth).sum(0).astype(int).tolist()
    out["samples_used"] = len(s)
    return out


class NoTracker:
    """sbi's training-metrics tracker protocol (sbi.sbi_types.Tracker), doing nothing: by default
    sbi writes TensorBoard logs to ./sbi-logs, in the caller's folder."""
    log_dir = None

    def log_metric(self, name, value, step=None):
        pass

    def log_metrics(self, metrics, step=None):
        pass

    def log_params(self, params):
        pass

    def add_figure(self, name, figure, step=None):
        pass

    def flush(self):
        pass


def worker(folder, name, seed, method, simulator):
    """Trains NPE (or SNPE) on one problem and samples it; prints the entry's fields as JSON on
    stdout's last line (sbi's own prints go to stderr)."""
    with contextlib.redirect_stdout(sys.stderr):
        entry = fit_and_sample(folder, name, seed, method, simulator)
    print(json.dumps(entry))


def draw(posterior, xo, n, p):
    """n draws of the posterior at xo (fewer when rejection runs past SAMPLE_CAP_S), as floats."""
    import warnings
    import numpy as np
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the partial-return warning: samples_used says it
        try:
            return posterior.sample((n,), x=torch.tensor(xo[None], dtype=torch.float32),
                                    show_progress_bars=False, max_sampling_time=SAMPLE_CAP_S,
                                    return_partial_on_timeout=True).numpy().astype(float)
        except RuntimeError as e:  # no draw inside the prior within the time limit
            if "max_sampling_time" not in str(e):
                raise
            return np.empty((0, p))


def finite(x):
    """The rows of x without NaN or inf (a boolean mask)."""
    import numpy as np
    return np.isfinite(x).all(axis=1)


def simulate(simulator, name, params, stats, theta, seed, row):
    """The statistics the --simulator command returns at the rows of theta (the contract)."""
    import shlex
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        t, o = Path(d) / "theta.csv", Path(d) / "x.csv"
        t.write_text(",".join(params) + "\n"
                     + "".join(",".join(repr(float(v)) for v in r) + "\n" for r in theta))
        proc = subprocess.run([*shlex.split(simulator), name, str(t), str(o), str(seed), str(row)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if proc.returncode != 0:
            raise RuntimeError("simulator: " + (proc.stderr.strip().splitlines()
                                                or [f"exit status {proc.returncode}"])[-1])
        x = read_csv(o, stats)[1]
    if len(x) != len(theta):
        raise RuntimeError(f"simulator: {len(x)} rows for {len(theta)} parameters")
    return x


def fit_and_sample(folder, name, seed, method="npe", simulator=None):
    """worker()'s work: the entry's results, epochs, train_seconds and sample_seconds (with
    snpe2, simulate_seconds too)."""
    import copy
    import torch
    from sbi.inference import NPE
    torch.set_num_threads(1)
    # a copy of an inference object (SNPE's round 2) gets sbi's default tracker, which writes
    # TensorBoard logs to ./sbi-logs: this process makes none
    NPE._default_tracker = lambda self: NoTracker()
    base = Path(folder) / name
    header, sims = read_csv(f"{base}.sims.csv")
    params = [h for h in header if h.startswith("theta_")]
    stats = [h for h in header if not h.startswith("theta_")]
    if not params or not stats:
        raise ValueError("sims.csv needs theta_* columns and at least one statistic")
    sims = sims[finite(sims[:, [header.index(h) for h in stats]])]
    theta = torch.tensor(sims[:, [header.index(h) for h in params]], dtype=torch.float32)
    x = torch.tensor(sims[:, [header.index(h) for h in stats]], dtype=torch.float32)
    obs = read_csv(f"{base}.obs.csv", stats)[1]
    truth = read_csv(f"{base}.truth.csv", params)[1] if Path(f"{base}.truth.csv").exists() else None
    if truth is not None and len(truth) != len(obs):
        raise ValueError(f"truth.csv has {len(truth)} rows, obs.csv {len(obs)}")
    prior = make_prior(json.loads(Path(f"{base}.prior.json").read_text()), len(params))

    torch.manual_seed(seed)
    start = time.perf_counter()
    npe = NPE(prior=prior, density_estimator="maf", show_progress_bars=False, tracker=NoTracker())
    npe.append_simulations(theta, x).train()
    train_seconds = time.perf_counter() - start
    posterior = npe.build_posterior()
    entry = {"epochs": npe._summary["epochs_trained"][-1]}
    row_truth = (lambda i: None) if truth is None else (lambda i: truth[i])

    if method == "npe":
        torch.manual_seed(seed)
        start = time.perf_counter()
        results = [summary(draw(posterior, xo, L, len(params)), row_truth(i))
                   for i, xo in enumerate(obs)]
        return dict(entry, results=results, train_seconds=train_seconds,
                    sample_seconds=time.perf_counter() - start)

    sample_seconds = simulate_seconds = 0.0
    results = []
    for i, xo in enumerate(obs):
        torch.manual_seed(100003 * seed + i + 1)
        start = time.perf_counter()
        theta2 = draw(posterior, xo, len(sims), len(params))
        sample_seconds += time.perf_counter() - start
        if len(theta2) == 0:  # no round-1 draw inside the prior: no round 2, no samples
            results.append(dict(summary(theta2, None), round2_sims=0, epochs_round2=None))
            continue
        start = time.perf_counter()
        x2 = simulate(simulator, name, params, stats, theta2, seed, i)
        simulate_seconds += time.perf_counter() - start
        start = time.perf_counter()
        ok = finite(x2)  # sbi's multi-round NPE refuses NaN rather than dropping it
        n2, theta2, x2 = len(theta2), theta2[ok], x2[ok]
        npe2 = copy.deepcopy(npe)
        proposal = posterior.set_default_x(torch.tensor(xo[None], dtype=torch.float32))
        npe2.append_simulations(torch.tensor(theta2, dtype=torch.float32),
                                torch.tensor(x2, dtype=torch.float32), proposal=proposal).train()
        train_seconds += time.perf_counter() - start
        start = time.perf_counter()
        s = draw(npe2.build_posterior(), xo, L, len(params))
        sample_seconds += time.perf_counter() - start
        results.append(dict(summary(s, row_truth(i)), round2_sims=n2,
                            epochs_round2=npe2._summary["epochs_trained"][-1]))
    return dict(entry, results=results, train_seconds=train_seconds,
                sample_seconds=sample_seconds, simulate_seconds=simulate_seconds)


def describe(folder, name):
    """The fields of a problem entry known without running it: name, n_sims, params."""
    with (folder / f"{name}.sims.csv").open() as f:
        header = [s.strip() for s in f.readline().split(",")]
        n = sum(1 for line in f if line.strip())
    return {"name": name, "n_sims": n, "params": [h for h in header if h.startswith("theta_")],
            "results": [], "epochs": None, "train_seconds": None, "sample_seconds": None}


def run_one(folder, name, seed, timeout, method="npe", simulator=None):
    """Runs worker() in a fresh interpreter; returns the problem entry, with "error" on failure
    (then "train_seconds" is the wall time until the failure)."""
    env = dict(os.environ, **{v: "1" for v in THREAD_VARS})
    cmd = [sys.executable, __file__, str(folder), "--worker", name, "--seed", str(seed),
           "--method", method]
    if simulator is not None:
        cmd += ["--simulator", simulator]
    entry, start = describe(folder, name), time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        entry["error"] = f"timeout after {timeout:g} s"
    else:
        result = None
        if proc.returncode == 0:
            try:
                result = json.loads(proc.stdout.strip().splitlines()[-1])
            except (IndexError, ValueError):  # no JSON on stdout's last line
                pass
        if result is not None:
            entry.update(result, error=None)
        else:
            entry["error"] = (proc.stderr.strip().splitlines()
                              or [f"exit status {proc.returncode}"])[-1]
    if entry["error"]:
        entry["train_seconds"] = time.perf_counter() - start
    for k in ("train_seconds", "sample_seconds", "simulate_seconds"):
        if k in entry:
            entry[k] = None if entry[k] is None else round(entry[k], 3)
    return entry


def digest(folder, name):
    """SHA-256 of the problem's files, concatenated (the contract's "sha256"); OSError if the
    obs or prior file is missing."""
    h = hashlib.sha256()
    for suffix in SUFFIXES:
        path = folder / f"{name}{suffix}"
        if suffix != ".truth.csv" or path.exists():
            h.update(path.read_bytes())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--only", nargs="+", metavar="NAME")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--method", choices=("npe", "snpe2"), default="npe")
    ap.add_argument("--simulator", metavar="CMD")
    ap.add_argument("--worker", metavar="NAME", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.method == "snpe2" and not args.simulator:
        ap.error("--method snpe2 needs --simulator CMD")
    if args.worker:
        return worker(args.dir, args.worker, args.seed, args.method, args.simulator)

    names = sorted(p.name[:-len(".sims.csv")] for p in args.dir.glob("*.sims.csv"))
    if args.only:
        missing = set(args.only) - set(names)
        if missing:
            sys.exit(f"sbi_npe: no {', '.join(sorted(missing))}.sims.csv in {args.dir}")
        names = [n for n in names if n in args.only]
    out = args.dir / "sbi.json"
    doc = {"tool": f"sbi {version('sbi')}", "torch": version("torch"), "method": args.method,
           "density_estimator": "maf", "seed": args.seed, "samples": L, "problems": []}
    old = json.loads(out.read_text()) if out.exists() else {}
    if any(old.get(k) != v for k, v in doc.items() if k != "problems"):
        old = {}
    done = {p["name"]: p for p in old.get("problems", []) if p.get("error") is None}
    if args.only:
        doc["problems"] = [p for p in old.get("problems", []) if p["name"] not in args.only]
    for name in names:
        try:
            sha = digest(args.dir, name)
        except OSError as e:  # a missing obs or prior file: nothing to run
            sha, cached, p = None, False, dict(describe(args.dir, name), error=str(e))
        else:
            cached = done.get(name, {}).get("sha256") == sha
            p = done[name] if cached else run_one(args.dir, name, args.seed, args.timeout,
                                                  args.method, args.simulator)
        p["sha256"] = sha
        doc["problems"] = sorted([q for q in doc["problems"] if q["name"] != name] + [p],
                                 key=lambda q: q["name"])
        tmp = out.with_suffix(".json.tmp")
        head = json.dumps({k: v for k, v in doc.items() if k != "problems"})[:-1]
        tmp.write_text(head + ', "problems": [\n' + ",\n".join(map(json.dumps, doc["problems"]))
                       + "\n]}\n")
        tmp.replace(out)
        status = f"error: {p['error']}" if p["error"] else (
            f"train {p['train_seconds']:.1f} s ({p['epochs']} epochs), "
            f"sample {p['sample_seconds']:.1f} s, "
            + (f"simulate {p['simulate_seconds']:.1f} s, " if "simulate_seconds" in p else "")
            + f"{sum(r['samples_used'] for r in p['results'])} samples")
        print(f"{name}: {p['n_sims']} sims, {len(p['params'])} params, {len(p['results'])} obs, "
              f"{status}{' (cached)' if cached else ''}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
