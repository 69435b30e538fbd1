"""NumPy `.npy` files written and read by the `bke` command: `numpy.load` reads what bke writes
(the same numbers as the CSV it writes beside them), and `numpy.save` output reads as the CSV does.
Needs only numpy and the CLI (not the compiled package)."""

import csv

import numpy as np

from conftest import load, write_csv


def read_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], np.array(rows[1:], dtype=np.float64)


def test_draws_out_npy_loads_in_numpy_and_equals_the_csv(cli, tmp_path):
    x = write_csv(tmp_path / "x.csv", load("ozone", ["temp"]), names=["temp"])
    args = ["embed", "sample", "--data", x, "--num-landmarks", 5, "--tau2", 1, "--chains", 2,
            "--draws", 40, "--warmup", 40, "--seed", 7]
    as_csv = cli(*args, "--draws-out", tmp_path / "d.csv")
    as_npy = cli(*args, "--draws-out", tmp_path / "d.npy")
    assert as_npy["lengthscale"] == as_csv["lengthscale"]
    header, table = read_csv(tmp_path / "d.csv")
    a = np.load(tmp_path / "d.npy", allow_pickle=False)
    assert a.dtype == np.dtype("<f8") and a.flags.c_contiguous
    assert a.shape == (80, len(header)) == table.shape
    assert as_npy["draws_columns"] == header
    np.testing.assert_array_equal(a, table)  # bit for bit: the CSV prints round-trip decimals
    assert a[:, header.index("chain")].tolist() == [0.0] * 40 + [1.0] * 40


def test_npy_input_gives_the_csv_result(cli, tmp_path):
    data = load("ozone", ["temp", "O3"])
    x, z = data[:250], data[250:270]
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "xf.npy", np.asfortranarray(x))
    pz = write_csv(tmp_path / "z.csv", z, names=["0", "1"])
    px = write_csv(tmp_path / "x.csv", x, names=["0", "1"])
    flags = ["--landmarks", pz, "--lengthscale", "4", "--tau2", "0.5"]
    want = cli("embed", "loglik", "--data", px, *flags)
    for f in ["x.npy", "xf.npy"]:
        assert cli("embed", "loglik", "--data", tmp_path / f, *flags) == want
