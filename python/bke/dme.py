"""Task-transformed Gaussian processes (Hsu & Ramos, deconditional mean embeddings; seed 004 Thm 5.3):
learn a latent function ``f`` on ``x`` when its targets are only observed through a mediating
variable — transformation pairs ``(x_i, y_i)`` and task pairs ``(ỹ_j, z̃_j)`` with
``z̃_j ≈ E[f(x) | y = ỹ_j]``. ``bke dme fit --model gp`` / ``bke dme predict`` from Python."""

from __future__ import annotations

import json
from typing import Optional

import numpy as np

from . import _bke
from ._base import FittedModel
from ._validation import JsonReport, Params, as_points, as_vector, seed_from, store_params

# The library's defaults (each model's ``…Params::default()`` in Rust), read once at import so the
# signatures below show them.
_DEFAULTS = _bke.defaults()
_TTGP, _LFI = _DEFAULTS["ttgp"], _DEFAULTS["lfi"]

__all__ = ["TTGP", "lfi", "LfiResult"]


class TTGP(FittedModel, Params):
    """Task-transformed GP (``bke dme fit --model gp``): ``fit(X, Y, Ytilde, ztilde)`` learns every
    hyperparameter by multi-start L-BFGS on the log marginal likelihood (``learn=False`` keeps the
    given ones); ``predict(X, return_std=True)`` gives the posterior mean and standard deviation of
    the latent ``f`` (no observation noise).

    Parameters
    ----------
    kernel : str, default "se"
        Family of both kernels: se, laplace, matern32, matern52, rq or rq:ALPHA.
    lengthscale_x, lengthscale_y : float or sequence, default 1.0
        (Initial) lengthscale(s) of the kernels k on x and ℓ on y (one, or one per column).
    sigma : float, default 0.1
        (Initial) observation noise standard deviation.
    lambda_ : float, optional
        CME regulariser λ (default σ²/n). ``lambda`` is a Python keyword, hence the underscore.
    epsilon : float, optional
        DME regulariser ε (default σ²/m).
    form : {"map", "full", "alternative"}, default "map"
        Marginal likelihood maximised (seed 004 Thm 5.3 (4), (3), or (4) in O(n³ + n²m)).
    learn : bool, default True
    starts : int, default 5
    spread : float, default 1.5
    max_iter : int, default 200
    random_state : int, default 0
        Seed of the random starts.
    backend, n_jobs
        As every bke estimator.

    Attributes
    ----------
    model_ : bke._bke.Model
        The fitted model (kind "ttgp"; ``save`` writes the file ``bke dme predict --model`` reads).
    hyperparameters_ : dict
        The learned hyperparameters (the CLI's ``hyperparameters``).
    log_marginal_ : float
    start_log_marginals_ : list of float
    fit_result_ : dict
        The JSON of ``bke dme fit``.
    n_features_in_ : int
    """

    _model_kinds = ("ttgp",)

    def __init__(
        self,
        kernel: str = _TTGP["kernel"],
        lengthscale_x=_TTGP["lengthscale_x"],
        lengthscale_y=_TTGP["lengthscale_y"],
        sigma: float = _TTGP["sigma"],
        lambda_: Optional[float] = None,
        epsilon: Optional[float] = None,
        form: str = _TTGP["form"],
        learn: bool = True,
        starts: int = _TTGP["starts"],
        spread: float = _TTGP["spread"],
        max_iter: int = _TTGP["max_iter"],
        random_state=_TTGP["seed"],
        backend: str = _DEFAULTS["backend"],
        n_jobs: Optional[int] = None,
    ):
        store_params(self, locals())

    def fit(self, X, Y, Ytilde, ztilde) -> "TTGP":
        """Fits on the transformation set ``(X, Y)`` (paired rows) and the task set
        ``(Ytilde, ztilde)`` (``Ytilde`` with the columns of ``Y``, ``ztilde`` one target per row);
        returns ``self``."""
        X = as_points(X, "X")
        Y, Yt = as_points(Y, "Y"), as_points(Ytilde, "Ytilde")
        z = np.asarray(ztilde, dtype=np.float64)
        if z.ndim == 2 and z.shape[1] == 1:
            z = z[:, 0]
        if z.ndim != 1:
            raise ValueError(f"ztilde must be a 1-D array of targets (one per row of Ytilde); got shape {z.shape}")
        model, summary = _bke.ttgp_fit(
            X, Y, Yt, z, kernel=str(self.kernel),
            lengthscale_x=[float(v) for v in as_vector(self.lengthscale_x, "lengthscale_x")],
            lengthscale_y=[float(v) for v in as_vector(self.lengthscale_y, "lengthscale_y")],
            sigma=float(self.sigma), lambda_=None if self.lambda_ is None else float(self.lambda_),
            epsilon=None if self.epsilon is None else float(self.epsilon), form=str(self.form),
            learn=bool(self.learn), starts=int(self.starts), spread=float(self.spread),
            max_iter=int(self.max_iter), seed=seed_from(self.random_state), **self._exec(),
        )
        self.model_ = model
        self.n_features_in_ = X.shape[1]
        self.fit_result_ = json.loads(summary)
        self._set_fitted_from_model()
        return self

    def _set_fitted_from_model(self) -> None:
        self.hyperparameters_ = json.loads(self.model_.summary(0))
        if not hasattr(self, "fit_result_"):
            self.fit_result_ = {"hyperparameters": self.hyperparameters_}
        self.log_marginal_ = self.fit_result_.get("log_marginal")
        self.start_log_marginals_ = self.fit_result_.get("start_log_marginals")

    def predict(self, X, return_std: bool = False):
        """Posterior mean of the latent ``f`` at the rows of ``X`` (``bke dme predict``); with
        ``return_std=True`` also its standard deviation."""
        X = self._validate_X(X)
        mean, var = self.model_.predict(X, **self._exec())
        return (mean, np.sqrt(var)) if return_std else mean


