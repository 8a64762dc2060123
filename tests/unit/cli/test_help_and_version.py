"""What a person sees first: `odradek --version`, and an example in every command's --help."""

from __future__ import annotations

import argparse
import re
import tomllib

import pytest

from odradek.cli.main import build_parser, main
from tests.support.broker_process import REPO


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert capsys.readouterr().out.strip() == f"odradek {version}"


def _every_parser(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found += _every_parser(child)
    return found


def test_every_command_help_has_an_example_of_that_command() -> None:
    parsers = _every_parser(build_parser())
    assert {"odradek pipeline", "odradek broker", "odradek topics create", "odradek groups delete"} <= {
        p.prog for p in parsers
    }
    for parser in parsers:
        text = parser.format_help()
        assert "\nexamples:\n" in text, f"{parser.prog} --help has no example"
        examples = text.split("\nexamples:\n", 1)[1].splitlines()
        assert any(parser.prog in line for line in examples), f"{parser.prog}: {examples}"


def test_pipeline_takes_bootstrap_server_like_every_client_command() -> None:
    parsers = {p.prog: p for p in _every_parser(build_parser())}
    for prog in ("odradek pipeline", "odradek topics list", "odradek consume", "odradek configs describe"):
        options = {o for action in parsers[prog]._actions for o in action.option_strings}
        assert "--bootstrap-server" in options, prog
    args = build_parser().parse_args(["pipeline", "--bootstrap-server", "127.0.0.1:19092"])
    assert args.bootstrap_server == "127.0.0.1:19092"


def _commands() -> set[str]:
    (subcommands,) = (a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return set(subcommands.choices)


def test_the_readme_and_the_cli_doc_name_every_command() -> None:
    """The README named 10 of the 14 commands (no cluster, acls, reassign, quotas) and docs/cli.md's
    table left out `odradek cluster`."""
    readme = re.search(r"`odradek ((?:[a-z]+\|)+[a-z]+)`", (REPO / "README.md").read_text())
    assert readme is not None
    assert set(readme.group(1).split("|")) == _commands()
    table = set(re.findall(r"^\| `odradek ([a-z]+)", (REPO / "docs" / "cli.md").read_text(), re.M))
    assert table == _commands() - {"broker"}  # the table lists the client commands
