"""Kernel two-sample (MMD) and independence (HSIC) tests with learned kernels (seed 000 §2.2, §5).

Two shapes:

- hyppo's: ``bke.MMD(select="bkl").test(x, y)`` and ``bke.Hsic().test(x, y)`` return
  ``(stat, pvalue)``; the full result of the last call is in the attribute ``result_``.
- the CLI's: ``bke.mmd_test(x, y, select=..., permutations=..., seed=...)`` and
  ``bke.hsic_test(...)``, keywords named as the flags of ``bke test mmd`` / ``bke test hsic``
  (dashes as underscores), return a :class:`TestResult` whose ``to_dict()`` is the CLI's JSON.

Kernel choice (``select``): ``"bkl-bayes"`` (the default: Gaussian kernels weighted by the BKE
posterior over the lengthscale, mixed half and half with the MMDAgg/HSICAgg collection, aggregated
by a soft maximum), ``"median"`` (the median heuristic: cheapest, weakest), ``"bkl"`` (ML-II on the
BKE marginal pseudolikelihood), the aggregated ``"mmdagg"`` (MMD) / ``"hsicagg"`` (HSIC) and
``"fuse"`` (MMD-FUSE, MMD only). The linear-time statistic and the gamma null need one kernel:
``select="median"`` or ``"bkl"``, or a fixed lengthscale. The computation runs in Rust with the GIL released.
"""

from __future__ import annotations

import functools
import inspect
import json
from typing import Optional

import numpy as np

from . import _bke
from ._validation import JsonReport, Params, as_points, seed_from, store_params

__all__ = ["TestResult", "MMD", "Hsic", "mmd_test", "hsic_test"]

# The library's defaults (each model's ``…Params::default()`` in Rust), read once at import so the
# signatures below show them.
_DEFAULTS = _bke.defaults()
_BACKEND, _SEL, _MMD, _HSIC = (_DEFAULTS[k] for k in ("backend", "selection", "mmd", "hsic"))
_SELECTION_DEFAULTS = {k: v for k, v in _SEL.items() if k != "select"}


class TestResult(JsonReport):
    """The result of a kernel test: the fields of the CLI's JSON as attributes.

    Attributes
    ----------
    statistic : float
        The test statistic (for aggregated tests the aggregate: MMDAgg/HSICAgg the weighted minimum
        p-value, smaller is more significant; MMD-FUSE/BKL-Bayes the soft maximum).
    pvalue : float
    reject : bool
        Whether ``pvalue <= alpha``.
    alpha : float
    lengthscale : float
        The lengthscale of the (deciding) kernel; for HSIC that of ``x`` (``lengthscale_y`` too).
    selection : str
        "fixed", "median", "bkl", "mmdagg"/"hsicagg", "fuse" or "bkl-bayes".
    kernels : list of dict
        Every kernel of the test: ``family``, ``lengthscale`` (+ ``lengthscale_y`` for HSIC),
        ``weight``, ``statistic`` and its own ``p_value``.
    null_samples : ndarray
        The resampled null values of ``statistic`` (empty for the gamma and normal nulls).
    """

    __test__ = False  # not a pytest class

    def __init__(self, report: dict, null_samples):
        super().__init__(report)
        self.null_samples = np.asarray(null_samples, dtype=np.float64)

    @property
    def statistic(self) -> float:
        return float(self._report["statistic"])

    @property
    def pvalue(self) -> float:
        return float(self._report["p_value"])

    @property
    def reject(self) -> bool:
        return bool(self._report["reject"])

    @property
    def alpha(self) -> float:
        return float(self._report["alpha"])

    @property
    def lengthscale(self) -> float:
        r = self._report
        return float(r["lengthscale"] if "lengthscale" in r else r["lengthscale_x"])

    @property
    def lengthscale_y(self) -> Optional[float]:
        v = self._report.get("lengthscale_y")
        return None if v is None else float(v)

    @property
    def selection(self) -> str:
        return self._report["selection"]

    @property
    def kernels(self) -> list:
        return [dict(k) for k in self._report["kernels"]]

    # Every other field of the JSON (null_mean, null_sd, u_alpha, bkl_log_marginal, ...) is an
    # attribute too (``JsonReport``).

    def to_dict(self) -> dict:
        """The result as the CLI's JSON object (``bke test mmd`` / ``bke test hsic``)."""
        return super().to_dict()

    def __iter__(self):
        # (stat, pvalue), so that ``stat, p = bke.mmd_test(x, y)`` works as with hyppo.
        return iter((self.statistic, self.pvalue))

    def __repr__(self) -> str:
        return (
            f"TestResult(selection={self.selection!r}, statistic={self.statistic:.6g}, "
            f"pvalue={self.pvalue:.6g}, reject={self.reject}, lengthscale={self.lengthscale:.6g})"
        )


def _selection(select, **kw) -> dict:
    if not isinstance(select, str):
        raise ValueError(f"select must be a string such as 'median' or 'bkl'; got {select!r}")
    d = {"select": select}
    for k, default in _SELECTION_DEFAULTS.items():
        v = kw.get(k, default)
        d[k] = type(default)(v)
    return d


