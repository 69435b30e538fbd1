"""bke.TTGP against the CLI (`bke dme fit --model gp`, `bke dme predict`): same hyperparameters,
log marginal and predictions for the same seed; the model file round trip both ways; pickling;
bad input."""

import pickle

import numpy as np
import pytest

import bke
from conftest import write_csv


@pytest.fixture(scope="module")
def task():
    """x → y = 0.8x + noise (transformation set), f(x) = sin(x), task targets at ỹ."""
    rng = np.random.default_rng(4)
    x = rng.uniform(-2.5, 2.5, size=(30, 1))
    y = 0.8 * x + 0.05 * rng.normal(size=x.shape)
    yt = rng.uniform(-2, 2, size=(20, 1))
    zt = np.sin(yt[:, 0] / 0.8) + 0.1 * rng.normal(size=20)
    return x, y, yt, zt


def test_fit_and_predict_equal_cli(task, cli, tmp_path):
    x, y, yt, zt = task
    paths = [write_csv(tmp_path / f"{n}.csv", a, [c]) for n, a, c in
             [("x", x, "x"), ("y", y, "y"), ("yt", yt, "y"), ("zt", zt[:, None], "z")]]
    at = np.linspace(-2, 2, 7)[:, None]
    pat = write_csv(tmp_path / "at.csv", at, ["x"])
    model = tmp_path / "m.json"
    expected = cli(
        "dme", "fit", "--x", paths[0], "--y", paths[1], "--ytilde", paths[2], "--ztilde", paths[3],
        "--starts", 2, "--max-iter", 40, "--seed", 1, "--model-out", model,
    )
    g = bke.TTGP(starts=2, max_iter=40, random_state=1).fit(x, y, yt, zt)
    assert g.fit_result_ == expected
    assert g.log_marginal_ == expected["log_marginal"]
    pred = cli("dme", "predict", "--model", model, "--at", pat)
    mean, sd = g.predict(at, return_std=True)
    np.testing.assert_allclose(mean, pred["mean"], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(sd**2, pred["variance"], rtol=1e-10, atol=1e-14)
    # the CLI's file loads in Python, Python's file in the CLI
    loaded = bke.TTGP.load(model)
    np.testing.assert_array_equal(loaded.predict(at), mean)
    g.save(tmp_path / "py.json")
    assert cli("dme", "predict", "--model", tmp_path / "py.json", "--at", pat)["mean"] == pred["mean"]
    again = pickle.loads(pickle.dumps(g))
    np.testing.assert_array_equal(again.predict(at), mean)


def test_fixed_hyperparameters_and_bad_input(task):
    x, y, yt, zt = task
    g = bke.TTGP(learn=False, lengthscale_x=0.7, sigma=0.2).fit(x, y, yt, zt)
    assert g.hyperparameters_["sigma"] == 0.2
    mean, sd = g.predict(x[:5], return_std=True)
    assert mean.shape == (5,) and np.all(sd >= 0)
    bad = x.copy()
    bad[2, 0] = np.nan
    with pytest.raises(ValueError, match="row 2"):
        bke.TTGP().fit(bad, y, yt, zt)
    with pytest.raises(ValueError, match="1-D array"):
        bke.TTGP().fit(x[:, 0], y, yt, zt)
    with pytest.raises(ValueError):
        bke.TTGP().fit(x, y[:10], yt, zt)
    with pytest.raises(ValueError):
        bke.TTGP().fit(x, y, yt, zt[:5])
    with pytest.raises(ValueError, match="features"):
        g.predict(np.zeros((3, 2)))
    with pytest.raises(ValueError, match="kernel"):
        bke.TTGP(kernel="nope").fit(x, y, yt, zt)


@pytest.fixture(scope="module")
def conjugate():
    """θ ~ N(0, 1), x | θ ~ N(θ, 0.5²), 300 simulations and prior samples, y = 1 (posterior N(0.8, 0.447²))."""
    rng = np.random.default_rng(11)
    theta = rng.normal(size=(300, 1))
    return theta, theta + 0.5 * rng.normal(size=(300, 1)), rng.normal(size=(300, 1)), np.array([1.0])


@pytest.mark.parametrize("flags,kw", [([], {}), (["--method", "kbr"], dict(method="kbr")),
                                      (["--learn", "--starts", "2"], dict(learn=True, starts=2))])
def test_lfi_equals_cli(conjugate, cli, tmp_path, flags, kw):
    theta, x, prior, obs = conjugate
    sims = write_csv(tmp_path / "sims.csv", np.hstack([theta, x]), ["theta", "x"])
    pp = write_csv(tmp_path / "prior.csv", prior, ["theta"])
    po = write_csv(tmp_path / "obs.csv", obs[None, :], ["x"])
    expected = cli("lfi", "--simulations", sims, "--theta-cols", "theta", "--stat-cols", "x", "--prior-samples", pp,
                   "--observed", po, "--herd", 30, *flags)
    r = bke.lfi(theta, x, prior, obs, herd=30, **kw)
    assert r.to_dict() == expected
    assert r.samples.shape == (30, 1) and r.method == expected["method"]
    assert abs(r.embedding["mean"][0] - 0.8) < 0.15


def test_lfi_bad_input(conjugate):
    theta, x, prior, obs = conjugate
    with pytest.raises(ValueError, match="use dme or kbr"):
        bke.lfi(theta, x, prior, obs, method="abc")
    with pytest.raises(ValueError, match="dme only"):
        bke.lfi(theta, x, prior, obs, method="kbr", learn=True)
    with pytest.raises(ValueError, match="1-D array"):
        bke.lfi(theta[:, 0], x, prior, obs)
    bad = x.copy()
    bad[5, 0] = np.inf
    with pytest.raises(ValueError):
        bke.lfi(theta, bad, prior, obs)
