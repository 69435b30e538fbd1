"""Bayesian kernel embeddings (Flaxman et al., UAI 2016; seed 000): learn the lengthscale of a
squared-exponential kernel by maximising the BKE marginal pseudolikelihood (ML-II), evaluate that
pseudolikelihood and its gradient, and the posterior of the kernel mean embedding."""

from __future__ import annotations

import json
from typing import NamedTuple, Optional

import numpy as np

from . import _bke
from ._validation import EXEC_DOC, Params, as_points, as_vector, seed_from, store_params

# The library's defaults (each model's ``…Params::default()`` in Rust), read once at import so the
# signatures below show them.
_DEFAULTS = _bke.defaults()
_EMB, _SAMPLE = _DEFAULTS["embedding"], _DEFAULTS["sample"]

__all__ = ["KernelEmbedding", "LogMarginal", "HyperSamples"]


class LogMarginal(NamedTuple):
    """The log marginal pseudolikelihood (seed 000 eq. (15)) and its gradient."""

    #: ``log p(x | θ, τ²)`` = ``log_gaussian + log_jacobian``.
    value: float
    #: ``∂/∂ log θ``: one entry (isotropic) or one per feature (ARD).
    grad_log_lengthscale: np.ndarray
    #: ``∂/∂ log τ²``.
    grad_log_tau2: float
    #: The Gaussian term of eq. (33).
    log_gaussian: float
    #: ``Σ_i log γ_θ(x_i)`` (0 without the Jacobian term).
    log_jacobian: float