def _fixed(lengthscale, select, flag: str):
    if lengthscale is not None and select is not None:
        raise ValueError(f"give either {flag} (a fixed kernel) or select (a rule to choose it), not both")
    return None if lengthscale is None else float(lengthscale)


def _seed(seed) -> int:
    return seed_from(seed)


# The keywords of ``mmd_test``/``hsic_test`` after the fixed lengthscale(s), with their annotations:
# the test's options (defaults: the test's section of the library defaults), then the selection
# options (defaults: the selection section).
_TEST_OPTIONS = {
    "statistic": "str", "null": "str", "permutations": "int", "alpha": "float", "seed": "int", "dense": "bool",
}
_SELECTION_OPTIONS = {
    "median_convention": "str", "bkl_landmarks": "int", "bkl_tau2": "float", "bkl_prior": "str",
    "agg_weights": "str", "agg_kernels": "str",
}


def _signature(test: dict, lengthscales: tuple) -> inspect.Signature:
    """``(x, y, *, select, <lengthscales>, <test options>, <selection options>, backend, n_jobs)``
    with the defaults of ``test`` and the selection section."""
    P = inspect.Parameter

    def kw(name, annotation, default=None):
        return P(name, P.KEYWORD_ONLY, default=default, annotation=annotation)

    return inspect.Signature(
        [P("x", P.POSITIONAL_OR_KEYWORD), P("y", P.POSITIONAL_OR_KEYWORD), kw("select", "Optional[str]")]
        + [kw(name, "Optional[float]") for name in lengthscales]
        + [kw(name, ann, test[name]) for name, ann in _TEST_OPTIONS.items()]
        + [kw(name, ann, _SEL[name]) for name, ann in _SELECTION_OPTIONS.items()]
        + [kw("backend", "str", _BACKEND), kw("n_jobs", "Optional[int]")],
        return_annotation="TestResult",
    )


def _cli_test(test: dict, *lengthscales: str):
    """Decorator: the function ``fn(x, y, kw)`` (``kw`` every keyword, defaults filled in) becomes
    ``fn(x, y, *, select=None, <lengthscales>=None, ...)`` with the signature of :func:`_signature`
    (shown by ``inspect.signature`` and ``help``), calls checked against it."""

    def decorate(fn):
        sig = _signature(test, lengthscales)

        @functools.wraps(fn)
        def call(x, y, **kwargs):
            try:
                bound = sig.bind(x, y, **kwargs)
            except TypeError as e:
                raise TypeError(f"{fn.__name__}() {e}") from None
            bound.apply_defaults()
            kw = dict(bound.arguments)
            return fn(kw.pop("x"), kw.pop("y"), kw)

        call.__signature__ = sig
        return call

    return decorate


def _run_keywords(kw: dict) -> dict:
    """The keywords both ``_bke`` tests take from ``kw``: the selection dict and the test's options,
    converted (in this order, as the CLI checks them)."""
    sel = _selection(kw["select"] or _SEL["select"], **{k: kw[k] for k in _SELECTION_OPTIONS})
    return dict(
        selection=sel, statistic=str(kw["statistic"]), null=str(kw["null"]),
        permutations=int(kw["permutations"]), alpha=float(kw["alpha"]), seed=_seed(kw["seed"]),
        dense=kw["dense"], backend=str(kw["backend"]), n_jobs=kw["n_jobs"],
    )


@_cli_test(_MMD, "lengthscale")
def mmd_test(x, y, kw: dict) -> TestResult:
    """Two-sample test ``H₀: P = Q`` with the MMD (``bke test mmd``; same keywords as its flags).

    Parameters
    ----------
    x : array of shape (n, d)
        The sample from P.
    y : array of shape (m, d)
        The sample from Q.
    select : str, default "bkl-bayes"
        Kernel choice: "median", "bkl", "mmdagg", "fuse" or "bkl-bayes".
    lengthscale : float, optional
        A fixed Gaussian lengthscale (instead of ``select``).
    statistic : {"unbiased", "biased", "linear"}
    null : {"permutation", "gamma", "wild", "normal"}
    permutations : int, default 1000
        Permutations / bootstrap draws B (MMDAgg: B₁ = B₂ = B).
    alpha : float, default 0.05
    seed : int, default 0
        Seed of the draws (and of BKL's landmark hold-out); results never depend on ``n_jobs``.
    dense : bool, default False
        Aggregated selections (mmdagg, fuse, bkl-bayes; hsicagg and bkl-bayes for
        :func:`hsic_test`): exact Gram matrices at every size, the published statistics, instead of
        Nyström factors above 512 pooled points (HSIC: 256 observations), as ``--dense``. The
        HSIC result's ``null_grams`` says which ran ("exact" or "nystrom").
    median_convention, bkl_landmarks, bkl_tau2, bkl_prior, agg_weights, agg_kernels
        As the CLI's flags of the same names.
    backend : str, default "faer"
    n_jobs : int or None

    Returns
    -------
    TestResult
    """
    xs, ys = as_points(x, "x"), as_points(y, "y")
    if xs.shape[1] != ys.shape[1]:
        raise ValueError(f"x and y must have the same number of columns; got {xs.shape[1]} and {ys.shape[1]}")
    fixed = _fixed(kw["lengthscale"], kw["select"], "lengthscale")
    report, draws = _bke.mmd_test(xs, ys, lengthscale=fixed, null_draws=None, **_run_keywords(kw))
    return TestResult(json.loads(report), draws)


