"""bke.mmd_test / bke.hsic_test / bke.MMD / bke.Hsic against the CLI (`bke test mmd|hsic`: the same
JSON for the same seed, on bundled data), hyppo's (stat, pvalue) shape, bad input, thread
invariance."""

import numpy as np
import pytest

import bke
from conftest import load, write_csv


@pytest.fixture(scope="module")
def banana():
    """Two samples of the banana data: class 0 and class 1 (40 points each, two columns)."""
    d = load("banana")
    x, y = d[d[:, 2] == 0][:40, :2], d[d[:, 2] == 1][:40, :2]
    return x, y


@pytest.fixture(scope="module")
def ozone_pair():
    """Paired variables: temperature and ozone (60 days)."""
    d = load("ozone", ["temp", "O3"])[:60]
    return d[:, :1], d[:, 1:]


def run_both(cli, tmp_path, test, x, y, select, seed):
    """``bke test <test>`` and ``bke.<test>_test`` on ``x``, ``y`` with ``select``, 100
    permutations and ``seed``: ``(the CLI's JSON, the TestResult)``."""
    px, py = write_csv(tmp_path / "x.csv", x), write_csv(tmp_path / "y.csv", y)
    expected = cli("test", test, "--x", px, "--y", py, "--select", select, "--permutations", 100, "--seed", seed)
    return expected, getattr(bke, f"{test}_test")(x, y, select=select, permutations=100, seed=seed)


@pytest.mark.parametrize("select", ["median", "bkl", "mmdagg", "fuse", "bkl-bayes"])
def test_mmd_equals_cli(banana, cli, tmp_path, select):
    x, y = banana
    expected, r = run_both(cli, tmp_path, "mmd", x, y, select, 3)
    assert r.to_dict() == expected
    assert (r.statistic, r.pvalue, r.reject) == (expected["statistic"], expected["p_value"], expected["reject"])
    assert r.lengthscale == expected["lengthscale"]
    assert len(r.kernels) == len(expected["kernels"]) and (len(r.kernels) > 1) == (select in ("mmdagg", "fuse", "bkl-bayes"))
    assert len(r.null_samples) == 100
    stat, p = bke.MMD(select=select, permutations=100, random_state=3).test(x, y)
    assert (stat, p) == (r.statistic, r.pvalue)


@pytest.mark.parametrize(
    "flags,kw",
    [
        (["--statistic", "biased", "--null", "gamma", "--select", "median"],
         dict(statistic="biased", null="gamma", select="median")),
        (["--null", "wild", "--lengthscale", "0.7"], dict(null="wild", lengthscale=0.7)),
        (["--statistic", "linear", "--null", "normal", "--select", "median"],
         dict(statistic="linear", null="normal", select="median")),
        (["--median-convention", "mooij", "--alpha", "0.1", "--select", "median"],
         dict(median_convention="mooij", alpha=0.1, select="median")),
        (["--alpha", "0.1"], dict(alpha=0.1)),
    ],
)
def test_mmd_options_equal_cli(banana, cli, tmp_path, flags, kw):
    x, y = banana
    px, py = write_csv(tmp_path / "x.csv", x), write_csv(tmp_path / "y.csv", y)
    expected = cli("test", "mmd", "--x", px, "--y", py, "--permutations", 100, "--seed", 1, *flags)
    assert bke.mmd_test(x, y, permutations=100, seed=1, **kw).to_dict() == expected


@pytest.mark.parametrize("select", ["median", "bkl", "hsicagg", "bkl-bayes"])
def test_hsic_equals_cli(ozone_pair, cli, tmp_path, select):
    x, y = ozone_pair
    expected, r = run_both(cli, tmp_path, "hsic", x, y, select, 2)
    assert r.to_dict() == expected
    assert r.lengthscale == expected["lengthscale_x"] and r.lengthscale_y == expected["lengthscale_y"]
    assert r.pvalue < 0.1  # temperature and ozone are dependent
    assert bke.Hsic(select=select, permutations=100, random_state=2).test(x, y) == (r.statistic, r.pvalue)


def test_hsic_fixed_lengthscales_equal_cli(ozone_pair, cli, tmp_path):
    x, y = ozone_pair
    px, py = write_csv(tmp_path / "x.csv", x), write_csv(tmp_path / "y.csv", y)
    expected = cli(
        "test", "hsic", "--x", px, "--y", py, "--lengthscale-x", 10, "--lengthscale-y", 5,
        "--statistic", "unbiased", "--null", "gamma",
    )
    r = bke.hsic_test(x, y, lengthscale_x=10, lengthscale_y=5, statistic="unbiased", null="gamma")
    assert r.to_dict() == expected and r.selection == "fixed"


