# Type stubs of bke.dask (the public API of dask.py: KernelEmbedding and mmd_test on dask arrays).
from typing import Any, Optional

import numpy.typing as npt

from .embedding import HyperSamples, LogMarginal
from .embedding import KernelEmbedding as _InMemoryEmbedding
from .hypothesis import TestResult

__all__ = ["KernelEmbedding", "mmd_test"]

class KernelEmbedding(_InMemoryEmbedding):
    def fit(self, X: Any, y: None = ...) -> KernelEmbedding: ...
    def log_marginal(
        self, X: Optional[npt.ArrayLike] = ..., landmarks: Optional[npt.ArrayLike] = ...,
        lengthscale: Optional[Any] = ..., tau2: Optional[float] = ...,
    ) -> LogMarginal: ...
    def posterior(
        self, at: npt.ArrayLike, X: Optional[npt.ArrayLike] = ..., condition_on: str = ...,
        lengthscale: Optional[Any] = ..., tau2: Optional[float] = ...,
    ) -> Any: ...
    def sample(self, X: Optional[npt.ArrayLike] = ..., **kwargs: Any) -> HyperSamples: ...

def mmd_test(
    x: Any, y: Any, *, select: Optional[str] = ..., lengthscale: Optional[float] = ...,
    statistic: str = ..., permutations: int = ..., alpha: float = ..., seed: int = ...,
    pieces: Optional[int] = ..., median_convention: str = ..., bkl_landmarks: int = ...,
    bkl_tau2: float = ..., bkl_prior: str = ..., backend: str = ..., n_jobs: Optional[int] = ...,
) -> TestResult: ...
