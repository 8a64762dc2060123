"""`odradek quotas describe|alter`: client quotas per user, client id or IP (kafka-configs' quota part).

APIs used: DescribeClientQuotas and AlterClientQuotas, sent with odradek's own codec (cli/wire.py):
librdkafka (confluent-kafka 2.x) has no client quota admin calls. So, as wire.py says, over a
PLAINTEXT listener only.
"""

from __future__ import annotations

import argparse
from typing import Any

from odradek.cli.arguments import add_connection_arguments
from odradek.cli.client import client_config
from odradek.cli.errors import USAGE, CliError, command
from odradek.cli.output import table
from odradek.cli.wire import call
from odradek.protocol.error_codes import ErrorCode
from odradek.protocol.messages.alter_client_quotas import (
    AlterClientQuotasRequest,
    EntityData,
    EntryData,
    OpData,
)
from odradek.protocol.messages.describe_client_quotas import ComponentData, DescribeClientQuotasRequest

EXAMPLES = """examples:
  odradek quotas alter --user alice --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
  odradek quotas alter --user-defaults --add-config request_percentage=50
  odradek quotas alter --user alice --client app-1 --add-config producer_byte_rate=102400
  odradek quotas alter --client-defaults --add-config consumer_byte_rate=10485760
  odradek quotas alter --user alice --delete-config producer_byte_rate
  odradek quotas alter --ip 192.0.2.7 --add-config connection_creation_rate=10
  odradek quotas alter --ip-defaults --add-config connection_creation_rate=100
  odradek quotas describe                      # every quota
  odradek quotas describe --user alice         # only the quotas of the entity user=alice
"""
_WHAT = "client quotas are sent without librdkafka (which has no client quota admin calls)"
MATCH_EXACT, MATCH_DEFAULT = 0, 1
DEFAULT_SHOWN = "<default>"


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "quotas",
        help="describe and alter client quotas (byte rates, request percentages)",
        description=(
            "Describe and alter client quotas of users, client ids and (user, client id) pairs, and "
            "their defaults, as kafka-configs --entity-type users/clients does."
        ),
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    describe = actions.add_parser(
        "describe",
        help="list quotas",
        description="List client quotas: all of them, or only those of the entity named.",
    )
    _entity_arguments(describe)
    add_connection_arguments(describe)
    describe.set_defaults(run=run_describe)

    alter = actions.add_parser(
        "alter", help="set or remove quotas of one entity", description="Set or remove an entity's quotas."
    )
    _entity_arguments(alter)
    alter.add_argument(
        "--add-config",
        metavar="KEY=VALUE,...",
        help="quotas to set: producer_byte_rate, consumer_byte_rate (bytes/s), request_percentage; "
        "for an ip, connection_creation_rate (connections/s)",
    )
    alter.add_argument("--delete-config", metavar="KEY,...", help="quotas to remove")
    add_connection_arguments(alter)
    alter.set_defaults(run=run_alter)


def _entity_arguments(parser: argparse.ArgumentParser) -> None:
    user = parser.add_mutually_exclusive_group()
    user.add_argument("--user", metavar="PRINCIPAL", help="a user (the principal's name, e.g. alice)")
    user.add_argument("--user-defaults", action="store_true", help="the default of all users")
    client = parser.add_mutually_exclusive_group()
    client.add_argument("--client", "--client-id", dest="client", metavar="ID", help="a client id")
    client.add_argument("--client-defaults", action="store_true", help="the default of all client ids")
    ip = parser.add_mutually_exclusive_group()
    ip.add_argument("--ip", metavar="ADDRESS", help="a client address (connection_creation_rate only)")
    ip.add_argument("--ip-defaults", action="store_true", help="the default of all client addresses")


def _entity(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    parts: list[tuple[str, str | None]] = []
    if args.user is not None or args.user_defaults:
        parts.append(("user", args.user))
    if args.client is not None or args.client_defaults:
        parts.append(("client-id", args.client))
    if args.ip is not None or args.ip_defaults:
        if parts:
            raise CliError("--ip and --ip-defaults go alone, not with a user or client id", USAGE)
        parts.append(("ip", args.ip))
    return parts


@command("quotas describe")
def run_describe(args: argparse.Namespace) -> int:
    entity = _entity(args)
    request = DescribeClientQuotasRequest(
        components=[
            ComponentData(
                entity_type=kind, match_type=MATCH_DEFAULT if name is None else MATCH_EXACT, match=name
            )
            for kind, name in entity
        ],
        strict=bool(entity),  # as kafka-configs: a named entity is that entity only
    )
    response: Any = call(client_config(args), args.request_timeout, request, _WHAT)
    _check(response.error_code, response.error_message, "DescribeClientQuotas")
    rows: list[tuple[str, str, str]] = []
    for entry in response.entries or []:
        shown = _shown([(e.entity_type, e.entity_name) for e in entry.entity])
        rows += [(shown, value.key, _number(value.value)) for value in entry.values]
    rows.sort()
    if rows:
        print(table(("ENTITY", "QUOTA", "VALUE"), rows))
    return 0


@command("quotas alter")
def run_alter(args: argparse.Namespace) -> int:
    entity = _entity(args)
    if not entity:
        raise CliError(
            "name the entity: --user/--user-defaults and/or --client/--client-defaults, "
            "or --ip/--ip-defaults",
            USAGE,
        )
    added = _key_values(args.add_config)
    deleted = [key.strip() for key in (args.delete_config or "").split(",") if key.strip()]
    if not added and not deleted:
        raise CliError("nothing to do: give --add-config and/or --delete-config", USAGE)
    ops = [OpData(key=key, value=value, remove=False) for key, value in added.items()]
    ops += [OpData(key=key, value=0.0, remove=True) for key in deleted]
    request = AlterClientQuotasRequest(
        entries=[EntryData(entity=[EntityData(entity_type=t, entity_name=n) for t, n in entity], ops=ops)],
        validate_only=False,
    )
    response: Any = call(client_config(args), args.request_timeout, request, _WHAT)
    for result in response.entries:
        _check(result.error_code, result.error_message, "AlterClientQuotas")
    shown = _shown(entity)
    changes = [f"{key}={_number(value)}" for key, value in added.items()] + [
        f"{key} removed" for key in deleted
    ]
    print(f"quotas of {shown}: {', '.join(changes)}")
    return 0


def _key_values(text: str | None) -> dict[str, float]:
    values: dict[str, float] = {}
    for item in (text or "").split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            values[key.strip()] = float(value)
        except ValueError:
            raise CliError(f"--add-config wants KEY=NUMBER pairs, not {item.strip()!r}", USAGE) from None
    return values


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def _shown(entity: list[tuple[str, str | None]]) -> str:
    """`user=alice,client-id=<default>`, as kafka-configs names entities."""
    return ",".join(f"{kind}={DEFAULT_SHOWN if name is None else name}" for kind, name in entity)


def _check(code: int, message: str | None, api: str) -> None:
    if code:
        error = ErrorCode.for_code(code)
        raise CliError(
            f"{api} failed: {message or error.message.rstrip('.')} ({error.name})", kafka_code=code
        )
