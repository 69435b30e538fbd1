#!/usr/bin/env python3
"""Anchor run: causal-learn's PC with its KCI test on every data set of a folder (issue 36).

Usage: causallearn_pc.py DIR [--alpha 0.05] [--timeout S] [--only NAME...]
Run it with the bench venv's python (scripts/bench-venv.sh prints it).

Contract:
- Input: every DIR/*.csv (sorted by name), comma separated, first row the variable names, then
  numeric rows (n samples x p variables). --only restricts the run to the given file stems.
- Each data set: pc(data, alpha, indep_test="kci", stable=True, uc_rule=0, show_progress=False)
  with causal-learn's KCI defaults (no per-data tuning), in its own subprocess with 1 BLAS thread,
  killed after --timeout wall seconds (default 600). Data sets run one after another.
- Output: DIR/causallearn.json, rewritten after every data set:
    {"tool": "causal-learn <version>", "test": "kci", "alpha": 0.05,
     "graphs": [{"name": stem, "names": [...], "directed": [[i, j], ...],
                 "undirected": [[i, j], ...], "bidirected": [[i, j], ...], "n": rows,
                 "seconds": wall seconds of pc(), "error": null or "<what>"}, ...]}
  Indices refer to "names"; directed [i, j] means i -> j; undirected and bidirected pairs have
  i < j (PC with uc_priority=2, causal-learn's default, leaves "bidirected" empty). A data set that
  fails or times out has "error" set and empty edge lists; the run goes on. Each entry also holds
  "sha256", the hash of its CSV's bytes.
- Reuse: an entry already in DIR/causallearn.json (same tool and alpha) whose "sha256" matches its
  CSV and has no error is kept without rerunning (a rerun of the same data is free; a study can fill
  the file while it writes the data sets). With --only, entries of other data sets are kept too.
- stderr: one progress line per data set (name, n x p, seconds, edges).
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")


def edges(graph):
    """Edge lists from causal-learn's cg.G.graph (causallearn/graph/GeneralGraph.py,
    add_directed_edge: graph[j, i] = 1 and graph[i, j] = -1 for i -> j; Endpoint.TAIL = -1,
    Endpoint.ARROW = 1, causallearn/graph/Endpoint.py), i.e. graph[a, b] is the mark at a of the
    edge a-b: both -1 is i --- j, both 1 is i <-> j (PC.py pc_alg docstring says the same)."""
    directed, undirected, bidirected = [], [], []
    p = len(graph)
    for i in range(p):
        for j in range(i + 1, p):
            a, b = int(graph[i, j]), int(graph[j, i])
            if (a, b) == (0, 0):
                continue
            elif (a, b) == (-1, 1):
                directed.append([i, j])
            elif (a, b) == (1, -1):
                directed.append([j, i])
            elif (a, b) == (-1, -1):
                undirected.append([i, j])
            elif (a, b) == (1, 1):
                bidirected.append([i, j])
            else:
                raise ValueError(f"unexpected endpoints graph[{i},{j}]={a}, graph[{j},{i}]={b}")
    return directed, undirected, bidirected


def worker(path, alpha):
    """Runs PC+KCI on one CSV; prints the graph entry (less "name") as JSON on stdout's last line."""
    import numpy as np
    from causallearn.search.ConstraintBased.PC import pc

    names = [s.strip() for s in Path(path).read_text().splitlines()[0].split(",")]
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    if data.shape[1] != len(names):
        raise ValueError(f"{len(names)} names but {data.shape[1]} columns")
    np.random.seed(0)  # KCI's default gamma approximation draws nothing; this is belt and braces
    start = time.perf_counter()
    cg = pc(data, alpha, indep_test="kci", stable=True, uc_rule=0, show_progress=False)
    seconds = time.perf_counter() - start
    directed, undirected, bidirected = edges(cg.G.graph)
    print(json.dumps({"names": names, "directed": directed,
                      "undirected": undirected, "bidirected": bidirected, "seconds": seconds}))


def run_one(path, alpha, timeout):
    """Runs worker() in a fresh interpreter; returns the graph entry, with "error" on failure."""
    env = dict(os.environ, **{v: "1" for v in THREAD_VARS})
    cmd = [sys.executable, __file__, str(path), "--worker", "--alpha", str(alpha)]
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        entry = {"seconds": time.perf_counter() - start, "error": f"timeout after {timeout:g} s"}
    else:
        if proc.returncode == 0:
            entry = dict(json.loads(proc.stdout.strip().splitlines()[-1]), error=None)
        else:
            last = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            entry = {"seconds": time.perf_counter() - start, "error": last}
    with path.open() as f:
        names = [s.strip() for s in f.readline().split(",")]
        n = sum(1 for line in f if line.strip())
    return {"name": path.stem, "names": names, "n": n,
            "directed": entry.get("directed", []), "undirected": entry.get("undirected", []),
            "bidirected": entry.get("bidirected", []), "seconds": round(entry["seconds"], 3),
            "error": entry["error"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--alpha", type=float, default=0.05)
    ap.add_argument("--timeout", type=float, default=600.0)
    ap.add_argument("--only", nargs="+", metavar="NAME")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # dir is one CSV
    args = ap.parse_args()
    if args.worker:
        return worker(args.dir, args.alpha)

    files = sorted(args.dir.glob("*.csv"))
    if args.only:
        missing = set(args.only) - {f.stem for f in files}
        if missing:
            sys.exit(f"causallearn_pc: no {', '.join(sorted(missing))}.csv in {args.dir}")
        files = [f for f in files if f.stem in args.only]
    out = args.dir / "causallearn.json"
    doc = {"tool": f"causal-learn {version('causal-learn')}", "test": "kci", "alpha": args.alpha,
           "graphs": []}
    old = json.loads(out.read_text()) if out.exists() else {}
    if (old.get("tool"), old.get("alpha")) != (doc["tool"], doc["alpha"]):
        old = {}
    done = {g["name"]: g for g in old.get("graphs", []) if g.get("error") is None and "sha256" in g}
    if args.only:
        doc["graphs"] = [g for g in old.get("graphs", []) if g["name"] not in args.only]
    for path in files:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        cached = done.get(path.stem, {}).get("sha256") == digest
        g = done[path.stem] if cached else dict(run_one(path, args.alpha, args.timeout), sha256=digest)
        doc["graphs"] = sorted([h for h in doc["graphs"] if h["name"] != g["name"]] + [g],
                               key=lambda g: g["name"])
        tmp = out.with_suffix(".json.tmp")
        head = json.dumps({k: v for k, v in doc.items() if k != "graphs"})[:-1]
        tmp.write_text(head + ', "graphs": [\n' + ",\n".join(map(json.dumps, doc["graphs"])) + "\n]}\n")
        tmp.replace(out)
        n_edges = len(g["directed"]) + len(g["undirected"]) + len(g["bidirected"])
        status = f"error: {g['error']}" if g["error"] else (
            f"{n_edges} edges ({len(g['directed'])} directed)")
        status += " (cached)" if cached else ""
        print(f"{g['name']}: {g['n']}x{len(g['names'])}, {g['seconds']:.1f} s, {status}",
              file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
