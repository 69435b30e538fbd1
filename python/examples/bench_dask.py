"""The chunked ML-II of `bke.dask.KernelEmbedding` against the in-memory `bke.KernelEmbedding` fit
on the same N one-dimensional points (standard normal, generated chunk by chunk with seeds 0, 1, …):
wall and CPU time, peak memory (the client process; the largest worker; the in-memory fit runs in a
subprocess of its own), and the learned lengthscales. Run from the repository root:

    python python/examples/bench_dask.py [N] [CHUNK]     (defaults 1000000 and 250000)
"""

import json
import resource
import subprocess
import sys
import time

import numpy as np


def chunk(k, rows):
    return np.random.default_rng(k).normal(size=(rows, 1))


def sizes(n, c):
    return [min(c, n - s) for s in range(0, n, c)]


def in_memory(n, c):
    import bke

    x = np.concatenate([chunk(k, r) for k, r in enumerate(sizes(n, c))])
    c0, t0 = time.process_time(), time.perf_counter()
    e = bke.KernelEmbedding(random_state=0).fit(x)
    return dict(mode="in-memory", lengthscale=e.lengthscale_, evaluations=len(e.scan_),
                wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0,
                peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def chunked(n, c):
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    import bke.dask

    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cl, Client(cl) as client:
        parts = [da.from_delayed(dask.delayed(chunk)(k, r), shape=(r, 1), dtype=float)
                 for k, r in enumerate(sizes(n, c))]
        x = da.concatenate(parts)
        c0, t0 = time.process_time(), time.perf_counter()
        e = bke.dask.KernelEmbedding(random_state=0).fit(x)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        workers = client.run(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        return dict(mode="dask", lengthscale=e.lengthscale_, wall_s=wall, client_cpu_s=cpu,
                    client_peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                    worker_peak_rss_mb=max(workers.values()), chunks=len(sizes(n, c)))


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    c = int(sys.argv[2]) if len(sys.argv) > 2 else 250_000
    if len(sys.argv) > 3 and sys.argv[3] == "--in-memory":
        print(json.dumps(in_memory(n, c)))
        sys.exit()
    mem = json.loads(subprocess.run([sys.executable, __file__, str(n), str(c), "--in-memory"],
                                    capture_output=True, text=True, check=True).stdout)
    print(json.dumps(mem), flush=True)
    dsk = chunked(n, c)
    print(json.dumps(dsk))
    print(json.dumps({"n": n, "relative_lengthscale_difference":
                      abs(dsk["lengthscale"] - mem["lengthscale"]) / mem["lengthscale"]}))
