"""What the scikit-learn estimators of bke share: the base classes (scikit-learn's own when it is
installed, so that ``clone``, ``Pipeline``, ``GridSearchCV`` and ``check_estimator`` see ordinary
estimators; bke's minimal ``Params`` otherwise), input checks for ``fit``/``predict`` with the
``n_features_in_``/``feature_names_in_`` conventions, and save/load/pickling of the fitted Rust
model through the library's model files."""

from __future__ import annotations

import json

import numpy as np

from . import _bke
from ._validation import Params, as_points

try:  # scikit-learn is optional: bke works without it
    from sklearn.base import BaseEstimator, ClassifierMixin, DensityMixin, RegressorMixin

    HAVE_SKLEARN = True
except ImportError:  # pragma: no cover - exercised only without scikit-learn
    BaseEstimator = Params
    HAVE_SKLEARN = False

    class RegressorMixin:
        """R² ``score`` as scikit-learn's ``RegressorMixin``."""

        _estimator_type = "regressor"

        def score(self, X, y, sample_weight=None):
            y = np.asarray(y, dtype=np.float64)
            p = self.predict(X)
            w = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
            ss_res = np.sum(w * (y - p) ** 2)
            ss_tot = np.sum(w * (y - np.average(y, weights=w)) ** 2)
            return 1.0 - ss_res / ss_tot

    class ClassifierMixin:
        """Accuracy ``score`` as scikit-learn's ``ClassifierMixin``."""

        _estimator_type = "classifier"

        def score(self, X, y, sample_weight=None):
            return float(np.average(self.predict(X) == np.asarray(y), weights=sample_weight))

    class DensityMixin:
        """Marks density estimators."""

        _estimator_type = "DensityEstimator"


__all__ = ["BaseEstimator", "RegressorMixin", "ClassifierMixin", "DensityMixin", "Inputs", "FittedModel"]


def feature_names(X):
    """The column names of a pandas DataFrame (or any object with string ``columns``), else None."""
    cols = getattr(X, "columns", None)
    if cols is None:
        return None
    names = [str(c) for c in cols]
    return np.asarray(names, dtype=object) if all(isinstance(c, str) for c in cols) else None


def _nonempty(X: np.ndarray, min_samples: int = 1, who: str = "") -> np.ndarray:
    """``X`` unless it has too few rows or no columns (scikit-learn's wording)."""
    for axis, what, least in ((0, "sample(s)", min_samples), (1, "feature(s)", 1)):
        if X.shape[axis] < least:
            by = f" by {who}" if who else ""
            raise ValueError(
                f"Found array with {X.shape[axis]} {what} (shape={X.shape}) while a minimum of "
                f"{least} is required{by}."
            )
    return X


class Inputs:
    """Mixin: input checks of ``fit`` (setting ``n_features_in_``/``feature_names_in_``) and of the
    methods of a fitted estimator (the attribute ``_fitted_attr`` marks it fitted)."""

    #: Rows ``fit`` needs.
    _min_samples = 2
    #: The attribute that ``fit`` sets.
    _fitted_attr = "model_"

    def _check_fitted(self):
        if not hasattr(self, self._fitted_attr):
            from ._validation import NotFittedError

            raise NotFittedError(
                f"This {type(self).__name__} instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before using this estimator."
            )

    def _validate_fit_X(self, X):
        names = feature_names(X)
        X = _nonempty(as_points(X, "X"), self._min_samples, type(self).__name__)
        self.n_features_in_ = X.shape[1]
        if names is not None:
            self.feature_names_in_ = names
        elif hasattr(self, "feature_names_in_"):
            del self.feature_names_in_
        return X

    def _validate_X(self, X):
        self._check_fitted()
        X = _nonempty(as_points(X, "X"))
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
        return X

    def _exec(self):
        return dict(backend=str(self.backend), n_jobs=self.n_jobs)


class FittedModel(Inputs):
    """Mixin for estimators whose fitted state is one ``bke._bke.Model`` in ``model_``: input checks
    against the fitted shape, ``save``/``load`` through the library's model files (the files of
    ``bke bank fit``/``bke density fit``), and plain pickling (``model_`` pickles as the file's
    text)."""

    def _columns(self):
        names = getattr(self, "feature_names_in_", None)
        return [str(c) for c in names] if names is not None else [f"x{j}" for j in range(self.n_features_in_)]

    def save(self, path) -> None:
        """Writes the fitted model to ``path`` as a bke model file (atomically), readable by
        ``load`` and by the CLI (``bke bank predict --model``, ``bke density eval --model``)."""
        self._check_fitted()
        self.model_.save(str(path))

    @classmethod
    def load(cls, path):
        """An estimator fitted from a bke model file (written by ``save`` or by the CLI)."""
        model = _bke.model_load(str(path))
        if model.kind not in cls._model_kinds:
            raise ValueError(
                f"{path}: this is a '{model.kind}' model, but {cls.__name__} reads "
                f"{' or '.join(repr(k) for k in cls._model_kinds)} models"
            )
        est = cls(**cls._params_from_model(model))
        est.model_ = model
        est.n_features_in_ = model.n_features
        cols = model.columns
        if cols and not all(c == f"x{j}" for j, c in enumerate(cols)):
            est.feature_names_in_ = np.asarray(cols, dtype=object)
        est._set_fitted_from_model()
        return est

    @classmethod
    def _params_from_model(cls, model) -> dict:
        return {}

    def _set_fitted_from_model(self) -> None:
        """Sets the fitted attributes read from ``model_`` (after ``fit`` and ``load``)."""

    def _summary(self, rows: int = 0) -> dict:
        return json.loads(self.model_.summary(rows))
