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


def test_one_dimensional_data_is_refused_with_a_hint():
    with pytest.raises(ValueError, match="reshape"):
        bke.pc(np.arange(10.0))
