"""Input checks shared by every entry point: numpy arrays of float64 with the right number of
dimensions, and the scikit-learn conventions for ``random_state`` and ``n_jobs``; and what the
estimators and results share: ``Params``, ``store_params`` and ``JsonReport``."""

from __future__ import annotations

import json
import numbers

import numpy as np

__all__ = ["as_points", "as_vector", "seed_from", "Params", "store_params", "JsonReport"]


def as_points(x, name: str) -> np.ndarray:
    """``x`` as a float64 array of shape ``(n_samples, n_features)``.

    Other real dtypes are converted; C and Fortran order are both read as they are. A 1-D array is
    refused with a message that says how to reshape it (bke never guesses whether it holds one
    feature or one sample). NaN and infinity are reported by the Rust side with the row and column.
    """
    if hasattr(x, "tocsr") or hasattr(x, "to_dense") and not hasattr(x, "__array__"):
        raise TypeError(
            f"{name} is a sparse matrix: sparse input is not supported (bke's kernels are dense); "
            f"pass {name}.toarray()"
        )
    a = np.asarray(x)
    if np.iscomplexobj(a):
        raise ValueError(f"Complex data not supported: {name} must hold real numbers; got dtype {a.dtype}")
    if a.dtype != object and not (np.issubdtype(a.dtype, np.number) or a.dtype == np.bool_):
        raise ValueError(f"{name} must hold real numbers; got an array of dtype {a.dtype}")
    a = np.asarray(a, dtype=np.float64)  # object arrays: numbers convert, anything else raises
    # Arrays unpickled from out-of-band buffers (Dask, multiprocessing) may be unaligned; Rust reads
    # aligned float64 only.
    a = np.require(a, requirements="A")
    if a.ndim == 1:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_features); got a 1-D array of "
            f"shape {a.shape}. Reshape your data: {name}.reshape(-1, 1) if it holds one feature, or "
            f"{name}.reshape(1, -1) if it holds one sample."
        )
    if a.ndim != 2:
        raise ValueError(
            f"{name} must be a 2-D array of shape (n_samples, n_features); got {a.ndim} "
            f"dimension(s), shape {a.shape}"
        )
    return a


def as_vector(v, name: str) -> np.ndarray:
    """``v`` as a float64 vector (a scalar becomes a vector of length 1)."""
    a = np.atleast_1d(np.asarray(v, dtype=np.float64))
    if a.ndim != 1:
        raise ValueError(f"{name} must be a number or a 1-D array; got shape {a.shape}")
    return a


def seed_from(random_state) -> int:
    """A 64-bit seed from scikit-learn's ``random_state`` (an int is used as it is; ``None`` or a
    ``numpy.random.RandomState``/``Generator`` draws one)."""
    if random_state is None:
        return int(np.random.randint(0, 2**31 - 1))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer; got {random_state}")
        return int(random_state)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    raise ValueError(
        "random_state must be None, a non-negative int, a numpy.random.RandomState or a "
        f"numpy.random.Generator; got {random_state!r}"
    )


class Params:
    """``get_params``/``set_params`` and a readable ``repr`` from the ``__init__`` keywords, as
    scikit-learn's ``BaseEstimator`` provides them (so ``sklearn.base.clone`` works) without
    needing scikit-learn."""

    @classmethod
    def _param_names(cls):
        import inspect

        sig = inspect.signature(cls.__init__)
        return [p for p in sig.parameters if p != "self"]

    def get_params(self, deep: bool = True) -> dict:
        """The constructor keywords and their current values."""
        return {k: getattr(self, k) for k in self._param_names()}

    def set_params(self, **params):
        """Sets constructor keywords; returns ``self``."""
        names = self._param_names()
        for k, v in params.items():
            if k not in names:
                raise ValueError(f"invalid parameter {k!r} for {type(self).__name__}; valid: {names}")
            setattr(self, k, v)
        return self

    def __repr__(self) -> str:
        import inspect

        sig = inspect.signature(type(self).__init__)
        shown = [
            f"{k}={getattr(self, k)!r}"
            for k, p in sig.parameters.items()
            if k != "self" and getattr(self, k) is not p.default
            and not _equal(getattr(self, k), p.default)
        ]
        return f"{type(self).__name__}({', '.join(shown)})"


#: The estimators' docs of ``backend`` and ``n_jobs`` (numpydoc ``Parameters`` entries).
EXEC_DOC = """    backend : str, default "faer"
        Linear-algebra backend (``bke.backends()``).
    n_jobs : int or None, default None
        Worker threads (None or -1: all cores). Results do not depend on it.
"""


def store_params(est, args: dict) -> None:
    """Sets the keywords of ``est.__init__`` (``args``: its ``locals()``, ``self`` left out) as
    attributes of the same names, unchanged and in order (scikit-learn's convention)."""
    for name, value in args.items():
        if name != "self":
            setattr(est, name, value)


class JsonReport:
    """A result holding a command's JSON report in ``_report``: its fields are attributes."""

    def __init__(self, report: dict):
        self._report = report

    def __getattr__(self, name):
        # Every field of the JSON without a property of its own.
        report = self.__dict__.get("_report", {})
        if name in report:
            return report[name]
        raise AttributeError(f"{type(self).__name__} has no field {name!r}; fields: {sorted(report)}")

    def to_dict(self) -> dict:
        """The result as the command's JSON object (a deep copy)."""
        return json.loads(json.dumps(self._report))


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


try:
    from sklearn.exceptions import NotFittedError
except ImportError:  # pragma: no cover

    class NotFittedError(ValueError, AttributeError):
        """Raised when an estimator is used before ``fit`` (as scikit-learn's)."""
