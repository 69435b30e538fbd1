"""Causal discovery: the PC algorithm with kernel conditional-independence tests (``bke causal pc``;
seed 000 §5, Fig. 4).

``bke.pc(data)`` runs PC-stable on the columns of ``data`` with KCI (Zhang et al. 2011) up to 500
rows and its random-feature form RCIT above, median-heuristic kernels on the variables and the
kernel on the conditioning set learned by marginal likelihood, and orients unshielded triples by the
majority of their separating sets — the defaults measured best by ``cargo xtask repro fig4``
(``bke_core::causal::ci`` has the numbers: the learned kernel on the conditioning set holds the
level where the median heuristic's does not, and on random DAGs finds the same graphs; causal-learn's
defaults are ``kci_z="median", orientation="standard"``). With ``time=`` every variable is first
pre-whitened against it. The keywords are named as the flags of ``bke causal pc`` (dashes as
underscores) and the result's ``to_dict()`` is its JSON. The computation runs in Rust with the GIL
released.
"""

from __future__ import annotations

import json
from typing import Optional, Sequence

import numpy as np

from . import _bke
from ._base import feature_names
from ._validation import JsonReport, as_points, as_vector, seed_from

__all__ = ["PcResult", "pc", "CiResult", "ci_test"]

_DEFAULTS = _bke.defaults()
_BACKEND, _PC = _DEFAULTS["backend"], _DEFAULTS["pc"]


class PcResult(JsonReport):
    """The CPDAG found by :func:`pc` and how: every field of ``bke causal pc``'s JSON is an
    attribute — ``nodes`` (the variables), ``edges`` (``{"from", "to", "directed"}``; an undirected
    edge lists its ends in column order), ``tests`` (every conditional-independence test with its
    p-value), ``separating_sets``, ``triples`` (each unshielded triple's decision and votes),
    ``conflicts``, ``alpha``, ``ci_test``, ``selection``, ``orientation``, ``prewhitening``."""

    def adjacency(self) -> np.ndarray:
        """The CPDAG as a 0/1 matrix over ``nodes``: ``A[i, j] = 1`` when the graph has ``i → j`` or
        ``i − j`` (so an undirected edge sets both entries), e.g. for
        ``networkx.from_numpy_array(A, create_using=networkx.DiGraph)``."""
        index = {name: i for i, name in enumerate(self.nodes)}
        a = np.zeros((len(index), len(index)), dtype=np.int64)
        for e in self.edges:
            i, j = index[e["from"]], index[e["to"]]
            a[i, j] = 1
            if not e["directed"]:
                a[j, i] = 1
        return a

    def __repr__(self) -> str:
        arrows = [f"{e['from']} {'→' if e['directed'] else '−'} {e['to']}" for e in self.edges]
        return f"PcResult({self.ci_test}, α = {self.alpha}: {', '.join(arrows) or 'no edges'})"


def _test_options(ci, kci_null, kci_z, kci_hyper_points, select, permutations, seed) -> dict:
    """The conditional-independence test's keywords that :func:`pc` and :func:`ci_test` share, as
    the dict ``_bke`` takes."""
    return dict(
        ci=str(ci),
        kci_null=str(kci_null),
        kci_z=str(kci_z),
        kci_hyper_points=_count(kci_hyper_points, "kci_hyper_points"),
        select=None if select is None else str(select),
        permutations=_count(permutations, "permutations"),
        seed=seed_from(seed),
    )


def _count(value, name: str) -> int:
    """A non-negative integer keyword, as ``ValueError`` otherwise (Rust takes unsigned counts)."""
    if isinstance(value, bool) or int(value) != value or value < 0:
        raise ValueError(f"{name} must be a non-negative integer; got {value!r}")
    return int(value)


