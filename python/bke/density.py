"""Kernel student-t density estimation (Huszár & Lacoste-Julien; seed 003) in the shape of
scikit-learn's ``KernelDensity``: ``fit``, ``score_samples`` (log density), ``score`` (total
log-likelihood) and ``sample``."""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import _bke
from ._base import BaseEstimator, DensityMixin, FittedModel, Inputs
from ._validation import as_vector, seed_from, store_params

# The library's defaults (each model's ``…Params::default()`` in Rust), read once at import so the
# signatures below show them.
_DEFAULTS = _bke.defaults()
_DENSITY = _DEFAULTS["density"]

__all__ = ["KernelStudentT", "GaussianKDE"]


class KernelStudentT(FittedModel, DensityMixin, BaseEstimator):
    """Kernel student-t density (``bke density fit``): a Normal-inverse-Wishart model in the feature
    space of a kernel, whose Student-t predictive is pulled back to the input space (seed 003
    eq. (1)–(6)). Hyperparameters left as None (α, β, σ₀², lengthscale factor) are chosen by
    ``folds``-fold cross-validated log-likelihood; 1-D and 2-D densities are normalised on the whole
    space: the data box widened by ``margin``, and Cauchy tails beyond it (higher dimensions stay
    unnormalised).

    Parameters
    ----------
    kernel : str, default "se"
        se, laplace, matern32, matern52, rq or rq:ALPHA.
    lengthscale : float or sequence of float, optional
        Fixed lengthscale(s) (one, or one per feature).
    alpha, beta, sigma0_sq : float, optional
        Fixed NIW hyperparameters (α > d − 1, β > 0, σ₀² > 0).
    normalise : bool, default True
        Normalise (1-D and 2-D data only).
    folds : int, default 5
    margin : float, default 0.25
    random_state : int, RandomState, Generator or None, default 0
        Seed of the cross-validation folds.
    backend, n_jobs
        As every bke estimator.

    Attributes
    ----------
    model_ : bke._bke.Model
    lengthscales_ : ndarray
    alpha_, beta_, sigma0_sq_ : float
        The hyperparameters used (selected or given).
    normalised_ : bool
    log_z_ : float or None
        Log normaliser on the whole space (the box and its tails).
    n_features_in_ : int
    """

    _model_kinds = ("density",)

    def __init__(
        self,
        kernel: str = _DENSITY["kernel"],
        lengthscale=None,
        alpha: Optional[float] = None,
        beta: Optional[float] = None,
        sigma0_sq: Optional[float] = None,
        normalise: bool = _DENSITY["normalise"],
        folds: int = _DENSITY["folds"],
        margin: float = _DENSITY["margin"],
        random_state=_DENSITY["seed"],
        backend: str = _DEFAULTS["backend"],
        n_jobs: Optional[int] = None,
    ):
        store_params(self, locals())

    def fit(self, X, y=None) -> "KernelStudentT":
        """Fits the density to the rows of ``X`` (``y`` is ignored); returns ``self``."""
        X = self._validate_fit_X(X)
        opt = lambda v: None if v is None else float(v)  # noqa: E731
        ls = None if self.lengthscale is None else [float(v) for v in as_vector(self.lengthscale, "lengthscale")]
        self.model_ = _bke.density_fit(
            X, kernel=str(self.kernel), lengthscale=ls, alpha=opt(self.alpha), beta=opt(self.beta),
            sigma0_sq=opt(self.sigma0_sq), normalise=bool(self.normalise), folds=int(self.folds),
            margin=float(self.margin), seed=seed_from(self.random_state), **self._exec(),
        ).with_columns(self._columns(), None)
        self._set_fitted_from_model()
        return self

    def _set_fitted_from_model(self) -> None:
        s = self._summary()
        self.lengthscales_ = np.asarray(s["lengthscales"], dtype=np.float64)
        self.alpha_, self.beta_, self.sigma0_sq_ = s["alpha"], s["beta"], s["sigma0_sq"]
        self.normalised_ = bool(s["normalised"])
        self.log_z_ = s.get("log_z")
        self.summary_ = s

    def score_samples(self, X) -> np.ndarray:
        """``log p(x)`` at each row of ``X``: finite everywhere for a normalised density (beyond the
        normalisation box the density continues with Cauchy tails; −inf outside the box only for a
        model file written before the tails)."""
        X = self._validate_X(X)
        return self.model_.log_density(X, **self._exec())

    def score(self, X, y=None) -> float:
        """Total log-likelihood of the rows of ``X``."""
        return float(np.sum(self.score_samples(X)))

    def sample(self, n_samples: int = 1, random_state=None) -> np.ndarray:
        """``n_samples`` draws from the normalised density (``bke density sample``), shape
        ``(n_samples, n_features)``."""
        self._check_fitted()
        seed = seed_from(random_state if random_state is not None else self.random_state)
        return self.model_.sample(int(n_samples), seed, **self._exec())


