"""Suite-wide settings: a time guard (docs/python-plan.md §10.3), so that a slow suite fails
instead of slowly creeping up the CI time. ``SWITCHYARD_TEST_TIME_LIMIT`` (seconds) overrides
the limit; 0 disables it."""

import os
import time

LIMIT = float(os.environ.get("SWITCHYARD_TEST_TIME_LIMIT", "150"))
_start = time.monotonic()


def pytest_sessionfinish(session, exitstatus):
    elapsed = time.monotonic() - _start
    if LIMIT and elapsed > LIMIT and exitstatus == 0:
        session.config.pluginmanager.get_plugin("terminalreporter").write_line(
            f"the Python suite took {elapsed:.0f} s, over its {LIMIT:.0f} s limit "
            "(SWITCHYARD_TEST_TIME_LIMIT)", red=True)
        session.exitstatus = 1
