"""BankRegressor and RKSRegressor against scikit-learn's RBFSampler + RidgeCV pipeline on a bundled
dataset: test RMSE (mean ± standard error over random 80/20 splits) and fit+predict time (wall
and process CPU seconds, which count every thread).

    python python/examples/bench_bank_vs_sklearn.py [dataset] [splits]    # default: diabetes 5
"""

import csv
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.kernel_approximation import RBFSampler
from sklearn.linear_model import RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import bke

DATA = Path(__file__).resolve().parents[2] / "data"


def load(name):
    with open(DATA / f"{name}.csv") as f:
        rows = list(csv.reader(f))
    a = np.array(rows[1:], dtype=float)
    return a[:, :-1], a[:, -1]


def models(seed):
    return {
        "bke.BankRegressor": bke.BankRegressor(random_state=seed),
        "bke.RKSRegressor": bke.RKSRegressor(random_state=seed),
        "sklearn RBFSampler(256)+RidgeCV": make_pipeline(
            StandardScaler(), RBFSampler(n_components=256, gamma=0.1, random_state=seed),
            RidgeCV(alphas=np.logspace(-4, 2, 13)),
        ),
    }


def main(name="diabetes", splits=5):
    x, y = load(name)
    results = {}
    for s in range(splits):
        idx = np.random.default_rng(s).permutation(len(y))
        cut = int(0.8 * len(y))
        tr, te = idx[:cut], idx[cut:]
        for label, m in models(s).items():
            w0, c0 = time.perf_counter(), time.process_time()
            pred = m.fit(x[tr], y[tr]).predict(x[te])
            wall, cpu = time.perf_counter() - w0, time.process_time() - c0
            rmse = float(np.sqrt(np.mean((pred - y[te]) ** 2)))
            results.setdefault(label, []).append((rmse, wall, cpu))
    print(f"{name}: n = {len(y)}, d = {x.shape[1]}, {splits} random 80/20 splits")
    for label, r in results.items():
        r = np.array(r)
        se = r[:, 0].std(ddof=1) / np.sqrt(len(r)) if len(r) > 1 else float("nan")
        print(f"  {label:34s} RMSE {r[:, 0].mean():8.3f} ± {se:6.3f}   wall {r[:, 1].mean():7.3f} s   "
              f"CPU {r[:, 2].mean():7.3f} s")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "diabetes", int(sys.argv[2]) if len(sys.argv) > 2 else 5)
