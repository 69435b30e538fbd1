"""BaNK and the RKS/MKL baselines against the CLI (`bke bank fit/predict`, the same seeds), model
files shared both ways, bad input, classes, pickling and n_jobs invariance."""

import pickle

import numpy as np
import pytest

import bke
from conftest import load, write_csv

SMALL = dict(frequencies=12, iterations=16, samples=4)


@pytest.fixture(scope="module")
def diabetes():
    a = load("diabetes")[:150]
    return a[:, :-1], a[:, -1]


@pytest.fixture(scope="module")
def cancer():
    a = load("breast_cancer")[:150, [0, 1, 4, 7, -1]]
    return a[:, :-1], a[:, -1]


def cli_fit_predict(cli, tmp_path, x, y, task, *flags):
    data = write_csv(tmp_path / "d.csv", np.column_stack([x, y]), [f"x{j}" for j in range(x.shape[1])] + ["y"])
    model = tmp_path / "m.json"
    summary = cli("bank", "fit", "--data", data, "--target", "y", "--task", task, "--model-out", model, *flags)
    return summary, model, cli("bank", "predict", "--model", model, "--data", data), data


def test_regressor_equals_cli_and_model_files_are_shared(diabetes, cli, tmp_path):
    x, y = diabetes
    summary, cli_model, pred, data = cli_fit_predict(
        cli, tmp_path, x, y, "regression", "--frequencies", 12, "--iterations", 16, "--samples", 4, "--seed", 5
    )
    r = bke.BankRegressor(**SMALL, random_state=5).fit(x, y)
    mean, std = r.predict(x, return_std=True)
    np.testing.assert_allclose(mean, pred["mean"], rtol=1e-10)
    np.testing.assert_allclose(std**2, pred["variance"], rtol=1e-10)
    assert r.acceptance_rate_ == pytest.approx(summary["acceptance_rate"], rel=1e-12)
    # the CLI's model file in Python, and Python's model file in the CLI
    loaded = bke.BankRegressor.load(cli_model)
    np.testing.assert_allclose(loaded.predict(x), pred["mean"], rtol=1e-12)
    assert loaded.frequencies == 12 and loaded.random_state == 5
    r.save(tmp_path / "py.json")
    again = cli("bank", "predict", "--model", tmp_path / "py.json", "--data", data)
    np.testing.assert_allclose(again["mean"], pred["mean"], rtol=1e-12)
    with pytest.raises(ValueError, match="'bank-regression' model, but"):
        bke.KernelStudentT.load(cli_model)


def test_classifier_equals_cli_with_any_two_labels(cancer, cli, tmp_path):
    x, y = cancer
    _, _, pred, _ = cli_fit_predict(
        cli, tmp_path, x, y, "classification", "--frequencies", 12, "--iterations", 16, "--samples", 4, "--seed", 2
    )
    labels = np.where(y == 1, "yes", "no")
    c = bke.BankClassifier(**SMALL, random_state=2).fit(x, labels)
    p = c.predict_proba(x)
    np.testing.assert_allclose(p[:, 1], pred["probability"], rtol=1e-10)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    assert list(c.classes_) == ["no", "yes"]
    assert set(c.predict(x)) <= {"no", "yes"}
    assert c.score(x, labels) > 0.8
    with pytest.raises(ValueError, match="Only binary classification is supported: BankClassifier needs y with exactly 2 classes; got 3 class"):
        bke.BankClassifier(**SMALL).fit(x, np.arange(len(y)) % 3)


