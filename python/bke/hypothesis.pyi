from typing import Iterator, Optional

import numpy as np
import numpy.typing as npt

class TestResult:
    statistic: float
    pvalue: float
    reject: bool
    alpha: float
    lengthscale: float
    lengthscale_y: Optional[float]
    selection: str
    kernels: list[dict]
    null_samples: npt.NDArray[np.float64]
    def to_dict(self) -> dict: ...
    def __iter__(self) -> Iterator[float]: ...

def mmd_test(
    x: npt.ArrayLike, y: npt.ArrayLike, *, select: Optional[str] = ..., lengthscale: Optional[float] = ...,
    statistic: str = ..., null: str = ..., permutations: int = ..., alpha: float = ..., seed: int = ...,
    dense: bool = ..., median_convention: str = ..., bkl_landmarks: int = ..., bkl_tau2: float = ..., bkl_prior: str = ...,
    agg_weights: str = ..., agg_kernels: str = ..., backend: str = ..., n_jobs: Optional[int] = ...,
) -> TestResult: ...
def hsic_test(
    x: npt.ArrayLike, y: npt.ArrayLike, *, select: Optional[str] = ..., lengthscale_x: Optional[float] = ...,
    lengthscale_y: Optional[float] = ..., statistic: str = ..., null: str = ..., permutations: int = ...,
    alpha: float = ..., seed: int = ..., dense: bool = ..., median_convention: str = ..., bkl_landmarks: int = ...,
    bkl_tau2: float = ..., bkl_prior: str = ..., agg_weights: str = ..., agg_kernels: str = ...,
    backend: str = ..., n_jobs: Optional[int] = ...,
) -> TestResult: ...

class MMD:
    result_: TestResult
    def __init__(
        self, select: str = ..., statistic: Optional[str] = ..., null: str = ..., permutations: int = ...,
        alpha: float = ..., random_state: Optional[int] = ..., dense: bool = ..., backend: str = ...,
        n_jobs: Optional[int] = ...,
        **selection_options: object,
    ) -> None: ...
    def test(self, x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[float, float]: ...

class Hsic(MMD): ...
