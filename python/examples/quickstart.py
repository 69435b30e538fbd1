"""bke from Python on the bundled data: kernel learning for an embedding, BaNK regression and
classification against the RKS baseline, and a kernel student-t density. Run from the repository
root after `pip install ./python` (scikit-learn is needed only for the train/test split)."""

import csv
from pathlib import Path

import numpy as np

import bke

DATA = Path(__file__).resolve().parents[2] / "data"


def load(name):
    with open(DATA / f"{name}.csv") as f:
        rows = list(csv.reader(f))
    return rows[0], np.array(rows[1:], dtype=float)


def split(x, y, seed=0):
    idx = np.random.default_rng(seed).permutation(len(y))
    cut = int(0.8 * len(y))
    return x[idx[:cut]], x[idx[cut:]], y[idx[:cut]], y[idx[cut:]]


# Embedding: ML-II lengthscale, and NUTS draws of its posterior (seed 000)
_, ozone = load("ozone")
emb = bke.KernelEmbedding(random_state=0).fit(ozone[:, [4, 0]])
print(f"ML-II lengthscale {emb.lengthscale_:.3f} (median heuristic {emb.median_heuristic_:.3f})")
draws = emb.sample(chains=2, draws=200, warmup=200)
print("posterior lengthscale mean", draws.diagnostics["lengthscale"]["mean"])

# BaNK regression vs RKS (seed 001)
_, diabetes = load("diabetes")
xtr, xte, ytr, yte = split(diabetes[:, :-1], diabetes[:, -1])
for model in (bke.BankRegressor(random_state=0), bke.RKSRegressor(random_state=0)):
    model.fit(xtr, ytr)
    rmse = np.sqrt(np.mean((model.predict(xte) - yte) ** 2))
    print(f"{type(model).__name__}: test RMSE {rmse:.2f}, R² {model.score(xte, yte):.3f}")

# BaNK classification
_, cancer = load("breast_cancer")
xtr, xte, ytr, yte = split(cancer[:, :-1], cancer[:, -1])
clf = bke.BankClassifier(random_state=0).fit(xtr, ytr)
print(f"BankClassifier test accuracy {clf.score(xte, yte):.3f}")

# Kernel student-t density (seed 003) vs the Gaussian KDE
temp = ozone[:, [4]]
for d in (bke.KernelStudentT(random_state=0), bke.GaussianKDE()):
    d.fit(temp[::2])
    print(f"{type(d).__name__}: held-out mean log density {d.score(temp[1::2]) / len(temp[1::2]):.3f}")

# Kernel tests: banana class 0 against class 1, kernels chosen four ways (seed 000 §5)
_, banana = load("banana")
x, y = banana[banana[:, 2] == 0][:200, :2], banana[banana[:, 2] == 1][:200, :2]
for select in ("median", "bkl", "mmdagg", "bkl-bayes"):
    r = bke.mmd_test(x, y, select=select, permutations=500, seed=0)
    print(f"MMD with {select}: p = {r.pvalue:.4f}, lengthscale {r.lengthscale:.3f}, {len(r.kernels)} kernel(s)")
stat, p = bke.Hsic(select="bkl").test(ozone[:, [4]], ozone[:, [0]])
print(f"HSIC temperature vs ozone: statistic {stat:.4g}, p = {p:.4f}")
