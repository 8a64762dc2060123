"""Fixtures shared by the partition unit tests: the cluster tests' log manager."""

from tests.unit.cluster.conftest import logs

__all__ = ["logs"]