def pc(
    data,
    *,
    names: Optional[Sequence[str]] = None,
    time=None,
    prewhiten: str = _PC["prewhiten"],
    alpha: float = _PC["alpha"],
    ci: str = _PC["ci"],
    kci_null: str = _PC["kci_null"],
    kci_z: str = _PC["kci_z"],
    kci_hyper_points: int = _PC["kci_hyper_points"],
    select: Optional[str] = None,
    orientation: str = _PC["orientation"],
    max_condition: Optional[int] = None,
    permutations: int = _PC["permutations"],
    seed: int = _PC["seed"],
    backend: str = _BACKEND,
    n_jobs: Optional[int] = None,
) -> PcResult:
    """The PC algorithm (stable) on the columns of ``data`` (``bke causal pc``; its flags' names).

    Parameters
    ----------
    data : array of shape (n_samples, n_variables), or a DataFrame
    names : sequence of str, optional
        The variables' names (default: a DataFrame's columns, else ``x0, x1, …``).
    time : array of shape (n_samples,), optional
        A time index every variable is pre-whitened against first.
    prewhiten : {"gp", "ar:P", "none"}, default "gp"
        How, when ``time`` is given.
    alpha : float, default 0.05
        Level of every conditional-independence test: an edge is removed when p > alpha.
    ci : {"auto", "kci", "rcit", "gp-hsic"}, default "auto"
        The test: KCI up to 500 rows and RCIT above ("auto"), or seed 000's gp-hsic (GP regression
        on the conditioning set, HSIC on the residuals).
    kci_null : {"gamma", "spectral"}, default "gamma"
    kci_z : {"learned", "median"}, default "learned"
        KCI's kernel on the conditioning set and ridge: by marginal likelihood, or the median
        heuristic and ridge 1e-3 (causal-learn's defaults: about 5 times faster, not valid when the
        dependence on the conditioning set is rough).
    kci_hyper_points : int, default 200
        Rows of the GP that shapes the learned kernel on the conditioning set.
    select : str, optional
        Kernels on the variables (gp-hsic: on the residuals): "median" (KCI's and RCIT's default),
        "bkl-bayes" (gp-hsic's default), "bkl" or "hsicagg".
    orientation : {"majority", "standard", "conservative", "max-p"}, default "majority"
    max_condition : int, optional
        Largest conditioning set tried (default: no limit).
    permutations : int, default 1000
        gp-hsic's permutations per test.
    seed : int, default 0
        Seed of the tests' random features and permutations; results never depend on ``n_jobs``.
    backend : str, default "faer"
    n_jobs : int or None

    Returns
    -------
    PcResult
        ``to_dict()`` is ``bke causal pc``'s JSON less the fields naming its input (``data``,
        ``time``, ``backend``, ``svg``). gp-hsic's HSIC statistic and the CLI's further kernel options
        keep their defaults here.
    """
    if isinstance(names, str):
        raise ValueError(f"names must be a sequence of names, one per column; got the string {names!r}")
    if names is None:
        found = feature_names(data)
        names = list(found) if found is not None else None
    x = as_points(data, "data")
    names = [f"x{j}" for j in range(x.shape[1])] if names is None else [str(n) for n in names]
    t = None if time is None else as_vector(time, "time")
    test = _test_options(ci, kci_null, kci_z, kci_hyper_points, select, permutations, seed)
    report = _bke.causal_pc(
        x,
        names=names,
        time=t,
        prewhiten=str(prewhiten),
        alpha=float(alpha),
        orientation=str(orientation),
        max_condition=None if max_condition is None else _count(max_condition, "max_condition"),
        test=test,
        backend=str(backend),
        n_jobs=n_jobs,
    )
    return PcResult(json.loads(report))


class CiResult(JsonReport):
    """The outcome of :func:`ci_test`: ``p_value``, ``statistic``, ``reject`` (``p_value <=
    alpha``), ``test`` (the test that ran: "kci", "rcit" or "gp-hsic"), ``selection``, ``kci_z``,
    ``lengthscales`` (of the kernels on ``x`` and ``y``), ``observations``, ``conditioning`` (columns
    of ``z``); ``to_dict()`` gives them as a dict."""

    def __repr__(self) -> str:
        given = f" | z ({self.conditioning} columns)" if self.conditioning else ""
        return f"CiResult({self.test}: x ⫫ y{given}, p = {self.p_value:.4g}, reject = {self.reject})"


def ci_test(
    x,
    y,
    z=None,
    *,
    ci: str = _PC["ci"],
    kci_null: str = _PC["kci_null"],
    kci_z: str = _PC["kci_z"],
    kci_hyper_points: int = _PC["kci_hyper_points"],
    select: Optional[str] = None,
    permutations: int = _PC["permutations"],
    alpha: float = _PC["alpha"],
    seed: int = _PC["seed"],
    backend: str = _BACKEND,
    n_jobs: Optional[int] = None,
) -> CiResult:
    """The conditional-independence test ``x ⫫ y | z`` that :func:`pc` runs, on its own (causal-learn's
    ``CIT(data, "kci")``; without ``z``, ``x ⫫ y``).

    Parameters
    ----------
    x, y : arrays of shape (n_samples,) or (n_samples, 1)
        One variable each.
    z : array of shape (n_samples, n_conditioning) or (n_samples,), optional
        The conditioning set.
    ci, kci_null, kci_z, kci_hyper_points, select, permutations, seed, backend, n_jobs
        As :func:`pc`.
    alpha : float, default 0.05
        The level ``reject`` is decided at.

    Returns
    -------
    CiResult
    """
    columns = [_variable(x, "x"), _variable(y, "y")]
    if z is not None:
        zs = np.asarray(z, dtype=np.float64)
        columns.append(zs.reshape(-1, 1) if zs.ndim == 1 else as_points(zs, "z"))
    rows = {c.shape[0] for c in columns}
    if len(rows) != 1:
        raise ValueError(f"x, y and z must have one row per observation; got {[c.shape[0] for c in columns]} rows")
    test = _test_options(ci, kci_null, kci_z, kci_hyper_points, select, permutations, seed)
    report = _bke.ci_test(np.hstack(columns), alpha=float(alpha), test=test, backend=str(backend), n_jobs=n_jobs)
    return CiResult(json.loads(report))


def _variable(v, name: str) -> np.ndarray:
    """One variable as a column (n, 1): a vector, or a 2-D array with one column."""
    a = np.asarray(v, dtype=np.float64)
    if a.ndim == 1:
        return a.reshape(-1, 1)
    a = as_points(a, name)
    if a.shape[1] != 1:
        raise ValueError(
            f"{name} must be one variable (shape (n,) or (n, 1)); got {a.shape[1]} columns — the "
            f"kernel conditional-independence tests here take one variable on each side"
        )
    return a