class KernelEmbedding(Params):
    __doc__ = """Bayesian kernel embedding with a squared-exponential kernel ``exp(-‖x-y‖²/(2θ²))``.

    ``fit(X)`` learns θ by ML-II (``bke embed fit``): ``num_landmarks`` points are held out of ``X``
    at random as landmarks, the marginal pseudolikelihood is scanned on a log grid around the
    median heuristic and every scan maximum is polished by L-BFGS; all local optima are kept.

    Parameters
    ----------
    num_landmarks : int, optional
        Landmarks held out of the data (``D ≤ m < n``; default ``min(100, max(D, n/5))`` as
        ``bke embed fit``); ignored when ``landmarks`` is given.
    landmarks : array of shape (m, n_features), optional
        Fixed landmarks; then every row of ``X`` is data.
    tau2 : float, default 1.0
        τ² of the likelihood ``μ̂(x) | μ(x) ~ N(μ(x), τ²/n)`` (fixed, or the start when learned).
    learn_tau2 : bool, default False
        Learn τ² jointly with θ.
    prior : str, default "lebesgue"
        Measure of the prior covariance ``r_θ``: "lebesgue", "unit" or "gaussian:ETA".
    jacobian : bool, default True
        Include the log-Jacobian term of eq. (15).
    ard : bool, default False
        One lengthscale per feature.
    grid : (min, max, points), optional
        The scan grid (default: 41 points around the median heuristic).
    grid_points : int, default 41
        Points of the default grid.
    max_starts : int, default 8
        Scan maxima polished.
    random_state : int, RandomState or None, default 0
        Seed of the landmark hold-out and of the median-heuristic subsample.
""" + EXEC_DOC + """
    Attributes
    ----------
    lengthscale_ : float or ndarray
        The learned θ (an array of one per feature with ``ard=True``).
    lengthscales_ : ndarray
        θ as an array (length 1 or n_features).
    tau2_ : float
    log_marginal_ : float
        The pseudolikelihood at the optimum.
    optima_ : list of dict
        Every local optimum, best first: ``lengthscales``, ``tau2``, ``log_marginal``,
        ``grad_norm``, ``converged``, ``at_boundary``.
    median_heuristic_ : float
        Median pairwise distance of ``X``.
    scan_ : ndarray of shape (grid_points, 2)
        The scan (θ, pseudolikelihood).
    landmarks_ : ndarray of shape (m, n_features)
    landmark_indices_ : list of int or None
        Rows of ``X`` held out as landmarks.
    n_data_ : int
        Rows of ``X`` in the objective.
    n_features_in_ : int
    """

    def __init__(
        self,
        num_landmarks: Optional[int] = None,
        landmarks=None,
        tau2: float = _EMB["tau2"],
        learn_tau2: bool = _EMB["learn_tau2"],
        prior: str = _EMB["prior"],
        jacobian: bool = _EMB["jacobian"],
        ard: bool = _EMB["ard"],
        grid: Optional[tuple] = None,
        grid_points: int = _EMB["grid_points"],
        max_starts: int = _EMB["max_starts"],
        random_state=_EMB["seed"],
        backend: str = _DEFAULTS["backend"],
        n_jobs: Optional[int] = None,
    ):
        store_params(self, locals())

    def _fit_options(self) -> dict:
        grid = None if self.grid is None else (float(self.grid[0]), float(self.grid[1]), int(self.grid[2]))
        return dict(
            num_landmarks=None if self.num_landmarks is None else int(self.num_landmarks),
            landmarks=None if self.landmarks is None else as_points(self.landmarks, "landmarks"),
            tau2=float(self.tau2),
            learn_tau2=bool(self.learn_tau2),
            prior=str(self.prior),
            jacobian=bool(self.jacobian),
            ard=bool(self.ard),
            grid=grid,
            grid_points=int(self.grid_points),
            max_starts=int(self.max_starts),
            seed=seed_from(self.random_state),
            backend=str(self.backend),
            n_jobs=self.n_jobs,
        )

    def fit(self, X, y=None) -> "KernelEmbedding":
        """Learns θ (and τ² with ``learn_tau2``) by ML-II on the rows of ``X``; returns ``self``."""
        X = as_points(X, "X")
        self._set_fitted(X, _bke.embedding_fit(X, **self._fit_options()))
        return self

    def _set_fitted(self, X: np.ndarray, r: dict) -> None:
        self.X_ = X
        self.lengthscales_ = np.asarray(r["lengthscales"], dtype=np.float64)
        self.lengthscale_ = self.lengthscales_ if self.ard else float(self.lengthscales_[0])
        self.tau2_ = float(r["tau2"])
        self.log_marginal_ = float(r["log_marginal"])
        self.optima_ = list(r["local_optima"])
        self.median_heuristic_ = float(r["median_heuristic"])
        self.scan_ = r["scan"]
        self.landmarks_ = r["landmarks"]
        self.landmark_indices_ = r["landmark_indices"]
        self.n_data_ = int(r["n_data"])
        self.n_features_in_ = X.shape[1]

    def _check_fitted(self) -> None:
        if not hasattr(self, "lengthscales_"):
            raise RuntimeError(
                f"this {type(self).__name__} is not fitted yet: call fit(X) first, or pass "
                "lengthscale= and tau2= explicitly"
            )

    def _data(self) -> np.ndarray:
        """The rows of ``X_`` that entered the objective (the held-out landmarks removed)."""
        if self.landmark_indices_ is None:
            return self.X_
        return np.delete(self.X_, self.landmark_indices_, axis=0)

    def _hyper(self, lengthscale, tau2):
        if lengthscale is None or tau2 is None:
            self._check_fitted()
        ls = self.lengthscales_ if lengthscale is None else as_vector(lengthscale, "lengthscale")
        t2 = self.tau2_ if tau2 is None else float(tau2)
        return ls, t2

    def log_marginal(self, X=None, landmarks=None, lengthscale=None, tau2=None) -> LogMarginal:
        """The log marginal pseudolikelihood (seed 000 eq. (15), ``bke embed loglik``) and its
        gradient in ``log θ`` and ``log τ²``.

        Defaults: the fitted data (without the held-out landmarks), landmarks, θ and τ².
        """
        if X is None or landmarks is None:
            self._check_fitted()
        X = self._data() if X is None else as_points(X, "X")
        Z = self.landmarks_ if landmarks is None else as_points(landmarks, "landmarks")
        ls, t2 = self._hyper(lengthscale, tau2)
        r = _bke.embedding_log_marginal(
            X, Z, lengthscales=ls, tau2=t2, prior=str(self.prior), jacobian=bool(self.jacobian),
            backend=str(self.backend), n_jobs=self.n_jobs,
        )
        return LogMarginal(
            float(r["log_marginal"]), r["grad_log_lengthscale"], float(r["grad_log_tau2"]),
            float(r["log_gaussian"]), float(r["log_jacobian"]),
        )

    def posterior(self, at, X=None, condition_on: str = "data", lengthscale=None, tau2=None):
        """Posterior mean and variance of the embedding ``μ`` at the rows of ``at`` (seed 000
        eq. (7)–(8), ``bke embed posterior``): returns ``(mean, variance)``, two arrays.

        ``condition_on="data"`` conditions on the empirical embedding at the data (as the seed;
        O(n³)), ``"landmarks"`` at the landmarks (O(m³ + nm)).
        """
        if condition_on not in ("data", "landmarks"):
            raise ValueError(f"condition_on must be 'data' or 'landmarks'; got {condition_on!r}")
        if X is None or condition_on == "landmarks":
            self._check_fitted()
        X = self.X_ if X is None else as_points(X, "X")
        cond = self.landmarks_ if condition_on == "landmarks" else None
        ls, t2 = self._hyper(lengthscale, tau2)
        return _bke.embedding_posterior(
            X, as_points(at, "at"), cond, lengthscales=ls, tau2=t2, prior=str(self.prior),
            jacobian=bool(self.jacobian), backend=str(self.backend), n_jobs=self.n_jobs,
        )

    def sample(
        self,
        X=None,
        chains: int = _SAMPLE["chains"],
        draws: int = _SAMPLE["draws"],
        warmup: int = _SAMPLE["warmup"],
        lengthscale_prior: str = _SAMPLE["lengthscale_prior"],
        tau2_prior: str = _SAMPLE["tau2_prior"],
        tau2: Optional[float] = None,
        max_depth: int = _SAMPLE["max_depth"],
        target_accept: float = _SAMPLE["target_accept"],
        random_state=None,
    ) -> "HyperSamples":
        """NUTS draws of the posterior of θ (and τ² unless ``tau2`` fixes it) given the rows of
        ``X`` (``bke embed sample``; seed 000 §5). Uses this estimator's ``num_landmarks`` /
        ``landmarks``, ``ard``, ``prior`` and ``jacobian``; ``X`` defaults to the fitted data, the
        seed to ``random_state`` (it also seeds the landmark hold-out). Returns a
        :class:`HyperSamples`."""
        if X is None:
            self._check_fitted()
        X = self.X_ if X is None else as_points(X, "X")
        rs = self.random_state if random_state is None else random_state
        r = _bke.embedding_sample(
            X, num_landmarks=None if self.num_landmarks is None else int(self.num_landmarks),
            landmarks=None if self.landmarks is None else as_points(self.landmarks, "landmarks"),
            chains=int(chains), draws=int(draws), warmup=int(warmup), seed=seed_from(rs),
            lengthscale_prior=str(lengthscale_prior), tau2_prior=str(tau2_prior),
            tau2=None if tau2 is None else float(tau2), ard=bool(self.ard), prior=str(self.prior),
            jacobian=bool(self.jacobian), max_depth=int(max_depth), target_accept=float(target_accept),
            backend=str(self.backend), n_jobs=self.n_jobs,
        )
        return HyperSamples(
            lengthscales=r["lengthscales"], tau2=r["tau2"], divergent=r["divergent"],
            landmarks=r["landmarks"], landmark_indices=r["landmark_indices"],
            diagnostics=json.loads(r["summary"]),
        )


class HyperSamples(NamedTuple):
    """NUTS draws of the BKE hyperparameters (``KernelEmbedding.sample``)."""

    #: Lengthscale draws, shape (chains, draws, k): k = 1, or n_features with ``ard=True``.
    lengthscales: np.ndarray
    #: τ² draws, shape (chains, draws) (constant when fixed).
    tau2: np.ndarray
    #: Whether each transition diverged, shape (chains, draws).
    divergent: np.ndarray
    #: The landmarks used.
    landmarks: np.ndarray
    #: Rows of ``X`` held out as landmarks (None for given landmarks).
    landmark_indices: Optional[list]
    #: The JSON of ``bke embed sample`` (summaries with R̂/ESS, divergences, warnings, E-BFMI,
    #: step sizes, settings) as a dict.
    diagnostics: dict
