"""Type stubs of the extension module ``bke._bke`` (the Rust half of ``bke``). Users call the
classes of ``bke``; these functions are their implementation."""

from os import PathLike
from typing import Optional, Sequence, Union

import numpy as np
import numpy.typing as npt

__version__: str

Array = npt.NDArray[np.float64]

def backends() -> list[str]: ...

class Model:
    """One fitted model (BaNK, RKS/MKL baseline or kernel student-t density)."""

    kind: str
    columns: list[str]
    target: Optional[str]
    n_features: int
    def predict(self, x: Array, *, backend: str, n_jobs: Optional[int]) -> tuple[Array, Array]: ...
    def log_density(self, x: Array, *, backend: str, n_jobs: Optional[int]) -> Array: ...
    def sample(self, n: int, seed: int, *, backend: str, n_jobs: Optional[int]) -> Array: ...
    def summary(self, rows: int) -> str: ...
    def to_text(self) -> str: ...
    def save(self, path: Union[str, PathLike]) -> None: ...
    def with_columns(self, columns: Sequence[str], target: Optional[str] = None) -> "Model": ...

def model_from_text(text: str) -> Model: ...
def model_load(path: Union[str, PathLike]) -> Model: ...
def bank_fit(
    x: Array, y: Array, *, task: str, frequencies: int, iterations: int, burn_in: Optional[int],
    samples: int, warmup: Optional[int], seed: int, alpha: Optional[float],
    prior_precision: Optional[float], weight_prior_variance: Optional[float],
    intercept_prior_variance: Optional[float], kappa0: Optional[float], nu0: Optional[float],
    psi0: Optional[float], init_scale: Optional[float], a0: Optional[float], b0: Optional[float],
    backend: str, n_jobs: Optional[int],
) -> Model: ...
def baseline_fit(
    x: Array, y: Array, *, kind: str, task: str, frequencies: int, lengthscale: Optional[float],
    scales: Optional[Sequence[float]], standardize_inputs: bool, seed: int, backend: str,
    n_jobs: Optional[int],
) -> Model: ...
def density_fit(
    x: Array, *, kernel: str, lengthscale: Optional[Sequence[float]], alpha: Optional[float],
    beta: Optional[float], sigma0_sq: Optional[float], normalise: bool, folds: int, margin: float,
    seed: int, backend: str, n_jobs: Optional[int],
) -> Model: ...
def kde(
    x: Array, at: Optional[Array], *, rule: str, bandwidths: Optional[Sequence[float]],
    factors: Optional[Sequence[float]], backend: str, n_jobs: Optional[int],
) -> tuple[Array, Optional[float], Optional[Array]]: ...
def embedding_fit(x: Array, **kwargs) -> dict: ...
def embedding_log_marginal(x: Array, z: Array, **kwargs) -> dict: ...
def embedding_posterior(x: Array, at: Array, conditioning: Optional[Array], **kwargs) -> tuple[Array, Array]: ...
def embedding_sample(x: Array, **kwargs) -> dict: ...
def mmd_test(
    x: Array, y: Array, *, lengthscale: Optional[float], selection: dict, statistic: str, null: str,
    permutations: int, alpha: float, seed: int, null_draws: Optional[Sequence[float]], backend: str,
    n_jobs: Optional[int],
) -> tuple[str, list[float]]: ...
def hsic_test(
    x: Array, y: Array, *, lengthscale_x: Optional[float], lengthscale_y: Optional[float],
    selection: dict, statistic: str, null: str, permutations: int, alpha: float, seed: int,
    backend: str, n_jobs: Optional[int],
) -> tuple[str, list[float]]: ...
def mmd_null_draws(
    x: Array, y: Array, *, lengthscale: float, statistic: str, seed: int, start: int, stop: int,
    backend: str, n_jobs: Optional[int],
) -> Array: ...
def ttgp_fit(
    x: Array, y: Array, ytilde: Array, ztilde: Array, *, kernel: str, lengthscale_x: Sequence[float],
    lengthscale_y: Sequence[float], sigma: float, lambda_: Optional[float], epsilon: Optional[float],
    form: str, learn: bool, starts: int, spread: float, max_iter: int, seed: int, backend: str,
    n_jobs: Optional[int],
) -> tuple[Model, str]: ...
