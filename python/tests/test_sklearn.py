"""scikit-learn compatibility: check_estimator on every estimator (small settings so it runs in
seconds), clone, Pipeline and GridSearchCV."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

import bke

SMALL_BANK = dict(frequencies=8, iterations=6, samples=2)

# Checks expected to fail, and why (reported as xfail, not silently dropped): none. The checks that
# scikit-learn itself skips here need pandas (not installed in the test venv) or SCIPY_ARRAY_API.
SKIPS = {}


@pytest.mark.parametrize(
    "estimator",
    [
        bke.BankRegressor(**SMALL_BANK),
        bke.BankClassifier(**SMALL_BANK),
        bke.RKSRegressor(frequencies=16),
        bke.RKSClassifier(frequencies=16),
        bke.MKLRegressor(frequencies=18),
        bke.MKLClassifier(frequencies=18),
        bke.KernelStudentT(lengthscale=1.0, alpha=30.0, beta=0.01, sigma0_sq=1.0, normalise=False),
        bke.GaussianKDE(),
    ],
    ids=lambda e: type(e).__name__,
)
def test_check_estimator(estimator):
    check_estimator(estimator, expected_failed_checks=SKIPS.get(type(estimator).__name__, {}))


def test_clone_pipeline_and_grid_search():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(80, 2))
    y = np.sin(2 * x[:, 0]) + 0.1 * rng.normal(size=80)
    pipe = make_pipeline(StandardScaler(), bke.RKSRegressor(frequencies=32))
    search = GridSearchCV(pipe, {"rksregressor__lengthscale": [0.3, 1.0, 3.0]}, cv=3).fit(x, y)
    assert search.best_params_["rksregressor__lengthscale"] in (0.3, 1.0, 3.0)
    assert search.score(x, y) > 0.5
    c = clone(bke.BankRegressor(frequencies=7, random_state=3))
    assert c.get_params()["frequencies"] == 7 and not hasattr(c, "model_")
