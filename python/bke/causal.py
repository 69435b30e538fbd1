"""Causal discovery: the PC algorithm with kernel conditional-independence tests (``bke causal pc``;
seed 000 §5, Fig. 4).

``bke.pc(data)`` runs PC-stable on the columns of ``data`` with KCI (Zhang et al. 2011) up to 500
rows and its random-feature form RCIT above, median-heuristic kernels on the variables and the
kernel on the conditioning set learned by marginal likelihood, and orients unshielded triples by the
majority of their separating sets — the defaults measured best by ``cargo xtask repro fig4``
(``bke_core::causal::ci`` has the numbers: the learned kernel on the conditioning set holds the
level where the median heuristic's does not, and on random DAGs finds the same graphs; causal-learn's
defaults are ``kci_z="median", orientation="standard"``). With ``time=`` every variable is first
pre-whitened against it. The keywords are the flags of ``bke causal pc`` (dashes as underscores) and
the result's ``to_dict()`` is its JSON. The computation runs in Rust with the GIL released.
"""

from __future__ import annotations

import json
from typing import Optional, Sequence

import numpy as np

from . import _bke
from ._base import feature_names
from ._validation import JsonReport, as_points, as_vector, seed_from

__all__ = ["PcResult", "pc"]

_BACKEND = _bke.defaults()["backend"]
_PC = _bke.defaults()["pc"]


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
    random_state=_PC["seed"],
    backend: str = _BACKEND,
    n_jobs: Optional[int] = None,
) -> PcResult:
    """The PC algorithm (stable) on the columns of ``data`` (n_samples, n_variables).

    ``names``: the variables' names (default: a DataFrame's columns, else ``x0, x1, …``).
    ``time``: a time index (n_samples,) to pre-whiten every variable against first (``prewhiten``:
    "gp", "ar:P" or "none"). ``ci``: "auto" (KCI up to 500 rows, RCIT above), "kci", "rcit" or
    "gp-hsic" (seed 000's test: GP regression on the conditioning set, HSIC on the residuals);
    ``kci_null``: "gamma" or "spectral"; ``kci_z``: "learned" (by marginal likelihood) or "median"
    (the median heuristic and ridge 1e-3, causal-learn's defaults: about 5 times faster, not valid
    when the dependence on the conditioning set is rough); ``select``: the kernels on the variables
    (default: "median" for KCI and RCIT, "bkl-bayes" for gp-hsic); ``orientation``: "majority",
    "standard", "conservative" or "max-p"; ``max_condition``: the largest conditioning set tried;
    ``permutations``: gp-hsic's permutations per test. Returns a :class:`PcResult`.
    """
    if names is None:
        found = feature_names(data)
        names = list(found) if found is not None else None
    x = as_points(data, "data")
    names = [f"x{j}" for j in range(x.shape[1])] if names is None else [str(n) for n in names]
    t = None if time is None else as_vector(time, "time")
    report = _bke.causal_pc(
        x,
        names=names,
        time=t,
        prewhiten=prewhiten,
        alpha=float(alpha),
        ci=ci,
        kci_null=kci_null,
        kci_z=kci_z,
        kci_hyper_points=int(kci_hyper_points),
        select=select,
        orientation=orientation,
        max_condition=None if max_condition is None else int(max_condition),
        permutations=int(permutations),
        seed=seed_from(random_state),
        backend=backend,
        n_jobs=n_jobs,
    )
    return PcResult(json.loads(report))
