"""BaNK — Bayesian nonparametric kernel learning (Oliva et al., AISTATS 2016; seed 001) — and its
random-feature baselines RKS and MKL (seed 001 §4.2), as scikit-learn estimators.

BaNK learns the kernel: the frequencies of ``frequencies`` random Fourier features follow a
Dirichlet-process mixture of Gaussians, sampled by MCMC together with the weights (``bke bank
fit``). Predictions average ``samples`` retained states. The baselines fix the frequencies (RBF:
RKS; Laplace/RBF/Cauchy at three scales: MKL) and fit a Bayesian linear (or logistic) model on the
features, choosing its prior by the evidence.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from . import _bke
from ._base import BaseEstimator, ClassifierMixin, FittedModel, RegressorMixin
from ._validation import EXEC_DOC, as_vector, seed_from, store_params

# The library's defaults (each model's ``…Params::default()`` in Rust), read once at import so the
# signatures below show them.
_DEFAULTS = _bke.defaults()
_BANK, _BASELINE = _DEFAULTS["bank"], _DEFAULTS["baseline"]

__all__ = [
    "BankRegressor",
    "BankClassifier",
    "RKSRegressor",
    "RKSClassifier",
    "MKLRegressor",
    "MKLClassifier",
]


def _targets(y, n: int) -> np.ndarray:
    if y is None:
        raise ValueError("this estimator requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        import warnings

        warnings.warn(
            "A column-vector y was passed when a 1d array was expected. Please change the shape of "
            "y to (n_samples,), for example using ravel().",
            _data_conversion_warning(),
        )
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"y should be a 1d array of shape (n_samples,); got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"X and y have different numbers of samples: {n} and {y.shape[0]}")
    return y


def _data_conversion_warning():
    try:
        from sklearn.exceptions import DataConversionWarning

        return DataConversionWarning
    except ImportError:  # pragma: no cover
        return UserWarning


def _regression_targets(y, n: int) -> np.ndarray:
    y = _targets(y, n)
    try:
        if y.dtype != object and not (np.issubdtype(y.dtype, np.number) or y.dtype == np.bool_):
            raise TypeError
        y = y.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"Unknown label type: y must hold real numbers for regression; got dtype {y.dtype}") from None
    if not np.all(np.isfinite(y)):
        i = int(np.flatnonzero(~np.isfinite(y))[0])
        raise ValueError(f"y has a non-finite value {y[i]} at index {i}")
    return y


class _Classes:
    """Binary classification: any two labels, mapped to 0/1 for the library."""

    def _encode(self, y, n: int) -> np.ndarray:
        y = _targets(y, n)
        if y.dtype.kind == "f" and np.any(y != np.round(y)):
            raise ValueError(
                "Unknown label type: continuous. y holds non-integer numbers; a classifier needs "
                "class labels (use a regressor for a real-valued target)"
            )
        classes, codes = np.unique(y, return_inverse=True)
        if len(classes) != 2:
            raise ValueError(
                f"Only binary classification is supported: {type(self).__name__} needs y with exactly 2 classes; got "
                f"{len(classes)} class(es) ({classes[:5].tolist()}{' ...' if len(classes) > 5 else ''})"
            )
        self.classes_ = classes
        return codes.astype(np.float64)

    def _set_fitted_from_model(self) -> None:
        """The fitted attributes; ``classes_`` is 0/1 for a loaded model (its file keeps no labels)."""
        super()._set_fitted_from_model()
        if not hasattr(self, "classes_"):
            self.classes_ = np.array([0.0, 1.0])

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities, shape ``(n_samples, 2)`` in the order of ``classes_``."""
        X = self._validate_X(X)
        p1, _ = self.model_.predict(X, **self._exec())
        return np.column_stack([1.0 - p1, p1])

    def predict_log_proba(self, X) -> np.ndarray:
        """Log of ``predict_proba``."""
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def decision_function(self, X) -> np.ndarray:
        """``log P(y = classes_[1]) − log P(y = classes_[0])``."""
        p = self.predict_proba(X)
        with np.errstate(divide="ignore"):
            return np.log(p[:, 1]) - np.log(p[:, 0])

    def predict(self, X) -> np.ndarray:
        """The more probable class (``classes_[1]`` when ``P ≥ 1/2``)."""
        p = self.predict_proba(X)
        return self.classes_[(p[:, 1] >= 0.5).astype(int)]


class _Regression:
    def predict(self, X, return_std: bool = False):
        """Predictive mean at the rows of ``X``; with ``return_std=True`` also the predictive
        standard deviation (``(mean, std)``)."""
        X = self._validate_X(X)
        mean, var = self.model_.predict(X, **self._exec())
        return (mean, np.sqrt(var)) if return_std else mean


