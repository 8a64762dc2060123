"""At --log-level DEBUG, kazoo logs every request it sends to ZooKeeper: the lines name each request's
kind and path, never the data written (a user's SCRAM salt and keys, dynamic broker configs) nor the
credentials of an `Auth`. Issue #25, "What the authorizer should hide"."""

from __future__ import annotations

import logging

import pytest
from kazoo.protocol.serialization import Auth, Create, SetData

from odradek.cluster.zookeeper.session import ZooKeeperSecurity, secured_kazoo

CREDENTIAL = "salt=c2FsdA==,stored_key=U1RPUkVES0VZ,server_key=U0VSVkVSS0VZ,iterations=4096"


def test_requests_sent_to_zookeeper_are_logged_without_their_data(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: "Sending request(xid=7): Create(path='/config/users/alice', data=b'{...stored_key=...}',
    ...)" and "Auth(auth_type=0, scheme='digest', auth='kafka:password')"."""
    caplog.set_level(logging.DEBUG)
    client = secured_kazoo("127.0.0.1:1", ZooKeeperSecurity())
    connection = client._connection
    monkeypatch.setattr(connection, "_write", lambda message, timeout: None)  # no socket: the line only
    data = ('{"version":1,"config":{"SCRAM-SHA-256":"' + CREDENTIAL + '"}}').encode()
    connection._submit(Create("/config/users/alice", data, [], 0), 1.0, 7)
    connection._submit(SetData("/config/users/alice", data, 3), 1.0, 8)
    connection._submit(Auth(0, "digest", "kafka:zk-password"), 1.0, -4)
    sent = [r.getMessage() for r in caplog.records if "Sending request" in r.getMessage()]
    assert len(sent) == 3, sent
    assert not any("stored_key" in line or "zk-password" in line for line in sent), sent
    assert "Create(path='/config/users/alice')" in sent[0]
