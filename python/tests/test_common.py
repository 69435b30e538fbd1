"""What every entry point shares: numpy conversion, bad-input errors, backends, n_jobs."""

import numpy as np
import pytest

import bke


def test_backends_listed():
    assert "faer" in bke.backends() and "nalgebra" in bke.backends()


def test_dtypes_and_memory_orders_agree():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 2))
    z = x[:10]
    e = bke.KernelEmbedding()
    ref = e.log_marginal(x, z, lengthscale=0.9, tau2=1.0).value
    assert e.log_marginal(np.asfortranarray(x), z, lengthscale=0.9, tau2=1.0).value == ref
    assert e.log_marginal(x.astype(np.float32).astype(np.float64), z, lengthscale=0.9, tau2=1.0).value != 0
    xi = np.round(x * 10).astype(np.int64)
    assert e.log_marginal(xi, xi[:10], lengthscale=9.0, tau2=1.0).value == pytest.approx(
        e.log_marginal(xi.astype(float), xi[:10].astype(float), lengthscale=9.0, tau2=1.0).value, rel=0
    )
    wide = np.zeros((80, 4))
    wide[:, ::2] = x
    assert e.log_marginal(wide[:, ::2], z, lengthscale=0.9, tau2=1.0).value == ref  # strided view


@pytest.mark.parametrize(
    "x, message",
    [
        (np.ones(10), "2-D array of shape (n_samples, n_features); got a 1-D array"),
        (np.ones((2, 2, 2)), "got 3 dimension(s)"),
        (np.array([["a", "b"]]), "must hold real numbers"),
        (np.ones((10, 0)), "0 columns"),
    ],
)
def test_bad_shapes_raise(x, message):
    with pytest.raises(ValueError, match=None) as err:
        bke.KernelEmbedding().fit(x)
    assert message in str(err.value)


def test_nan_raises_with_row_and_column():
    x = np.random.default_rng(0).normal(size=(50, 2))
    x[7, 1] = np.nan
    with pytest.raises(ValueError, match="non-finite value NaN in X at row 7, column 1"):
        bke.KernelEmbedding().fit(x)


def test_invalid_parameters_raise_value_error_with_library_message():
    x = np.random.default_rng(0).normal(size=(50, 2))
    with pytest.raises(ValueError, match="invalid tau2 = -1: must be finite and strictly positive"):
        bke.KernelEmbedding(tau2=-1).fit(x)
    with pytest.raises(ValueError, match="backend 'nope'"):
        bke.KernelEmbedding(backend="nope").fit(x)
    with pytest.raises(ValueError, match="n_jobs must be a positive number"):
        bke.KernelEmbedding(n_jobs=0).fit(x)
    # A worker count far above the machine's cores is refused at once (issue 34).
    with pytest.raises(ValueError, match="n_jobs = 1000000 is far more worker threads"):
        bke.KernelEmbedding(n_jobs=10**6).fit(x)
    with pytest.raises(RuntimeError, match="not fitted yet"):
        bke.KernelEmbedding().posterior(x)


@pytest.mark.parametrize("backend", ["faer", "nalgebra"])
def test_results_do_not_depend_on_n_jobs(backend):
    x = np.random.default_rng(2).normal(size=(400, 3))
    fits = [bke.KernelEmbedding(num_landmarks=25, backend=backend, n_jobs=j).fit(x) for j in (1, 2, None)]
    assert fits[0].lengthscale_ == fits[1].lengthscale_ == fits[2].lengthscale_
    assert fits[0].log_marginal_ == fits[1].log_marginal_ == fits[2].log_marginal_


def test_raw_extension_takes_unaligned_empty_and_strided_arrays_without_panicking():
    """`bke._bke` called directly (bypassing the Python layer's checks) with arrays rust-numpy cannot
    view in place: misaligned data, empty arrays, zero columns, reversed and strided views."""
    from bke import _bke

    rng = np.random.default_rng(1)
    x = rng.normal(size=(20, 3))
    ref = _bke.median_distance(x)
    # float64 data at an odd byte offset: not aligned for f64.
    buf = np.zeros(x.nbytes + 1, dtype=np.uint8)
    unaligned = np.ndarray(shape=x.shape, dtype=np.float64, buffer=buf, offset=1)
    unaligned[...] = x
    assert not unaligned.flags.aligned
    assert _bke.median_distance(unaligned) == ref
    assert _bke.median_distance(x[::-1]) == ref
    assert _bke.median_distance(np.asfortranarray(x)) == ref
    wide = np.zeros((20, 6))
    wide[:, ::2] = x
    assert _bke.median_distance(wide[:, ::2]) == ref
    for empty in (np.zeros((0, 3)), np.zeros((3, 0)), np.zeros((0, 0))):
        with pytest.raises((ValueError, RuntimeError)):
            _bke.median_distance(empty)
    with pytest.raises(ValueError, match="row 2"):
        bad = x.copy()
        bad[2, 1] = np.nan
        _bke.median_distance(bad)


@pytest.mark.parametrize("module", ["dask", "dme", "hypothesis"])
def test_stubs_declare_every_public_name(module):
    """The .pyi stub beside each module (type checkers read it instead of the module) declares
    every name of the module's ``__all__``."""
    import ast
    import importlib
    import pathlib

    mod = importlib.import_module(f"bke.{module}")
    stub = pathlib.Path(mod.__file__).with_suffix(".pyi")
    tree = ast.parse(stub.read_text())
    declared = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared |= {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets if isinstance(t, ast.Name)}
    public = getattr(mod, "__all__", [n for n in declared if not n.startswith("_")])
    assert set(public) <= declared, f"{stub.name} lacks {set(public) - declared}"


def test_concurrent_calls_on_different_backends_each_run_their_own():
    # The backend is selected per call and process-wide (bke_linalg::Selected): calls on another
    # backend wait for the running ones, so concurrent threads get the results of serial calls.
    from concurrent.futures import ThreadPoolExecutor

    x = np.random.default_rng(3).normal(size=(300, 2))
    backends = ["faer", "nalgebra"] * 3

    def fit(backend):
        e = bke.KernelEmbedding(num_landmarks=20, backend=backend).fit(x)
        t = bke.mmd_test(x[:150], x[150:] + 0.2, backend=backend, permutations=100)
        return e.log_marginal_, t.to_dict()["backend"], t.pvalue

    serial = {b: fit(b) for b in ("faer", "nalgebra")}
    with ThreadPoolExecutor(max_workers=4) as pool:
        for backend, result in zip(backends, pool.map(fit, backends)):
            assert result == serial[backend], backend
            assert result[1] == backend
