"""One source of defaults: every keyword default of the Python API that the library also has
equals the library's (``bke._bke.defaults()``, built from each model's ``…Params::default()``)."""

import inspect

import pytest

import bke
import bke.dask
import bke.dme
from bke import _bke

DEFAULTS = _bke.defaults()

# (callable, sections of ``_bke.defaults()`` its keywords take their defaults from)
SIGNATURES = [
    (bke.mmd_test, ("mmd", "selection")),
    (bke.hsic_test, ("hsic", "selection")),
    (bke.MMD.__init__, ("mmd", "selection")),
    (bke.Hsic.__init__, ("hsic", "selection")),
    (bke.dask.mmd_test, ("mmd", "selection")),
    (bke.KernelEmbedding.__init__, ("embedding",)),
    (bke.KernelEmbedding.sample, ("sample",)),
    (bke.BankRegressor.__init__, ("bank",)),
    (bke.BankClassifier.__init__, ("bank",)),
    (bke.RKSRegressor.__init__, ("baseline",)),
    (bke.MKLClassifier.__init__, ("baseline",)),
    (bke.KernelStudentT.__init__, ("density",)),
    (bke.GaussianKDE.__init__, ()),
    (bke.dme.TTGP.__init__, ("ttgp",)),
    (bke.dme.lfi, ("lfi",)),
    (bke.pc, ("pc",)),
    (bke.ci_test, ("pc",)),
]


def _library_default(name, sections):
    if name == "backend":
        return DEFAULTS["backend"]
    key = "seed" if name == "random_state" else name
    for section in sections:
        if key in DEFAULTS[section]:
            return DEFAULTS[section][key]
    return inspect.Parameter.empty


@pytest.mark.parametrize("fn, sections", SIGNATURES, ids=lambda v: getattr(v, "__qualname__", str(v)))
def test_signature_defaults_are_the_library_defaults(fn, sections):
    checked = 0
    for name, p in inspect.signature(fn).parameters.items():
        want = _library_default(name, sections)
        if want is inspect.Parameter.empty or p.default in (inspect.Parameter.empty, None):
            continue
        got = list(p.default) if isinstance(p.default, tuple) else p.default
        assert got == want, f"{fn.__qualname__}({name}=...): {got!r} != library default {want!r}"
        assert type(got) is type(want), f"{fn.__qualname__}({name}=...): {type(got)} vs {type(want)}"
        checked += 1
    assert checked > 0


def test_every_section_default_is_used_by_some_signature():
    used = set()
    for fn, sections in SIGNATURES:
        for name in inspect.signature(fn).parameters:
            key = "seed" if name == "random_state" else name
            used.update((s, key) for s in sections if key in DEFAULTS[s])
    unused = {(s, k) for s, d in DEFAULTS.items() if isinstance(d, dict) for k in d} - used
    assert not unused, f"defaults no signature shows: {sorted(unused)}"


def test_library_defaults_are_the_documented_ones():
    # The values users rely on (a change of a library default shows here, deliberately).
    assert DEFAULTS["backend"] == "faer"
    assert DEFAULTS["mmd"]["permutations"] == 1000 and DEFAULTS["mmd"]["alpha"] == 0.05
    assert DEFAULTS["selection"]["bkl_landmarks"] == 100 and DEFAULTS["selection"]["select"] == "bkl-bayes"
