"""Every ops.yaml overload has an oracle case that PyTorch executes without an exception,
unless it is listed in ``UNCOVERED`` with the reason."""

import collections
import sys
import pathlib

sys.path.insert(0, str(pathlib.Path(__file__).parent))

from oracle.cases import NOT_RUN, RANDOM, all_cases  # noqa: E402
from oracle.fixture import expected_outcome  # noqa: E402
from oracle.schema import yaml_overloads  # noqa: E402

UNCOVERED = {(name, "default"): reason for name, reason in NOT_RUN.items()}

# Random operators: switchyard.ops.aten has no manual_seed yet, so their cases use arguments
# whose results do not depend on the generator (p of 0 or 1, std=0, empty sizes, a one-value
# randint range, dropout in eval mode). Documented here; they count as covered.
GENERATOR_INDEPENDENT_ONLY = sorted(RANDOM)


def _executed():
    cases, _ = all_cases()
    ok = collections.Counter()
    for case in cases:
        if "raises" not in expected_outcome(case):
            ok[(case["op"], case["overload"])] += 1
    return ok


def test_every_overload_has_an_executed_case():
    ok = _executed()
    missing = [k for k in yaml_overloads() if not ok[k] and k not in UNCOVERED]
    assert not missing, f"overloads without a case PyTorch executes: {missing}"


def test_uncovered_entries_are_current():
    ok = _executed()
    overloads = set(yaml_overloads())
    stale = [k for k in UNCOVERED if k not in overloads or ok[k]]
    assert not stale, f"UNCOVERED entries that are covered or not in ops.yaml: {stale}"
    assert all(UNCOVERED.values())


def test_random_operators_exist():
    names = {name for name, _ in yaml_overloads()}
    assert set(GENERATOR_INDEPENDENT_ONLY) <= names


def test_case_source_lists_every_overload_of_each_packet():
    """The overload list the cases come from (generated/overloads.rs) is what the packets of
    ``switchyard.ops.aten`` hold, in the same order."""
    import switchyard

    by_name = collections.defaultdict(list)
    for name, overload in yaml_overloads():
        by_name[name].append(overload)
    for name, overloads in by_name.items():
        assert getattr(switchyard.ops.aten, name).overloads() == overloads, name
