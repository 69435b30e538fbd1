"""bke.KernelEmbedding against the CLI (`bke embed fit/loglik/posterior`) and against finite
differences of its own objective."""

import pickle

import numpy as np
import pytest

import bke
from conftest import load, write_csv


@pytest.fixture(scope="module")
def ozone():
    return load("ozone", ["temp", "O3"])


def test_fit_equals_cli(ozone, cli, tmp_path):
    path = write_csv(tmp_path / "x.csv", ozone)
    expected = cli("embed", "fit", "--data", path, "--seed", 3)
    e = bke.KernelEmbedding(random_state=3).fit(ozone)
    assert e.lengthscale_ == pytest.approx(expected["lengthscale"], rel=1e-12)
    assert e.log_marginal_ == pytest.approx(expected["log_marginal"], rel=1e-12)
    assert e.landmark_indices_ == expected["landmark_indices"]
    assert e.n_data_ == expected["n_data"]
    assert len(e.optima_) == len(expected["local_optima"])
    assert e.median_heuristic_ == pytest.approx(expected["median_heuristic"], rel=1e-12)


def test_log_marginal_and_posterior_equal_cli(ozone, cli, tmp_path):
    x, z, q = ozone[:200], ozone[200:230], ozone[230:240]
    px, pz, pq = (write_csv(tmp_path / f"{n}.csv", a) for n, a in [("x", x), ("z", z), ("q", q)])
    expected = cli("embed", "loglik", "--data", px, "--landmarks", pz, "--lengthscale", "5", "--tau2", "0.5")
    e = bke.KernelEmbedding()
    r = e.log_marginal(x, z, lengthscale=5.0, tau2=0.5)
    assert r.value == pytest.approx(expected["log_marginal"], rel=1e-12)
    assert r.grad_log_tau2 == pytest.approx(expected["grad_log_tau2"], rel=1e-10)
    post = cli("embed", "posterior", "--data", px, "--at", pq, "--lengthscale", "5", "--tau2", "0.5")
    mean, var = e.posterior(q, X=x, lengthscale=5.0, tau2=0.5)
    np.testing.assert_allclose(mean, post["mean"], rtol=1e-10)
    np.testing.assert_allclose(var, post["variance"], rtol=1e-8, atol=1e-14)


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    x, z = rng.normal(size=(120, 2)), rng.normal(size=(15, 2))
    e = bke.KernelEmbedding(ard=True)
    ls, tau2, h = np.array([0.7, 1.3]), 0.8, 1e-5
    r = e.log_marginal(x, z, lengthscale=ls, tau2=tau2)
    for d in range(2):
        step = np.zeros(2)
        step[d] = h
        up = e.log_marginal(x, z, lengthscale=ls * np.exp(step), tau2=tau2).value
        down = e.log_marginal(x, z, lengthscale=ls * np.exp(-step), tau2=tau2).value
        assert r.grad_log_lengthscale[d] == pytest.approx((up - down) / (2 * h), rel=1e-5)
    up = e.log_marginal(x, z, lengthscale=ls, tau2=tau2 * np.exp(h)).value
    down = e.log_marginal(x, z, lengthscale=ls, tau2=tau2 * np.exp(-h)).value
    assert r.grad_log_tau2 == pytest.approx((up - down) / (2 * h), rel=1e-5)


def test_fitted_defaults_clone_and_pickle(ozone):
    e = bke.KernelEmbedding(num_landmarks=30, random_state=1).fit(ozone)
    r = e.log_marginal()
    assert r.value == pytest.approx(e.log_marginal_, rel=1e-12)
    assert abs(r.grad_log_lengthscale[0]) < 1e-3 * abs(r.value)
    e2 = pickle.loads(pickle.dumps(e))
    assert e2.lengthscale_ == e.lengthscale_
    np.testing.assert_array_equal(e2.posterior(ozone[:5])[0], e.posterior(ozone[:5])[0])
    assert bke.KernelEmbedding(**e.get_params()).fit(ozone).lengthscale_ == e.lengthscale_
    m1, v1 = e.posterior(ozone[:5], condition_on="landmarks")
    assert np.all(v1 >= 0) and m1.shape == (5,)
