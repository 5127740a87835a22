"""The indexing catalogue (`indexing_cases.py`) gives PyTorch's outcomes: live when torch is
importable, else those recorded in `fixtures/indexing_torch.json` (see `oracle.py`)."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))

import switchyard  # noqa: E402

import expressions as oracle  # noqa: E402
import indexing_cases as catalogue  # noqa: E402

FIXTURE = oracle.load("indexing")
CASES = [c if isinstance(c, tuple) else (c, ()) for c in catalogue.CASES]
KNOWN = getattr(catalogue, "KNOWN", {})


@pytest.mark.parametrize(("case", "watch"), CASES, ids=[c for c, _ in CASES])
def test_same_outcome_as_torch(case, watch):
    expected = oracle.expected(FIXTURE, case, watch)
    got = oracle.run(switchyard, case, watch)
    if case in KNOWN:
        assert not oracle.same(got, expected), f"fixed? remove it from KNOWN ({KNOWN[case]})"
    else:
        assert oracle.same(got, expected), f"\nswitchyard: {got}\ntorch:      {expected}"


# Checks computed by hand.


def test_basic_indexing_views_share_storage_and_version():
    x = switchyard.tensor([[1, 2, 3], [4, 5, 6]])
    v = x[1, ::2]
    assert v.tolist() == [4, 6] and v.stride() == (2,)
    v[0] = 40
    assert x.tolist() == [[1, 2, 3], [40, 5, 6]]
    # One version counter for a base and its views, bumped once per write.
    assert x._version == v._version == 1
    x[0] = 0
    assert v._version == 2 and v.tolist() == [40, 6]


def test_advanced_indexing_copies():
    x = switchyard.tensor([[1, 2, 3], [4, 5, 6]])
    c = x[[1, 0]]
    c[0, 0] = 100
    assert x.tolist() == [[1, 2, 3], [4, 5, 6]]
    assert c.tolist() == [[100, 5, 6], [1, 2, 3]]


def test_index_put_through_a_mask_bumps_the_version_once():
    x = switchyard.tensor([1.0, -2.0, 3.0, -4.0])
    x[x < 0] = 0
    assert x.tolist() == [1.0, 0.0, 3.0, 0.0] and x._version == 1


def test_deleting_items_is_refused():
    x = switchyard.tensor([1, 2])
    with pytest.raises(TypeError, match="Tensor does not support deleting items"):
        del x[0]
