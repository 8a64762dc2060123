"""kafka-delegation-tokens: create, describe, renew and expire a token as a SCRAM user over the
targets' SASL_PLAINTEXT listeners, and the refusal over PLAINTEXT.

A token's id, HMAC and dates are new on every run: the transcript shows placeholders for them. In a
cluster, the broker that changes a token writes it to ZooKeeper and the others learn of it from a
change notification a moment later (in Kafka as in odradek), while the tool asks whichever broker it
likes: after each change the scenario waits until every broker describes the same tokens."""

from __future__ import annotations

import re

from odradek.protocol.messages.describe_delegation_token import DescribeDelegationTokenRequest
from tests.support.delegation_tokens import scram_login
from tests.support.raw_client import RawClient
from tests.support.tool_scenarios.session import Session, StepFailed, scenario, wait_for

B = "--bootstrap-server"
OWNER, PASSWORD = "tools-token-owner", "tools-token-password"
#: SimpleDateFormat("yyyy-MM-dd'T'HH:mm"), the tool's dates.
_DATE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d")
_TOKEN_ID = re.compile(r"Created delegation token with tokenId : (\S+)")
_CREATE = ("--create", "--max-life-time-period", "-1", "--renewer-principal", "User:tools-renewer")


@scenario()
def delegation_tokens(session: Session) -> None:
    session.quiet(
        "kafka-configs", B, "{bootstrap}", "--alter", "--entity-type", "users", "--entity-name", OWNER,
        "--add-config", f"SCRAM-SHA-512=[iterations=4096,password={PASSWORD}]",
    )  # fmt: skip
    wait_for(lambda: _owner_logs_in_everywhere(session), 30, f"{OWNER} logging in on every broker")
    # run quietly, then recorded once the normaliser knows the new token's id and HMAC
    created = session.quiet("kafka-delegation-tokens", *_owner_args(session), *_CREATE)
    hmac = _learn_token(session, created.stdout)
    session.transcript.append(
        "\n".join(
            [
                "$ kafka-delegation-tokens "
                + session.normaliser(" ".join(_owner_args(session))).replace(
                    "{sasl_bootstrap}", "<sasl-bootstrap>"
                )
                + " "
                + " ".join(_CREATE),
                *session.normaliser(_shown(created.stdout)).splitlines(),
            ]
        )
    )
    wait_agreed(session)
    # without --owner-principal the tool asks for an empty list of owners: no token (Kafka's answer too)
    tokens(session, "--describe")
    tokens(session, "--describe", "--owner-principal", f"User:{OWNER}")
    tokens(session, "--describe", "--owner-principal", "User:tools-nobody")
    tokens(session, "--renew", "--hmac", hmac, "--renew-time-period", "3600000")
    wait_agreed(session)
    tokens(session, "--expire", "--hmac", hmac, "--expiry-time-period", "-1")
    wait_agreed(session)
    tokens(session, "--describe", "--owner-principal", f"User:{OWNER}")
    tokens(session, "--renew", "--hmac", hmac, "--renew-time-period", "3600000")
    # over PLAINTEXT (User:ANONYMOUS, not authenticated): refused
    plain = session.file("plaintext.properties", "security.protocol=PLAINTEXT\n")
    session.run("kafka-delegation-tokens", B, "{bootstrap}", "--command-config", plain, "--describe")


def tokens(session: Session, *args: str) -> None:
    session.run("kafka-delegation-tokens", *_owner_args(session), *args, shown=_shown)


def wait_agreed(session: Session) -> None:
    if session.cluster:
        wait_for(lambda: _agreed(session), 30, "every broker to describe the same tokens")


# ----- helpers ---------------------------------------------------------------------------------------


def _owner_args(session: Session) -> list[str]:
    config = session.file(
        "token-owner.properties",
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{OWNER}" password="{PASSWORD}";\n',
    )
    return [B, "{sasl_bootstrap}", "--command-config", config]


def _shown(text: str) -> str:
    return _DATE.sub("<date>", text)


def _learn_token(session: Session, output: str) -> str:
    """The HMAC of the token a --create printed; its id and HMAC are placeholders from now on."""
    found = _TOKEN_ID.search(output)
    if found is None:
        raise StepFailed(f"kafka-delegation-tokens --create printed no token id:\n{output}")
    token_id = found[1]
    row = next((line.split() for line in output.splitlines() if line.startswith(token_id + " ")), None)
    if row is None:
        raise StepFailed(f"kafka-delegation-tokens --create printed no row for {token_id}:\n{output}")
    session.normaliser.replacements[:0] = [(row[1], "<hmac>"), (token_id, "<token-id>")]
    return row[1]


def _described(session: Session, node: int) -> frozenset[tuple[str, int]] | None:
    """(token id, expiry) of every token broker `node` describes to the owner (None: no answer now)."""
    host, port = session.target.sasl_addresses[node]
    try:
        with RawClient(port, timeout=5, host=host) as client:
            if scram_login(client, "SCRAM-SHA-512", OWNER, PASSWORD).error_code != 0:
                return None
            response = client.request(DescribeDelegationTokenRequest(owners=None), 3)
    except OSError:
        return None
    if response.error_code != 0:
        return None
    return frozenset((t.token_id, t.expiry_timestamp) for t in response.tokens)


def _agreed(session: Session) -> bool:
    answers = {_described(session, node) for node in session.target.sasl_addresses}
    return None not in answers and len(answers) == 1


def _owner_logs_in_everywhere(session: Session) -> bool:
    for host, port in session.target.sasl_addresses.values():
        try:
            with RawClient(port, timeout=5, host=host) as client:
                if scram_login(client, "SCRAM-SHA-512", OWNER, PASSWORD).error_code != 0:
                    return False
        except OSError:
            return False
    return True
