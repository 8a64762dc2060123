"""A secured broker's log never shows a secret it was given, and says which ones its command line shows
(every user of the machine can read a process' arguments: ps, /proc/PID/cmdline)."""

from __future__ import annotations

from tests.support.security import PLAIN_USERS, SCRAM_USERS, SecureBroker


def test_secrets_given_with_override_are_named_in_a_warning_never_shown(secure_broker: SecureBroker) -> None:
    text = secure_broker.process.log_path.read_text(errors="replace")
    for password in (*PLAIN_USERS.values(), *SCRAM_USERS.values()):
        assert password not in text
    assert (
        "WARNING odradek.broker sasl.jaas.config given with --override is visible to every user of this "
        "machine (ps, /proc): put it in the --config file" in text
    )
