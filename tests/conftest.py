"""Suite-wide hooks. The skip policy (``tests/skip_policy.py``) fails a session in which a test
skipped because a file is missing, so the skip count is the same in any clone of the repository."""

from tests.skip_policy import pytest_make_collect_report, pytest_runtest_makereport, pytest_sessionfinish

__all__ = ["pytest_make_collect_report", "pytest_runtest_makereport", "pytest_sessionfinish"]
