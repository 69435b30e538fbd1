"""bke.dask on a dask.distributed.LocalCluster with 2 worker processes: the chunked ML-II gives the
in-memory lengthscale (1e-8), and the permutation null split over the workers gives the local
p-value."""

import numpy as np
import pytest

import bke
from conftest import load

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")
import bke.dask  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    centres = np.array([[-2.0, 0.0], [2.0, 1.0], [0.0, 3.0]])
    return centres[rng.integers(0, 3, 2500)] + 0.6 * rng.normal(size=(2500, 2))


@pytest.mark.parametrize("ard", [False, True])
def test_chunked_fit_equals_in_memory(client, data, ard):
    local = bke.KernelEmbedding(num_landmarks=40, ard=ard, random_state=3).fit(data)
    chunked = bke.dask.KernelEmbedding(num_landmarks=40, ard=ard, random_state=3)
    chunked.fit(da.from_array(data, chunks=(600, 2)))
    np.testing.assert_allclose(chunked.lengthscales_, local.lengthscales_, rtol=1e-8)
    assert chunked.log_marginal_ == pytest.approx(local.log_marginal_, rel=1e-10)
    assert chunked.landmark_indices_ == local.landmark_indices_
    np.testing.assert_array_equal(chunked.landmarks_, local.landmarks_)
    assert chunked.median_heuristic_ == local.median_heuristic_
    assert chunked.n_data_ == local.n_data_ and chunked.n_features_in_ == 2
    assert len(chunked.optima_) == len(local.optima_)
    np.testing.assert_allclose(chunked.scan_, local.scan_, rtol=1e-10)
    assert chunked.get_params() == local.get_params()


def test_chunked_fit_with_given_landmarks_and_bad_input(client, data):
    z = data[:25]
    local = bke.KernelEmbedding(landmarks=z).fit(data)
    chunked = bke.dask.KernelEmbedding(landmarks=z).fit(da.from_array(data, chunks=1000))
    assert chunked.lengthscale_ == pytest.approx(local.lengthscale_, rel=1e-8)
    assert chunked.landmark_indices_ is None
    bad = data.copy()
    bad[1234, 1] = np.nan
    with pytest.raises(ValueError, match="row 1235"):
        bke.dask.KernelEmbedding().fit(da.from_array(bad, chunks=1000))
    with pytest.raises(ValueError, match="1-D array"):
        bke.dask.KernelEmbedding().fit(da.from_array(data[:, 0], chunks=1000))
    with pytest.raises(ValueError, match="pass X="):
        chunked.posterior(data[:3])


@pytest.mark.parametrize("select", ["median", "bkl"])
def test_split_null_equals_local(client, select):
    d = load("banana")
    x, y = d[d[:, 2] == 0][:150, :2], d[d[:, 2] == 1][:120, :2]
    local = bke.mmd_test(x, y, select=select, permutations=300, seed=9)
    split = bke.dask.mmd_test(x, y, select=select, permutations=300, seed=9, pieces=3)
    assert split.pvalue == local.pvalue and split.statistic == local.statistic
    assert split.to_dict()["null_sd"] == pytest.approx(local.to_dict()["null_sd"], rel=1e-12)
    assert {k: v for k, v in split.to_dict().items() if k not in ("null_sd", "null_mean")} == {
        k: v for k, v in local.to_dict().items() if k not in ("null_sd", "null_mean")
    }
    with pytest.raises(ValueError, match="single-kernel"):
        bke.dask.mmd_test(x, y, select="mmdagg")