def test_relevance_equals_cli_and_is_reported(cancer, cli, tmp_path):
    x, y = cancer
    summary, _, pred, _ = cli_fit_predict(
        cli, tmp_path, x, y, "classification", "--frequencies", 12, "--iterations", 16, "--samples", 4,
        "--relevance", "ard",
    )
    c = bke.BankClassifier(**SMALL, relevance="ard").fit(x, y)
    np.testing.assert_allclose(c.predict_proba(x)[:, 1], pred["probability"], rtol=1e-10)
    r = c.summary()["relevance"]
    assert r == summary["relevance"] and r["used"] and len(r["lengthscales"]) == x.shape[1]
    assert bke.BankClassifier().get_params()["relevance"] == "auto"
    assert "relevance" not in bke.BankClassifier(**SMALL, relevance="off").fit(x, y).summary()
    with pytest.raises(ValueError, match="relevance 'fast'.*'auto', 'ard' or 'off'"):
        bke.BankClassifier(**SMALL, relevance="fast").fit(x, y)


@pytest.mark.parametrize("cls, kind", [(bke.RKSRegressor, "rks"), (bke.MKLRegressor, "mkl")])
def test_baselines_equal_closed_form_ridge(cls, kind, diabetes, tmp_path):
    # oracle: the closed-form ridge on the model's own features (the evidence-chosen precision)
    x, y = diabetes
    m = cls(frequencies=20, random_state=3).fit(x, y)
    xs = (x - x.mean(0)) / x.std(0)
    w = m.frequencies_
    proj = xs @ w.T
    phi = np.hstack([np.cos(proj), np.sin(proj)]) / np.sqrt(w.shape[0])
    ys = (y - y.mean()) / y.std()
    beta = np.linalg.solve(phi.T @ phi + m.chosen_prior_ * np.eye(phi.shape[1]), phi.T @ ys)
    np.testing.assert_allclose(m.predict(x), phi @ beta * y.std() + y.mean(), rtol=1e-8)
    m.save(tmp_path / "b.json")
    np.testing.assert_array_equal(cls.load(tmp_path / "b.json").predict(x), m.predict(x))
    assert m.score(x, y) > 0.3


def test_rks_classifier_probabilities(cancer):
    x, y = cancer
    c = bke.RKSClassifier(frequencies=20).fit(x, y)
    p = c.predict_proba(x)
    assert p.shape == (len(y), 2) and np.all((p >= 0) & (p <= 1))
    assert c.score(x, y) > 0.8


def test_pickle_clone_and_n_jobs_invariance(diabetes):
    x, y = diabetes
    fits = [bke.BankRegressor(**SMALL, n_jobs=j).fit(x, y) for j in (1, 2)]
    np.testing.assert_array_equal(fits[0].predict(x), fits[1].predict(x))
    r = pickle.loads(pickle.dumps(fits[0]))
    np.testing.assert_array_equal(r.predict(x), fits[0].predict(x))
    assert r.get_params() == fits[0].get_params()


def test_bad_input_raises_with_clear_messages(diabetes):
    x, y = diabetes
    with pytest.raises(ValueError, match="different numbers of samples: 150 and 149"):
        bke.BankRegressor(**SMALL).fit(x, y[:-1])
    with pytest.raises(ValueError, match="2-D array"):
        bke.BankRegressor(**SMALL).fit(x[:, 0], y)
    bad = y.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="non-finite value nan at index 3"):
        bke.BankRegressor(**SMALL).fit(x, bad)
    with pytest.raises(ValueError, match="frequencies"):
        bke.BankRegressor(frequencies=0).fit(x, y)
    r = bke.BankRegressor(**SMALL).fit(x, y)
    with pytest.raises(ValueError, match="X has 3 features, but BankRegressor is expecting 10"):
        r.predict(x[:, :3])
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        bke.BankRegressor().predict(x)


def test_baseline_kind_is_checked_on_load(diabetes, tmp_path):
    x, y = diabetes
    bke.RKSRegressor(frequencies=6).fit(x, y).save(tmp_path / "rks.json")
    assert bke.RKSRegressor.load(tmp_path / "rks.json").frequencies == 6
    with pytest.raises(ValueError, match="this is a RKS model, but MKLRegressor is MKL"):
        bke.MKLRegressor.load(tmp_path / "rks.json")
    with pytest.raises(ValueError, match="'baseline-regression' model, but RKSClassifier reads"):
        bke.RKSClassifier.load(tmp_path / "rks.json")
