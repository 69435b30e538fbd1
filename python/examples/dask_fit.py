"""ML-II kernel learning on a Dask array in chunks (bke.dask.KernelEmbedding) against the in-memory
fit, and the MMD permutation null split over the workers, on a local 2-worker cluster. Usage:
python python/examples/dask_fit.py [N]  (default N = 200000 points)."""

import sys
import time

import numpy as np

import bke

if __name__ == "__main__":
    import dask.array as da
    from distributed import Client, LocalCluster

    import bke.dask

    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster):
        x = da.random.default_rng(0).normal(size=(n, 1), chunks=(max(n // 8, 1000), 1))
        t = time.perf_counter()
        emb = bke.dask.KernelEmbedding(random_state=0).fit(x)
        print(f"chunked fit of {n} points: θ = {emb.lengthscale_:.6f} in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        local = bke.KernelEmbedding(random_state=0).fit(x.compute())
        print(f"in-memory fit: θ = {local.lengthscale_:.6f} in {time.perf_counter() - t:.1f} s")
        g = np.random.default_rng(1)
        a, b = g.normal(size=(500, 2)), g.normal(size=(400, 2)) + 0.2
        print("split null p-value", bke.dask.mmd_test(a, b, select="bkl").pvalue,
              "local", bke.mmd_test(a, b, select="bkl").pvalue)
