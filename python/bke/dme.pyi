# Type stubs of bke.dme (the public API of dme.py: TTGP, lfi and LfiResult).
from typing import Any, Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

from ._base import FittedModel
from ._validation import Params

__all__ = ["TTGP", "lfi", "LfiResult"]

_Lengthscale = Union[float, Sequence[float]]

class TTGP(FittedModel, Params):
    kernel: str
    lengthscale_x: _Lengthscale
    lengthscale_y: _Lengthscale
    sigma: float
    lambda_: Optional[float]
    epsilon: Optional[float]
    form: str
    learn: bool
    starts: int
    spread: float
    max_iter: int
    random_state: Any
    backend: str
    n_jobs: Optional[int]
    hyperparameters_: dict
    fit_result_: dict
    log_marginal_: Optional[float]
    start_log_marginals_: Optional[list[float]]
    n_features_in_: int
    def __init__(
        self, kernel: str = ..., lengthscale_x: _Lengthscale = ..., lengthscale_y: _Lengthscale = ...,
        sigma: float = ..., lambda_: Optional[float] = ..., epsilon: Optional[float] = ..., form: str = ...,
        learn: bool = ..., starts: int = ..., spread: float = ..., max_iter: int = ..., random_state: Any = ...,
        backend: str = ..., n_jobs: Optional[int] = ...,
    ) -> None: ...
    def fit(self, X: npt.ArrayLike, Y: npt.ArrayLike, Ytilde: npt.ArrayLike, ztilde: npt.ArrayLike) -> TTGP: ...
    def predict(
        self, X: npt.ArrayLike, return_std: bool = ...
    ) -> Union[npt.NDArray[np.float64], tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]: ...

class LfiResult:
    samples: npt.NDArray[np.float64]
    def __init__(self, report: dict) -> None: ...
    def __getattr__(self, name: str) -> Any: ...
    def to_dict(self) -> dict: ...

def lfi(
    theta: npt.ArrayLike, stats: npt.ArrayLike, prior_samples: npt.ArrayLike, observed: npt.ArrayLike, *,
    method: str = ..., herd: int = ..., candidates: Optional[npt.ArrayLike] = ..., continuous: bool = ...,
    lengthscale_theta: Optional[_Lengthscale] = ..., lengthscale_stat: Optional[_Lengthscale] = ...,
    lengthscale_herding: Optional[_Lengthscale] = ..., epsilon: Optional[_Lengthscale] = ...,
    lambda_: Optional[float] = ..., delta: Optional[float] = ..., learn: bool = ..., learn_lambda: bool = ...,
    starts: int = ..., seed: int = ..., kbr_variant: str = ..., kbr_inverse: str = ..., backend: str = ...,
    n_jobs: Optional[int] = ...,
) -> LfiResult: ...
