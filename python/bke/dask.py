"""bke on Dask: ML-II kernel learning on a ``dask.array`` too large for one machine's memory, and the
permutation null of the MMD test split over Dask workers. Both give the in-memory results.

- :class:`KernelEmbedding`: the parameters and fitted attributes of :class:`bke.KernelEmbedding`;
  ``fit`` takes a ``dask.array``. The BKE marginal pseudolikelihood (seed 000 eq. (15)) is a sum
  over data points, so every evaluation of the objective computes per-chunk partial statistics with
  ``map_blocks`` on the workers (``O(chunk · m · D²)`` each, ``O(mD)`` memory), merges them in chunk
  order and finishes the ``O(m³)`` step on the client; the scan and L-BFGS polishing are those of
  the in-memory fit, which gives the same ``lengthscale_`` to ~1e-10 (the merge order of the sums
  differs). The landmarks and the median-heuristic subsample are the rows the in-memory fit would
  take; they are gathered to the client (``m`` and 2000 rows).
- :func:`mmd_test`: :func:`bke.mmd_test` with the permutation null's draws computed in ``pieces``
  ranges on the workers (draw ``b`` always uses the random stream ``(seed, b)``), then finished on
  the client: the same result (p-value, statistic, null summary) as the local call. Single-kernel
  selections (median, bkl, fixed) with the permutation null.

Uses the current Dask scheduler (a ``dask.distributed.Client`` when one is active).
"""

from __future__ import annotations

import json
from typing import Optional

import numpy as np

from . import _bke
from ._validation import as_points, seed_from
from .embedding import KernelEmbedding as _InMemoryEmbedding
from .hypothesis import TestResult, _fixed, _selection

# The library's defaults (each model's ``…Params::default()`` in Rust), read once at import so the
# signatures below show them.
_DEFAULTS = _bke.defaults()
_MMD, _SEL = _DEFAULTS["mmd"], _DEFAULTS["selection"]

__all__ = ["KernelEmbedding", "mmd_test"]


def _dask_points(X, name: str = "X"):
    """``X`` as a 2-D float64 dask array with one chunk along the columns and known row chunks."""
    import dask.array as da

    if not isinstance(X, da.Array):
        X = da.asarray(as_points(X, name))
    if X.ndim == 1:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_features); got a 1-D array of shape "
            f"{X.shape}. Reshape your data: {name}.reshape(-1, 1) if it holds one feature."
        )
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of shape (n_samples, n_features); got shape {X.shape}")
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == np.bool_) or np.issubdtype(X.dtype, np.complexfloating):
        raise ValueError(f"{name} must hold real numbers; got a dask array of dtype {X.dtype}")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    if X.shape[1] == 0:
        raise ValueError(f"{name} has 0 columns: it needs at least one feature")
    return X.astype(np.float64).rechunk({1: -1})


def _chunk_stats(block, z, lengthscales, tau2, prior, jacobian, landmark_rows, n_jobs, block_info=None):
    """The partial statistics of one block (its landmark rows left out), as a 1-D array."""
    start = block_info[0]["array-location"][0][0]
    drop = landmark_rows[(landmark_rows >= start) & (landmark_rows < start + block.shape[0])] - start
    rows = np.delete(block, drop, axis=0) if len(drop) else block
    return _bke.embedding_partial(
        as_points(rows, "X chunk"), as_points(z, "landmarks"), lengthscales=np.require(lengthscales, np.float64, "A"),
        tau2=float(tau2), prior=prior,
        jacobian=jacobian, n_jobs=n_jobs,
    )