class LfiResult(JsonReport):
    """The result of :func:`lfi`: ``samples`` (herd × n_parameters) and the fields of the JSON of
    ``bke lfi`` as attributes (``method``, ``q_bar`` for the DME, ``hyperparameters``,
    ``embedding`` with ``mean``/``sd``/``negative_mass``, ``n_simulations``, ``n_prior``)."""

    def __init__(self, report: dict):
        super().__init__(report)
        self.samples = np.asarray(report["samples"], dtype=np.float64)

    def to_dict(self) -> dict:
        """The result as the JSON object of ``bke lfi``."""
        return super().to_dict()

    def __repr__(self) -> str:
        return f"LfiResult(method={self._report['method']!r}, samples={self.samples.shape})"


def lfi(
    theta,
    stats,
    prior_samples,
    observed,
    *,
    method: str = "dme",
    herd: int = _LFI["herd"],
    candidates=None,
    continuous: bool = _LFI["continuous"],
    lengthscale_theta=None,
    lengthscale_stat=None,
    lengthscale_herding=None,
    epsilon=None,
    lambda_: Optional[float] = None,
    delta: Optional[float] = None,
    learn: bool = False,
    learn_lambda: bool = False,
    starts: int = _LFI["starts"],
    seed: int = _LFI["seed"],
    kbr_variant: str = _LFI["kbr_variant"],
    kbr_inverse: str = _LFI["kbr_inverse"],
    backend: str = _DEFAULTS["backend"],
    n_jobs: Optional[int] = None,
) -> LfiResult:
    """Likelihood-free inference from simulations (``bke lfi``; seed 004 Algorithm 8.1).

    ``theta`` (n × P) are the simulation parameters and ``stats`` (n × S) the simulated statistics,
    paired by row; ``prior_samples`` (m × P) samples of the prior (also the herding candidates
    unless ``candidates`` is given); ``observed`` the S observed statistics. ``method`` "dme"
    (deconditional mean embedding) or "kbr" (kernel Bayes' rule); the other keywords are the flags
    of ``bke lfi`` (``lambda_`` for ``--lambda``; lengthscales and ε a number or one per column;
    None: the data-scaled defaults). Returns an :class:`LfiResult` whose ``samples`` are the
    ``herd`` herded posterior super-samples and whose ``to_dict()`` is the command's JSON.
    """

    def vec(v, name):
        return None if v is None else [float(a) for a in as_vector(v, name)]

    obs = np.asarray(observed, dtype=np.float64).ravel()
    report = _bke.lfi(
        as_points(theta, "theta"), as_points(stats, "stats"), as_points(prior_samples, "prior_samples"),
        np.require(obs, requirements="A"), None if candidates is None else as_points(candidates, "candidates"),
        method=str(method), herd=int(herd), continuous=bool(continuous),
        lengthscale_theta=vec(lengthscale_theta, "lengthscale_theta"),
        lengthscale_stat=vec(lengthscale_stat, "lengthscale_stat"),
        lengthscale_herding=vec(lengthscale_herding, "lengthscale_herding"), epsilon=vec(epsilon, "epsilon"),
        lambda_=None if lambda_ is None else float(lambda_), delta=None if delta is None else float(delta),
        learn=bool(learn), learn_lambda=bool(learn_lambda), starts=int(starts), seed=seed_from(seed),
        kbr_variant=str(kbr_variant), kbr_inverse=str(kbr_inverse), backend=str(backend), n_jobs=n_jobs,
    )
    return LfiResult(json.loads(report))