_BANK_DOC = """
    Parameters
    ----------
    frequencies : int, default 128
        Number M of random frequencies (2M features).
    iterations : int, default 100
        MCMC sweeps.
    burn_in : int, optional
        Burn-in sweeps (default: half the iterations).
    samples : int, default 20
        Retained post-burn-in states averaged for prediction.
    warmup : int, optional
        Burn-in sweeps before the learned hyperparameters move (default: half the burn-in).
    alpha, kappa0, nu0, psi0, init_scale, a0, b0, prior_precision, weight_prior_variance,
    intercept_prior_variance : float, optional
        The hyperparameters of ``bke bank fit`` (same names as its flags); None keeps the library's
        default (λ₀, ψ₀ and the classification weight variance are then learned).
    relevance : {"auto", "ard", "off"}, default "auto"
        Per-input lengthscales (ARD) for the spectral prior, learned by a GP's evidence on up to
        1000 rows: used when they predict held-out rows better than one shared lengthscale by 3
        standard errors ("auto"), always ("ard") or never ("off", seed 001's isotropic prior).
    random_state : int, RandomState, Generator or None, default 0
        Seed of the sampler.
""" + EXEC_DOC + """
    Attributes
    ----------
    model_ : bke._bke.Model
        The fitted model (``save``/``load`` write and read it as a bke model file).
    spectral_mixture_ : dict
        The learned spectral density: ``weights``, ``means``, ``covariances``.
    acceptance_rate_ : float
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` had string column names.
"""


class _Bank(FittedModel, BaseEstimator):
    _task = "regression"

    def __init__(
        self,
        frequencies: int = _BANK["frequencies"],
        iterations: int = _BANK["iterations"],
        burn_in: Optional[int] = None,
        samples: int = _BANK["samples"],
        warmup: Optional[int] = None,
        alpha: Optional[float] = None,
        kappa0: Optional[float] = None,
        nu0: Optional[float] = None,
        psi0: Optional[float] = None,
        init_scale: Optional[float] = None,
        a0: Optional[float] = None,
        b0: Optional[float] = None,
        prior_precision: Optional[float] = None,
        weight_prior_variance: Optional[float] = None,
        intercept_prior_variance: Optional[float] = None,
        relevance: str = _BANK["relevance"],
        random_state=_BANK["seed"],
        backend: str = _DEFAULTS["backend"],
        n_jobs: Optional[int] = None,
    ):
        store_params(self, locals())

    def _fit(self, X, y):
        opt = lambda v, kind=float: None if v is None else kind(v)  # noqa: E731
        self.model_ = _bke.bank_fit(
            X, y, task=self._task, frequencies=int(self.frequencies), iterations=int(self.iterations),
            burn_in=opt(self.burn_in, int), samples=int(self.samples), warmup=opt(self.warmup, int),
            seed=seed_from(self.random_state), alpha=opt(self.alpha), prior_precision=opt(self.prior_precision),
            weight_prior_variance=opt(self.weight_prior_variance),
            intercept_prior_variance=opt(self.intercept_prior_variance), kappa0=opt(self.kappa0),
            nu0=opt(self.nu0), psi0=opt(self.psi0), init_scale=opt(self.init_scale), a0=opt(self.a0),
            b0=opt(self.b0), relevance=str(self.relevance), **self._exec(),
        ).with_columns(self._columns(), None)
        self._set_fitted_from_model()
        return self

    def _set_fitted_from_model(self) -> None:
        s = self._summary()
        self.spectral_mixture_ = s["spectral_mixture"]
        self.acceptance_rate_ = s["acceptance_rate"]

    def summary(self) -> dict:
        """The fit summary ``bke bank fit`` prints (acceptance rate, components, learned λ₀/ψ₀,
        the spectral mixture, …)."""
        self._check_fitted()
        return self._summary()

    @classmethod
    def _params_from_model(cls, model) -> dict:
        import json

        p = json.loads(model.to_text())["model"]["params"]
        keep = ("frequencies", "iterations", "burn_in", "samples", "warmup", "relevance")
        out = {k: p[k] for k in keep if k in p}
        out["random_state"] = p.get("seed", 0)
        return out


class BankRegressor(_Regression, RegressorMixin, _Bank):
    __doc__ = """BaNK regression (seed 001): a Bayesian linear model on random Fourier features whose
    frequencies follow a learned DP mixture of Gaussians (``bke bank fit --task regression``).
    ``predict(X, return_std=True)`` gives the Student-t mixture's mean and standard deviation.
""" + _BANK_DOC
    _task = "regression"
    _model_kinds = ("bank-regression",)

    def fit(self, X, y) -> "BankRegressor":
        """Samples the model given ``X`` (n_samples, n_features) and real ``y``; returns ``self``."""
        X = self._validate_fit_X(X)
        return self._fit(X, _regression_targets(y, X.shape[0]))