class KernelEmbedding(_InMemoryEmbedding):
    """:class:`bke.KernelEmbedding` whose ``fit`` takes a ``dask.array`` (see the module docs).

    Same parameters and fitted attributes (``lengthscale_``, ``lengthscales_``, ``tau2_``,
    ``log_marginal_``, ``optima_``, ``median_heuristic_``, ``scan_``, ``landmarks_``,
    ``landmark_indices_``, ``n_data_``, ``n_features_in_``); ``X_`` is the dask array. The methods
    ``log_marginal``, ``posterior`` and ``sample`` need in-memory data: pass ``X=`` (a numpy array).
    """

    def fit(self, X, y=None) -> "KernelEmbedding":
        """Learns θ (and τ² with ``learn_tau2``) by ML-II on the rows of the dask array ``X``."""
        import dask
        import dask.array as da

        X = _dask_points(X).persist()
        n, dim = X.shape
        opts = self._fit_options()
        if opts["landmarks"] is not None:
            z, idx = opts["landmarks"], None
            if z.shape[1] != dim:
                raise ValueError(f"landmarks have {z.shape[1]} columns but X has {dim}")
        else:
            m = opts["num_landmarks"] if opts["num_landmarks"] is not None else _bke.default_num_landmarks(n, dim)
            idx = _bke.landmark_indices(n, dim, m, opts["seed"])
        finite, lo, hi, z_rows, med_rows = dask.compute(
            da.isfinite(X).all(), X.min(axis=0), X.max(axis=0),
            X[np.asarray(idx if idx is not None else [0], dtype=np.int64)],
            X[np.asarray(_bke.median_subsample(n), dtype=np.int64)],
        )
        if not finite:
            row = int(da.argmax(~da.isfinite(X).all(axis=1)).compute())
            col = int(np.argmax(~np.isfinite(X[row].compute())))
            raise ValueError(f"X: row {row + 1}, column {col + 1} is not a finite number (NaN or infinity)")
        if idx is not None:
            z = as_points(z_rows, "X")
        median = _bke.median_distance(as_points(med_rows, "X"))
        rows = np.asarray(idx if idx is not None else [], dtype=np.int64)
        prior, jacobian = opts["prior"], opts["jacobian"]

        def stats(lengthscales, tau2):
            width = len(_bke.embedding_partial(
                z[:0].reshape(0, dim), z, lengthscales=lengthscales, tau2=float(tau2), prior=prior,
                jacobian=jacobian, n_jobs=1,
            ))
            parts = X.map_blocks(
                _chunk_stats, z, lengthscales, tau2, prior, jacobian, rows, self.n_jobs,
                drop_axis=1, chunks=((width,) * X.numblocks[0],), dtype=np.float64,
            ).compute()
            return [parts[i * width:(i + 1) * width] for i in range(X.numblocks[0])]

        r = _bke.embedding_fit_chunked(
            z, stats, n=n, n_data=n - len(rows), ranges=[(float(a), float(b)) for a, b in zip(lo, hi)],
            median=median, landmark_indices=None if idx is None else list(idx),
            **{k: opts[k] for k in ("tau2", "learn_tau2", "prior", "jacobian", "ard", "grid", "grid_points",
                                   "max_starts", "seed", "backend", "n_jobs")},
        )
        self._set_fitted(X, r)
        return self

    def _data(self):
        raise ValueError(
            "bke.dask.KernelEmbedding keeps X as a dask array: pass X= (an in-memory numpy array) to "
            "log_marginal, posterior or sample"
        )

    def log_marginal(self, X=None, landmarks=None, lengthscale=None, tau2=None):
        if X is None:
            self._data()
        return super().log_marginal(X, landmarks, lengthscale, tau2)

    def posterior(self, at, X=None, condition_on: str = "data", lengthscale=None, tau2=None):
        if X is None:
            self._data()
        return super().posterior(at, X, condition_on, lengthscale, tau2)

    def sample(self, X=None, **kwargs):
        if X is None:
            self._data()
        return super().sample(X, **kwargs)


def mmd_test(
    x,
    y,
    *,
    select: Optional[str] = None,
    lengthscale: Optional[float] = None,
    statistic: str = _MMD["statistic"],
    permutations: int = _MMD["permutations"],
    alpha: float = _MMD["alpha"],
    seed: int = _MMD["seed"],
    pieces: Optional[int] = None,
    median_convention: str = _SEL["median_convention"],
    bkl_landmarks: int = _SEL["bkl_landmarks"],
    bkl_tau2: float = _SEL["bkl_tau2"],
    bkl_prior: str = _SEL["bkl_prior"],
    backend: str = _DEFAULTS["backend"],
    n_jobs: Optional[int] = None,
) -> TestResult:
    """:func:`bke.mmd_test` (permutation null) with the null's draws split into ``pieces`` ranges
    (default: the number of Dask workers, else 4) computed as Dask tasks; the result equals the
    local call's. ``select``: "median" (default here: the split null needs one kernel, while
    :func:`bke.mmd_test` defaults to the aggregated "bkl-bayes"), "bkl", or a fixed ``lengthscale``.
    The kernel is chosen on the client; each task recomputes the Gram matrix of the pooled sample."""
    import dask

    xs, ys = as_points(x, "x"), as_points(y, "y")
    if xs.shape[1] != ys.shape[1]:
        raise ValueError(f"x and y must have the same number of columns; got {xs.shape[1]} and {ys.shape[1]}")
    if select not in (None, "median", "bkl"):
        raise ValueError(
            f"bke.dask.mmd_test splits the permutation null of single-kernel tests: select must be "
            f"'median' or 'bkl' (or a fixed lengthscale); got {select!r} (use bke.mmd_test)"
        )
    fixed = _fixed(lengthscale, select, "lengthscale")
    sel = _selection(select or "median", median_convention=median_convention, bkl_landmarks=bkl_landmarks,
                     bkl_tau2=bkl_tau2, bkl_prior=bkl_prior)
    seed, permutations = seed_from(seed), int(permutations)
    common = dict(lengthscale=fixed, selection=sel, statistic=str(statistic), null="permutation", dense=False,
                  alpha=float(alpha), seed=seed, backend=str(backend), n_jobs=n_jobs)
    # The kernel, chosen as the local call chooses it (one permutation: the cheapest full run).
    chosen = json.loads(_bke.mmd_test(xs, ys, permutations=1, null_draws=None, **common)[0])
    k = pieces or _worker_count() or 4
    bounds = np.linspace(0, permutations, min(k, permutations) + 1).astype(int)
    draw = dask.delayed(_null_draws, pure=True)
    tasks = [
        draw(xs, ys, lengthscale=chosen["lengthscale"], statistic=str(statistic), seed=seed, start=int(a),
             stop=int(b), backend=str(backend), n_jobs=n_jobs)
        for a, b in zip(bounds[:-1], bounds[1:])
    ]
    null = np.concatenate(dask.compute(*tasks))
    report, draws = _bke.mmd_test(xs, ys, permutations=permutations, null_draws=list(null), **common)
    return TestResult(json.loads(report), draws)


def _null_draws(x, y, **kw):
    """One piece of the null on a worker (arrays re-aligned after unpickling)."""
    return _bke.mmd_null_draws(as_points(x, "x"), as_points(y, "y"), **kw)


def _worker_count() -> Optional[int]:
    try:
        from distributed import get_client

        return len(get_client().scheduler_info()["workers"]) or None
    except (ImportError, ValueError):
        return None
