"""Every ops.yaml overload called with generated arguments under switchyard and under PyTorch
(live, or recorded in ``fixtures/torch_oracle.json.gz``); outcomes compared (``oracle/``).

Differences listed in ``oracle/known_differences.py`` must still differ."""

import copy
import fnmatch
import sys
import pathlib

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import switchyard  # noqa: E402

from oracle.cases import all_cases, case_hash  # noqa: E402
from oracle.fixture import RERECORD, expected_outcome, recorded, torch_or_none  # noqa: E402
from oracle.known_differences import KNOWN  # noqa: E402
from oracle.outcome import differences, run  # noqa: E402

CASES, _ = all_cases()
CASES_BY_ID = {c["id"]: c for c in CASES}


def known_reason(case_id):
    for pattern, reason in KNOWN.items():
        if fnmatch.fnmatchcase(case_id, pattern):
            return reason
    return None


@pytest.mark.skipif(torch_or_none() is not None, reason="PyTorch runs live")
def test_fixture_is_current():
    data = recorded()
    assert data["torch_version"].startswith("2.15"), data["torch_version"]
    missing = [c["id"] for c in CASES if c["id"] not in data["outcomes"]]
    assert not missing, f"{len(missing)} cases not recorded ({missing[:5]}...): {RERECORD}"
    assert data["case_hash"] == case_hash(CASES), f"the cases changed: {RERECORD}"


def test_known_differences_name_cases():
    ids = [c["id"] for c in CASES]
    unused = [p for p in KNOWN if not any(fnmatch.fnmatchcase(i, p) for i in ids)]
    assert not unused, f"known_differences entries that match no case: {unused}"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_same_outcome_as_torch(case):
    expected = expected_outcome(case)
    got = run(switchyard, case)
    diffs = differences(expected, got)
    reason = known_reason(case["id"])
    if reason is not None:
        assert diffs, f"same outcome as PyTorch now: remove it from known_differences ({reason})"
    else:
        assert not diffs, "\n".join(diffs)


def _first(predicate):
    for c in CASES:
        e = expected_outcome(c)
        if predicate(c, e):
            return c, e
    raise AssertionError("no such case")


def test_comparison_sees_each_field():
    """The comparison is not vacuous: perturbing any recorded field is a difference."""
    case, exp = _first(lambda c, e: c["id"] == "add.Tensor/float32/t")
    res = exp["result"]
    assert res["stride"] == [1, 2], "PyTorch keeps the transposed layout"
    for key, value in [("dtype", "float64"), ("shape", [3, 2]), ("stride", [3, 1]),
                       ("offset", 1), ("alias", [0]), ("is", 0)]:
        other = copy.deepcopy(exp)
        other["result"][key] = value
        assert differences(exp, other), key
    other = copy.deepcopy(exp)
    other["result"]["values"][0][0] = res["values"][0][0] * (1 + 1e-4) + 1e-4
    assert differences(exp, other)
    other["result"]["values"][0][0] = res["values"][0][0] * (1 + 1e-7)
    assert not differences(exp, other), "within float32's tolerance"
    other = copy.deepcopy(exp)
    other["result"]["values"][0][0] = "nan"
    assert differences(exp, other)
    assert differences(exp, {"raises": "RuntimeError", "message": "x"})
    other = copy.deepcopy(exp)
    other["mutated"] = {"0": {"dtype": "float32", "values": res["values"]}}
    assert differences(exp, other)
    # Integral values compare exactly.
    case, exp = _first(lambda c, e: c["id"] == "add.Tensor/int64/contig")
    other = copy.deepcopy(exp)
    other["result"]["values"][0][0] += 1
    assert differences(exp, other)
    # Exceptions: type and message.
    case, exp = _first(lambda c, e: "raises" in e)
    assert differences(exp, {"raises": "ValueError", "message": exp["message"]})
    assert differences(exp, {"raises": exp["raises"], "message": exp["message"] + "."})


def test_outcome_records_aliasing_and_mutation():
    """``run`` sees views, identity and mutation under switchyard itself."""
    by_id = {c["id"]: c for c in CASES}
    view = run(switchyard, by_id["t.default/float32/contig"])["result"]
    assert view["alias"] == [0] and view["is"] is None and view["stride"] == [1, 3]
    inplace = run(switchyard, by_id["add_.Tensor/float32/contig"])
    assert inplace["result"]["is"] == 0 and set(inplace["mutated"]) == {"0"}
    fresh = run(switchyard, by_id["add.Tensor/float32/contig"])
    assert fresh["result"]["alias"] == [] and "mutated" not in fresh


def test_a_wrong_kernel_is_caught():
    """End to end: with aten::sin computing cos and aten::clone returning its input (Python
    kernels at CPU), the oracle reports their cases."""
    from switchyard.library import Library

    lib = Library("aten", "IMPL", "CPU")
    lib.impl("sin", lambda x: switchyard.ops.aten.cos.default(x))
    lib.impl("clone", lambda x, memory_format=None: x)
    try:
        caught = {c["id"]: differences(expected_outcome(c), run(switchyard, c))
                  for c in CASES if c["op"] in ("sin", "clone") and c["overload"] == "default"}
    finally:
        lib._destroy()
    assert any("values" in d for d in caught["sin.default/float32/contig"])
    assert any(".alias" in d for d in caught["clone.default/float32/contig"])
    # Restored once the library is destroyed.
    assert not differences(expected_outcome(CASES_BY_ID["sin.default/float32/contig"]),
                           run(switchyard, CASES_BY_ID["sin.default/float32/contig"]))
