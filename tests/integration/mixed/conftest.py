"""The mixed clusters' ZooKeeper: one server for the session; each cluster takes a chroot of its own."""

from __future__ import annotations

from tests.support.zookeeper import zookeeper_server

__all__ = ["zookeeper_server"]  # the fixture, re-exported for the tests here