@_cli_test(_HSIC, "lengthscale_x", "lengthscale_y")
def hsic_test(x, y, kw: dict) -> TestResult:
    """Independence test ``H₀: X ⫫ Y`` with the HSIC (``bke test hsic``; same keywords as its flags).

    ``x`` (n, d_x) and ``y`` (n, d_y) are paired by row. ``select``: "bkl-bayes" (default), "median",
    "bkl" or "hsicagg"; or fixed kernels by ``lengthscale_x`` and ``lengthscale_y`` (both).
    ``statistic``: "biased" (default) or "unbiased"; ``null``: "permutation" (exact), "wild" or
    "gamma" (an approximation: at n = 100 it rejects 5.4% (biased) and 6.1% (unbiased) of independent
    data sets at α = 0.05). Other keywords as :func:`mmd_test`. Returns a :class:`TestResult`.
    """
    xs, ys = as_points(x, "x"), as_points(y, "y")
    if xs.shape[0] != ys.shape[0]:
        raise ValueError(
            f"HSIC needs paired observations: x has {xs.shape[0]} rows but y has {ys.shape[0]}"
        )
    lengthscale_x, lengthscale_y = kw["lengthscale_x"], kw["lengthscale_y"]
    if (lengthscale_x is None) != (lengthscale_y is None):
        raise ValueError("give both lengthscale_x and lengthscale_y (fixed kernels), or neither")
    fixed_x = _fixed(lengthscale_x, kw["select"], "lengthscale_x")
    fixed_y = None if lengthscale_y is None else float(lengthscale_y)
    report, draws = _bke.hsic_test(xs, ys, lengthscale_x=fixed_x, lengthscale_y=fixed_y, **_run_keywords(kw))
    return TestResult(json.loads(report), draws)


class _KernelTest(Params):
    """hyppo's shape: settings in the constructor, ``test(x, y)`` → ``(stat, pvalue)``."""

    _run = None

    def __init__(
        self,
        select: str = _SEL["select"],
        statistic: Optional[str] = None,
        null: str = _MMD["null"],
        permutations: int = _MMD["permutations"],
        alpha: float = _MMD["alpha"],
        random_state=_MMD["seed"],
        dense: bool = _MMD["dense"],
        backend: str = _BACKEND,
        n_jobs: Optional[int] = None,
        **selection_options,
    ):
        store_params(self, {k: v for k, v in locals().items() if k != "selection_options"})
        unknown = set(selection_options) - set(_SELECTION_DEFAULTS)
        if unknown:
            raise TypeError(
                f"{type(self).__name__}: unknown keyword(s) {sorted(unknown)}; selection options are "
                f"{sorted(_SELECTION_DEFAULTS)}"
            )
        self.selection_options = dict(selection_options)

    def get_params(self, deep: bool = True) -> dict:
        d = {k: getattr(self, k) for k in
             ("select", "statistic", "null", "permutations", "alpha", "random_state", "dense", "backend",
              "n_jobs")}
        d.update(self.selection_options)
        return d

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.get_params().items())})"

    def test(self, x, y):
        """Runs the test on ``x`` and ``y``; returns ``(stat, pvalue)`` and keeps the full
        :class:`TestResult` in ``result_``."""
        kw = dict(
            select=self.select, null=self.null, permutations=self.permutations, alpha=self.alpha,
            seed=seed_from(self.random_state), dense=self.dense, backend=self.backend, n_jobs=self.n_jobs,
            **self.selection_options,
        )
        if self.statistic is not None:
            kw["statistic"] = self.statistic
        self.result_ = type(self)._run(x, y, **kw)
        return self.result_.statistic, self.result_.pvalue


class MMD(_KernelTest):
    """Kernel two-sample test (hyppo's ``MMD`` shape): ``MMD(select="bkl").test(x, y)`` →
    ``(stat, pvalue)``. ``statistic`` defaults to "unbiased"; other keywords and the selection
    options (``median_convention``, ``bkl_landmarks``, ``bkl_tau2``, ``bkl_prior``,
    ``agg_weights``, ``agg_kernels``) as :func:`mmd_test`; ``random_state`` is its ``seed``."""

    _run = staticmethod(mmd_test)


class Hsic(_KernelTest):
    """Kernel independence test (hyppo's ``Hsic`` shape): ``Hsic(select="bkl").test(x, y)`` →
    ``(stat, pvalue)``. ``statistic`` defaults to "biased"; other keywords as :func:`hsic_test`;
    ``random_state`` is its ``seed``."""

    _run = staticmethod(hsic_test)