class BankClassifier(_Classes, ClassifierMixin, _Bank):
    __doc__ = """BaNK binary classification (seed 001 §3.3): logistic regression on random Fourier
    features with learned frequencies (``bke bank fit --task classification``). Any two labels;
    ``predict_proba`` gives the posterior-averaged probabilities.
""" + _BANK_DOC
    _task = "classification"
    _model_kinds = ("bank-classification",)

    def fit(self, X, y) -> "BankClassifier":
        """Samples the model given ``X`` and labels ``y`` (two classes); returns ``self``."""
        X = self._validate_fit_X(X)
        return self._fit(X, self._encode(y, X.shape[0]))


class _Baseline(FittedModel, BaseEstimator):
    _kind = "rks"
    _task = "regression"

    def __init__(
        self,
        frequencies: int = _BASELINE["frequencies"],
        lengthscale: Optional[float] = None,
        scales=tuple(_BASELINE["scales"]),
        standardize_inputs: bool = _BASELINE["standardize_inputs"],
        random_state=_BASELINE["seed"],
        backend: str = _DEFAULTS["backend"],
        n_jobs: Optional[int] = None,
    ):
        store_params(self, locals())

    def _fit(self, X, y):
        self.model_ = _bke.baseline_fit(
            X, y, kind=self._kind, task=self._task, frequencies=int(self.frequencies),
            lengthscale=None if self.lengthscale is None else float(self.lengthscale),
            scales=[float(s) for s in as_vector(self.scales, "scales")],
            standardize_inputs=bool(self.standardize_inputs), seed=seed_from(self.random_state),
            **self._exec(),
        ).with_columns(self._columns(), None)
        self._set_fitted_from_model()
        return self

    def _set_fitted_from_model(self) -> None:
        s = self._summary()
        if s["kind"] != self._kind:
            raise ValueError(f"this is a {s['kind'].upper()} model, but {type(self).__name__} is {self._kind.upper()}")
        self.chosen_prior_ = s["chosen_prior"]
        self.frequencies_ = np.asarray(s["w"]).reshape(-1, self.n_features_in_)

    @classmethod
    def _params_from_model(cls, model) -> dict:
        import json

        return {"frequencies": len(json.loads(model.summary(0))["w"]) // model.n_features}


_BASELINE_DOC = """
    Parameters
    ----------
    frequencies : int, default 128
        Number M of random frequencies (2M features).
    lengthscale : float, optional
        Base lengthscale in standardised units (default: the median pairwise distance).
    scales : sequence of float, default (0.5, 1, 2)
        MKL: multipliers of the base lengthscale (ignored by RKS).
    standardize_inputs : bool, default True
    random_state : int, RandomState, Generator or None, default 0
        Seed of the frequencies.
    backend, n_jobs
        As every bke estimator.

    Attributes
    ----------
    model_ : bke._bke.Model
    frequencies_ : ndarray of shape (M, n_features)
        The frequencies (standardised units).
    chosen_prior_ : float
        The prior precision (regression) or variance (classification) chosen by the evidence.
    n_features_in_ : int
"""


class RKSRegressor(_Regression, RegressorMixin, _Baseline):
    __doc__ = """Random kitchen sinks regression (seed 001 §4.2): Bayesian ridge on RBF random
    Fourier features, the prior precision chosen by the evidence.""" + _BASELINE_DOC
    _kind, _task, _model_kinds = "rks", "regression", ("baseline-regression",)

    def fit(self, X, y):
        """Fits the ridge on the features of ``X``; returns ``self``."""
        X = self._validate_fit_X(X)
        return self._fit(X, _regression_targets(y, X.shape[0]))


class MKLRegressor(RKSRegressor):
    __doc__ = """Multiple kernel learning with random features (seed 001 §4.2): Bayesian ridge on
    Laplace, RBF and Cauchy random features at ``scales`` × the base lengthscale.""" + _BASELINE_DOC
    _kind = "mkl"


class RKSClassifier(_Classes, ClassifierMixin, _Baseline):
    __doc__ = """Random kitchen sinks binary classification: logistic regression (MAP) on RBF
    random Fourier features, the prior variance chosen by the Laplace evidence.""" + _BASELINE_DOC
    _kind, _task, _model_kinds = "rks", "classification", ("baseline-classification",)

    def fit(self, X, y):
        """Fits the logistic model on the features of ``X``; returns ``self``."""
        X = self._validate_fit_X(X)
        return self._fit(X, self._encode(y, X.shape[0]))


class MKLClassifier(RKSClassifier):
    __doc__ = """MKL binary classification with random features (seed 001 §4.2).""" + _BASELINE_DOC
    _kind = "mkl"
