"""`odradek users add|list|remove`: SCRAM users (what kafka-configs --entity-type users does for SCRAM).

APIs used: AlterUserScramCredentials (add, remove) and DescribeUserScramCredentials (list, and remove
without --mechanism). The password never reaches the broker: the client sends a salted hash of it.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from odradek.cli.arguments import add_connection_arguments, positive_int
from odradek.cli.client import Admin
from odradek.cli.errors import CliError, command
from odradek.cli.output import table

EXAMPLES = """examples:
  odradek users add --user alice --password-file alice.pw
  odradek users add --user bob --mechanism SCRAM-SHA-512 --iterations 8192   # asks for the password
  odradek users list
  odradek users remove --user alice
  odradek users list --command-config admin.properties   # over SASL_SSL, as admin
"""
MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
RESOURCE_NOT_FOUND = 91


def add_parser(subcommands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subcommands.add_parser(
        "users",
        help="add, list and remove SCRAM users",
        description="Add, list and remove the SCRAM users SASL clients authenticate as.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")

    add = actions.add_parser("add", help="add a user or change its password", description=_ADD)
    add.add_argument("--user", required=True, help="the user's name")
    _mechanism_argument(add, "both")
    add.add_argument(
        "--iterations", type=positive_int, default=8192, help="SCRAM iterations, 4096..16384 (default: 8192)"
    )
    source = add.add_mutually_exclusive_group()
    source.add_argument(
        "--password-file", metavar="FILE", help="read the password from the file's first line"
    )
    source.add_argument(
        "--password", help="the password (visible to other users of this machine: prefer a file)"
    )
    add_connection_arguments(add)
    add.set_defaults(run=run_add)

    listing = actions.add_parser(
        "list", help="list users and their mechanisms", description="List SCRAM users."
    )
    listing.add_argument("--user", action="append", help="only this user (repeatable)")
    add_connection_arguments(listing)
    listing.set_defaults(run=run_list)

    remove = actions.add_parser("remove", help="remove a user's credentials", description="Remove a user.")
    remove.add_argument("--user", required=True, help="the user's name")
    _mechanism_argument(remove, "every mechanism the user has")
    add_connection_arguments(remove)
    remove.set_defaults(run=run_remove)


_ADD = (
    "Add a SCRAM user, or change its password, for one or both mechanisms. Without --password or "
    "--password-file the password is asked for (or read from standard input when it is not a terminal)."
)


def _mechanism_argument(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--mechanism",
        choices=MECHANISMS,
        action="append",
        help=f"SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable; default: {default})",
    )


@command("users add")
def run_add(args: argparse.Namespace) -> int:
    from confluent_kafka.admin._scram import (
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialAlteration,
        UserScramCredentialUpsertion,
    )

    password = _password(args).encode()
    admin = Admin(args)
    upserts: list[UserScramCredentialAlteration] = [
        UserScramCredentialUpsertion(
            args.user, ScramCredentialInfo(ScramMechanism[name.replace("-", "_")], args.iterations), password
        )
        for name in args.mechanism or MECHANISMS
    ]
    futures = admin.client.alter_user_scram_credentials(upserts, **admin.options)
    admin.wait(futures[args.user], "AlterUserScramCredentials")
    print(f"user {args.user}: {', '.join(args.mechanism or MECHANISMS)} set ({args.iterations} iterations)")
    return 0


@command("users list")
def run_list(args: argparse.Namespace) -> int:
    admin = Admin(args)
    descriptions = _describe(admin, args.user)
    rows = [
        (user, _mechanism_name(info.mechanism), info.iterations)
        for user, description in sorted(descriptions.items())
        for info in description.scram_credential_infos
    ]
    if rows:
        print(table(("USER", "MECHANISM", "ITERATIONS"), rows))
    return 0


@command("users remove")
def run_remove(args: argparse.Namespace) -> int:
    from confluent_kafka.admin._scram import (
        ScramMechanism,
        UserScramCredentialAlteration,
        UserScramCredentialDeletion,
    )

    admin = Admin(args)
    names = args.mechanism
    if not names:
        description = _describe(admin, [args.user])[args.user]
        names = [_mechanism_name(info.mechanism) for info in description.scram_credential_infos]
    deletions: list[UserScramCredentialAlteration] = [
        UserScramCredentialDeletion(args.user, ScramMechanism[name.replace("-", "_")]) for name in names
    ]
    futures = admin.client.alter_user_scram_credentials(deletions, **admin.options)
    admin.wait(futures[args.user], "AlterUserScramCredentials", _not_found(args.user))
    print(f"user {args.user}: {', '.join(names)} removed")
    return 0


def _describe(admin: Admin, users: list[str] | None) -> dict[str, Any]:
    if users is None:
        everyone: Any = admin.client.describe_user_scram_credentials(None, **admin.options)
        result: dict[str, Any] = admin.wait(
            everyone,
            "DescribeUserScramCredentials",
        )
        return result
    futures: Any = admin.client.describe_user_scram_credentials(users, **admin.options)
    return {
        user: admin.wait(future, "DescribeUserScramCredentials", _not_found(user))
        for user, future in futures.items()
    }


def _not_found(user: str) -> dict[int, str]:
    return {RESOURCE_NOT_FOUND: f"user {user} has no SCRAM credentials"}


def _mechanism_name(mechanism: Any) -> str:
    return str(mechanism.name).replace("_", "-")


def _password(args: argparse.Namespace) -> str:
    if args.password is not None:
        print(
            "odradek users add: warning: --password on the command line is visible to every user of this "
            "machine (ps, /proc); use --password-file, or type it when asked",
            file=sys.stderr,
            flush=True,
        )
        password = str(args.password)
    elif args.password_file:
        try:
            with open(args.password_file, encoding="utf-8") as file:
                password = file.readline().rstrip("\r\n")
        except OSError as error:
            raise CliError(f"cannot read --password-file {args.password_file}: {error.strerror}") from None
    elif sys.stdin.isatty():
        password = getpass.getpass(f"password for {args.user}: ")
        if getpass.getpass("again: ") != password:
            raise CliError("the two passwords differ")
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if not password:
        raise CliError("the password must not be empty")
    return password