class GaussianKDE(Inputs, DensityMixin, BaseEstimator):
    """The Gaussian kernel density estimate with a diagonal bandwidth ``h_d = c · sd_d``, the
    baseline of seed 003's comparisons: ``p̂(x) = (1/N) Σ_n Π_d N(x_d | x_{n,d}, h_d²)``.

    Parameters
    ----------
    bandwidth : "cv", "silverman", float or sequence of float, default "cv"
        "cv": the factor ``c`` maximising the leave-one-out log-likelihood over ``factors``;
        "silverman": the normal-reference rule; numbers: the bandwidths themselves (one, or one
        per feature).
    factors : sequence of float, optional
        Candidate factors for "cv" (default: 40 log-spaced values in [0.02, 3]).
    backend, n_jobs
        As every bke estimator.

    Attributes
    ----------
    bandwidths_ : ndarray of shape (n_features,)
    loo_log_likelihood_ : float or None
        Mean leave-one-out log-likelihood at the chosen factor ("cv" only).
    X_ : ndarray
        The training data (the estimate is a sum over it).
    n_features_in_ : int
    """

    def __init__(self, bandwidth="cv", factors=None, backend: str = _DEFAULTS["backend"], n_jobs: Optional[int] = None):
        store_params(self, locals())

    def _rule(self, d: int):
        if isinstance(self.bandwidth, str):
            return str(self.bandwidth), None
        h = [float(v) for v in as_vector(self.bandwidth, "bandwidth")]
        return "fixed", h * d if len(h) == 1 else h

    def fit(self, X, y=None) -> "GaussianKDE":
        """Chooses the bandwidths for the rows of ``X``; returns ``self``."""
        X = self._validate_fit_X(X)
        rule, h = self._rule(X.shape[1])
        factors = None if self.factors is None else [float(v) for v in as_vector(self.factors, "factors")]
        bw, loo, _ = _bke.kde(
            X, None, rule=rule, bandwidths=h, factors=factors, backend=str(self.backend), n_jobs=self.n_jobs
        )
        self.bandwidths_, self.loo_log_likelihood_, self.X_ = bw, loo, X
        return self

    _fitted_attr = "X_"

    def score_samples(self, X) -> np.ndarray:
        """``log p̂(x)`` at each row of ``X``."""
        X = self._validate_X(X)
        _, _, ld = _bke.kde(
            self.X_, X, rule="fixed", bandwidths=list(self.bandwidths_), factors=None,
            backend=str(self.backend), n_jobs=self.n_jobs,
        )
        return ld

    def score(self, X, y=None) -> float:
        """Total log-likelihood of the rows of ``X``."""
        return float(np.sum(self.score_samples(X)))

    def sample(self, n_samples: int = 1, random_state=0) -> np.ndarray:
        """``n_samples`` exact draws: a training point at random plus Gaussian noise of the
        bandwidths."""
        self._check_fitted()
        rng = np.random.default_rng(seed_from(random_state))
        rows = rng.integers(0, self.X_.shape[0], size=int(n_samples))
        return self.X_[rows] + rng.normal(size=(int(n_samples), self.X_.shape[1])) * self.bandwidths_
