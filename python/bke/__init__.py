"""bke — Bayesian kernel learning from Python.

Learned kernels for two-sample (MMD) and independence (HSIC) tests, Bayesian kernel embeddings,
BaNK regression and classification, kernel student-t densities, task-transformed GPs,
likelihood-free inference and causal discovery (PC with kernel conditional-independence tests), computed by the Rust library ``bke`` (the GIL is released while it
runs; ``backend=`` picks the linear-algebra backend and ``n_jobs=`` the number of threads, and
results never depend on ``n_jobs``). ``bke.dask`` fits the same models on Dask arrays.
"""

from . import _bke, bank, causal, density, dme, embedding
from ._bke import __version__, backends
from .bank import (
    BankClassifier,
    BankRegressor,
    MKLClassifier,
    MKLRegressor,
    RKSClassifier,
    RKSRegressor,
)
from .causal import CiResult, PcResult, ci_test, pc
from .density import GaussianKDE, KernelStudentT
from .dme import TTGP, LfiResult, lfi
from .embedding import HyperSamples, KernelEmbedding, LogMarginal
from .hypothesis import MMD, Hsic, TestResult, hsic_test, mmd_test

# ``from bke import *``: the names each submodule exports (its ``__all__``), in this order.
__all__ = [
    "__version__",
    "backends",
    *embedding.__all__,
    *bank.__all__,
    *density.__all__,
    "MMD",
    "Hsic",
    "mmd_test",
    "hsic_test",
    "TestResult",
    *dme.__all__,
    *causal.__all__,
]
