"""bke.KernelStudentT against the CLI (`bke density fit/eval/sample`, same data and seeds), its
normalisation (the density integrates to 1 over the line, finite everywhere), model files both ways,
and bad input."""

import pickle

import numpy as np
import pytest

import bke
from conftest import load, write_csv

FIXED = dict(lengthscale=4.0, alpha=1.0, beta=0.01, sigma0_sq=1.0)


@pytest.fixture(scope="module")
def temp():
    return load("ozone", ["temp"])[:120]


def test_fixed_density_equals_cli_and_integrates_to_one(temp, cli, tmp_path):
    data = write_csv(tmp_path / "t.csv", temp, ["temp"])
    model = tmp_path / "m.json"
    cli("density", "fit", "--data", data, "--model-out", model, "--lengthscale", 4, "--alpha", 1,
        "--beta", 0.01, "--sigma0-sq", 1)
    grid = np.linspace(temp.min() - 20, temp.max() + 20, 801).reshape(-1, 1)
    at = write_csv(tmp_path / "g.csv", grid, ["temp"])
    expected = np.array(cli("density", "eval", "--model", model, "--at", at)["log_density"], dtype=float)
    d = bke.KernelStudentT(**FIXED).fit(temp)
    got = d.score_samples(grid)
    # every point has a finite log density, beyond the box too
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    assert d.normalised_
    # the normalised density integrates to 1 over the line (trapezoid in x = 60 + 10 sinh v)
    v = np.linspace(-40.0, 40.0, 40001)
    far = d.score_samples((60.0 + 10.0 * np.sinh(v)).reshape(-1, 1))
    assert np.trapezoid(np.exp(far) * 10.0 * np.cosh(v), v) == pytest.approx(1.0, abs=1e-5)
    assert d.score_samples([[5.0e3]])[0] < d.score_samples([[200.0]])[0] < d.score_samples([[120.0]])[0]
    np.testing.assert_allclose(bke.KernelStudentT.load(model).score_samples(grid), got, rtol=1e-12)
    d.save(tmp_path / "py.json")
    # a model fitted on a bare array names its columns x0, x1, …: choose the query columns by name
    again = cli("density", "eval", "--model", tmp_path / "py.json", "--at", at, "--columns", "temp")["log_density"]
    np.testing.assert_allclose(np.array(again, dtype=float), got, rtol=1e-12)
    s = cli("density", "sample", "--model", model, "--n", 50, "--seed", 4)
    np.testing.assert_allclose(d.sample(50, random_state=4), s["samples"], rtol=1e-12)
    assert d.score(temp) == pytest.approx(np.sum(d.score_samples(temp)))


def test_selected_density_equals_cli(temp, cli, tmp_path):
    x = temp[:50]
    data = write_csv(tmp_path / "t.csv", x, ["temp"])
    summary = cli("density", "fit", "--data", data, "--model-out", tmp_path / "m.json", "--seed", 2, "--folds", 3)
    d = bke.KernelStudentT(folds=3, random_state=2).fit(x)
    assert d.alpha_ == summary["alpha"] and d.beta_ == summary["beta"]
    np.testing.assert_allclose(d.lengthscales_, summary["lengthscales"], rtol=1e-12)
    assert d.sample(20).shape == (20, 1)
    e = pickle.loads(pickle.dumps(d))
    np.testing.assert_array_equal(e.score_samples(x), d.score_samples(x))


def test_density_bad_input(temp):
    with pytest.raises(ValueError, match="unknown kernel|kernel"):
        bke.KernelStudentT(kernel="nope", **FIXED).fit(temp)
    with pytest.raises(ValueError, match="beta"):
        bke.KernelStudentT(lengthscale=1.0, alpha=1.0, beta=-1.0, sigma0_sq=1.0).fit(temp)
    d = bke.KernelStudentT(**FIXED).fit(temp)
    with pytest.raises(ValueError, match="X has 2 features, but KernelStudentT is expecting 1"):
        d.score_samples(np.ones((3, 2)))


def _kde_numpy(x, q, h):
    z = (q[:, None, :] - x[None, :, :]) / h
    logk = -0.5 * np.sum(z**2, axis=2) - np.sum(np.log(h)) - 0.5 * x.shape[1] * np.log(2 * np.pi)
    m = logk.max(axis=1, keepdims=True)
    return (m + np.log(np.mean(np.exp(logk - m), axis=1, keepdims=True)))[:, 0]


def test_gaussian_kde_equals_the_dense_formula_and_loo_choice():
    rng = np.random.default_rng(3)
    x, q = rng.normal(size=(60, 2)) * [1.0, 3.0], rng.normal(size=(7, 2))
    fixed = bke.GaussianKDE(bandwidth=[0.4, 0.9]).fit(x)
    np.testing.assert_allclose(fixed.score_samples(q), _kde_numpy(x, q, np.array([0.4, 0.9])), rtol=1e-12)
    sd = x.std(axis=0, ddof=1)
    silver = bke.GaussianKDE(bandwidth="silverman").fit(x)
    np.testing.assert_allclose(silver.bandwidths_, sd * (4 / (4 * 60)) ** (1 / 6), rtol=1e-12)
    factors = [0.1, 0.3, 0.6, 1.2]

    def loo(c):
        h = c * sd
        z = (x[:, None, :] - x[None, :, :]) / h
        k = np.exp(-0.5 * np.sum(z**2, axis=2)) / (np.prod(h) * 2 * np.pi)
        np.fill_diagonal(k, 0.0)
        return np.mean(np.log(k.sum(axis=1) / 59))

    cv = bke.GaussianKDE(factors=factors).fit(x)
    best = max(factors, key=loo)
    np.testing.assert_allclose(cv.bandwidths_, best * sd, rtol=1e-12)
    assert cv.loo_log_likelihood_ == pytest.approx(loo(best), rel=1e-10)
    draws = cv.sample(4000, random_state=1)
    assert draws.shape == (4000, 2)
    np.testing.assert_allclose(draws.mean(axis=0), x.mean(axis=0), atol=0.15)
