"""``bke.pc``: the PC algorithm of ``bke causal pc`` from Python."""

import numpy as np
import pytest

import bke
from conftest import write_csv


def collider(n=300, seed=0):
    """``x`` and ``y`` independent, ``z = tanh 1.5x + y + e``: the CPDAG is ``x → z ← y``."""
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-2, 2, n), rng.uniform(-2, 2, n)
    z = np.tanh(1.5 * x) + y + 0.3 * rng.standard_normal(n)
    return np.column_stack([x, y, z])


def test_pc_finds_a_nonlinear_collider():
    result = bke.pc(collider(), names=["x", "y", "z"])
    edges = {(e["from"], e["to"], e["directed"]) for e in result.edges}
    assert edges == {("x", "z", True), ("y", "z", True)}, result
    assert result.ci_test == "kci" and result.orientation == "majority" and result.selection == "median"
    assert any(t["x"] in "xy" and t["y"] in "xy" and t["given"] == [] and t["p_value"] > 0.05 for t in result.tests)
    np.testing.assert_array_equal(result.adjacency(), [[0, 0, 1], [0, 0, 1], [0, 0, 0]])
    assert "x → z" in repr(result)


@pytest.mark.parametrize(
    "kw",
    [
        {"kci_z": "median", "orientation": "standard"},
        {"ci": "rcit", "max_condition": 1},
        {"ci": "gp-hsic", "permutations": 200, "seed": 3},
    ],
    ids=["kci", "rcit", "gp-hsic"],
)
def test_pc_is_the_cli(cli, tmp_path, kw):
    data = collider(n=150, seed=1)
    names = ["a", "b", "c"]
    path = write_csv(tmp_path / "d.csv", data, names)
    flags = [a for k, v in kw.items() for a in (f"--{k.replace('_', '-')}", v)]
    theirs = cli("causal", "pc", "--data", path, *flags)
    ours = bke.pc(data, names=names, **kw).to_dict()
    for field in ("data", "time", "backend", "svg"):
        theirs.pop(field, None)
    assert ours == theirs


def test_undirected_edges_fill_both_entries_of_the_adjacency():
    rng = np.random.default_rng(2)
    x = rng.uniform(-2, 2, 200)
    chain = np.column_stack([x, np.tanh(x) + 0.3 * rng.standard_normal(200)])
    result = bke.pc(chain, kci_z="median")
    assert result.nodes == ["x0", "x1"] and result.edges == [{"from": "x0", "to": "x1", "directed": False}]
    np.testing.assert_array_equal(result.adjacency(), [[0, 1], [1, 0]])


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"names": ["a", "b"]}, "variable names"),
        ({"ci": "fisher-z"}, "auto, kci, rcit or gp-hsic"),
        ({"kci_z": "gp"}, "learned or median"),
        ({"orientation": "vote"}, "standard, conservative, majority or max-p"),
        ({"time": np.arange(5.0)}, "time"),
        ({"names": "xyz"}, "sequence of names"),
        ({"permutations": -1}, "non-negative integer"),
    ],
)
def test_bad_settings_raise_value_error_with_the_library_message(kw, message):
    with pytest.raises(ValueError, match=message):
        bke.pc(collider(n=60), **kw)


def test_a_binary_treatment_takes_part_and_a_constant_column_is_refused():
    rng = np.random.default_rng(4)
    t = (rng.uniform(size=300) < 0.4).astype(float)
    x = t + rng.standard_normal(300)
    y = np.sin(x) + 0.3 * rng.standard_normal(300)
    result = bke.pc(np.column_stack([t, x, y]), names=["t", "x", "y"])
    np.testing.assert_array_equal(result.adjacency(), [[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    with pytest.raises(ValueError, match="variable 'c'.*constant"):
        bke.pc(np.column_stack([t, x, np.ones(300)]), names=["t", "x", "c"])


def test_one_dimensional_data_is_refused_with_a_hint():
    with pytest.raises(ValueError, match="reshape"):
        bke.pc(np.arange(10.0))


def test_ci_test_is_the_test_pc_runs():
    data = collider(n=200, seed=4)
    result = bke.pc(data, names=["x", "y", "z"])
    in_pc = next(t for t in result.tests if (t["x"], t["y"], t["given"]) == ("x", "y", ["z"]))
    alone = bke.ci_test(data[:, 0], data[:, 1], data[:, 2])
    assert alone.p_value == in_pc["p_value"] and alone.test == "kci" and alone.conditioning == 1
    assert alone.reject == (alone.p_value <= 0.05)
    marginal = bke.ci_test(data[:, 0], data[:, 1])
    assert marginal.conditioning == 0 and not marginal.reject, marginal
    assert "x ⫫ y | z" in repr(alone)


def test_ci_test_detects_dependence_given_z():
    rng = np.random.default_rng(5)
    z = rng.standard_normal(150)
    x = np.sin(z) + rng.uniform(-0.5, 0.5, 150)
    y = np.cos(z) + np.tanh(2 * x) + rng.uniform(-0.5, 0.5, 150)
    for ci in ("kci", "rcit"):
        r = bke.ci_test(x, y, z.reshape(-1, 1), ci=ci)
        assert r.reject and r.p_value < 1e-3 and r.test == ci, r


@pytest.mark.parametrize(
    "args, kw, message",
    [
        ((np.ones((20, 2)), np.ones(20)), {}, "one variable"),
        ((np.ones(20), np.ones(19)), {}, "one row per observation"),
        ((np.arange(20.0), np.arange(20.0) ** 2), {"alpha": 2.0}, "alpha"),
        ((np.arange(20.0), np.arange(20.0) ** 2), {"ci": "fisher-z"}, "auto, kci, rcit or gp-hsic"),
    ],
)
def test_ci_test_bad_input_raises_value_error(args, kw, message):
    with pytest.raises(ValueError, match=message):
        bke.ci_test(*args, **kw)