def test_results_do_not_depend_on_threads(banana):
    x, y = banana
    for select in ("bkl", "mmdagg"):
        a = bke.mmd_test(x, y, select=select, permutations=100, n_jobs=1).to_dict()
        b = bke.mmd_test(x, y, select=select, permutations=100, n_jobs=2).to_dict()
        assert a == b
    a = bke.hsic_test(x, y, select="hsicagg", permutations=50, n_jobs=1).to_dict()
    assert a == bke.hsic_test(x, y, select="hsicagg", permutations=50, n_jobs=2).to_dict()


def test_bad_input_raises_value_error(banana):
    x, y = banana
    bad = x.copy()
    bad[3, 1] = np.nan
    with pytest.raises(ValueError, match="row 3"):
        bke.mmd_test(bad, y)
    with pytest.raises(ValueError, match="1-D array"):
        bke.mmd_test(x[:, 0], y)
    with pytest.raises(ValueError, match="same number of columns"):
        bke.mmd_test(x, y[:, :1])
    with pytest.raises(ValueError, match="paired"):
        bke.hsic_test(x, y[:10])
    with pytest.raises(ValueError, match="not both"):
        bke.mmd_test(x, y, select="bkl", lengthscale=1.0)
    with pytest.raises(ValueError, match="hsicagg"):
        bke.mmd_test(x, y, select="hsicagg")
    with pytest.raises(ValueError, match="mmdagg"):
        bke.hsic_test(x, y, select="mmdagg")
    with pytest.raises(ValueError, match="kernel selection 'nope'"):
        bke.mmd_test(x, y, select="nope")
    with pytest.raises(ValueError, match="alpha"):
        bke.mmd_test(x, y, alpha=1.5)
    with pytest.raises(ValueError, match="at least 2"):
        bke.mmd_test(x[:1], y)
    with pytest.raises(TypeError, match="unknown keyword"):
        bke.MMD(bogus=1)


def test_result_fields_and_hyppo_unpacking(banana):
    x, y = banana
    r = bke.mmd_test(x, y, select="mmdagg", permutations=50)
    stat, p = r
    assert (stat, p) == (r.statistic, r.pvalue)
    assert r.u_alpha == r.to_dict()["u_alpha"] and r.n_x == 40
    assert r.to_dict()["selection"] == "mmdagg" and "MMD" in repr(bke.MMD()) and "mmdagg" in repr(r)
    with pytest.raises(AttributeError, match="no field"):
        r.nonexistent


def test_default_selection_is_bkl_bayes(banana):
    # issue 31: the strongest test is the default, and the result says which rule ran
    x, y = banana
    r = bke.mmd_test(x, y, permutations=100)
    assert r.selection == "bkl-bayes" and len(r.kernels) > 1
    assert bke.MMD(permutations=100).test(x, y) == (r.statistic, r.pvalue)
    h = bke.hsic_test(x[:, :1], y[:, :1], permutations=100)
    assert h.selection == "bkl-bayes"
    with pytest.raises(ValueError, match="select median"):
        bke.mmd_test(x, y, statistic="linear", null="normal")


@pytest.mark.parametrize("test, select", [("hsic", "hsicagg"), ("mmd", "mmdagg")])
def test_dense_equals_cli_dense(cli, tmp_path, test, select):
    # above the low-rank thresholds (HSIC: 256 observations, MMD: 512 pooled points) `dense=True`
    # is `--dense`: the exact Gram matrices, a different statistic from the Nyström default's
    rng = np.random.default_rng(4)
    x = rng.normal(size=(300, 1))
    y = np.sin(2 * x) + rng.normal(size=(300, 1)) if test == "hsic" else rng.normal(size=(300, 1)) * 1.1
    px, py = write_csv(tmp_path / "x.csv", x), write_csv(tmp_path / "y.csv", y)
    flags = ("test", test, "--x", px, "--y", py, "--select", select, "--permutations", 50, "--seed", 1)
    run = getattr(bke, f"{test}_test")
    dense, low_rank = run(x, y, select=select, permutations=50, seed=1, dense=True), run(
        x, y, select=select, permutations=50, seed=1)
    assert dense.to_dict() == cli(*flags, "--dense") and low_rank.to_dict() == cli(*flags)
    # every kernel's own statistic differs (the aggregated `statistic` is a rank and may tie)
    assert all(a["statistic"] != b["statistic"] for a, b in zip(dense.kernels, low_rank.kernels))
    if test == "hsic":
        assert (dense.null_grams, low_rank.null_grams) == ("exact", "nystrom")
    klass = bke.Hsic if test == "hsic" else bke.MMD
    assert klass(select=select, permutations=50, random_state=1, dense=True).test(x, y) == (
        dense.statistic, dense.pvalue)
    with pytest.raises(TypeError):
        run(x, y, select=select, permutations=50, dense="yes")
