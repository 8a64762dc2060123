"""Examples in every command's --help: an action (`odradek topics create`) shows the lines of its
command's examples that run it, so each example is written once, where the command is defined."""

from __future__ import annotations

import argparse


def share_examples(parser: argparse.ArgumentParser) -> None:
    """Give each subcommand parser below `parser` that has no epilog of its own the example lines of
    its parent's epilog that invoke it."""
    for child in _subparsers(parser):
        if child.epilog is None and parser.epilog:
            lines = [line for line in parser.epilog.splitlines() if _invokes(line, child.prog)]
            if lines:
                child.epilog = "\n".join(["examples:", *lines])
                child.formatter_class = argparse.RawDescriptionHelpFormatter
        share_examples(child)


def _subparsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    children: list[argparse.ArgumentParser] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            children += [p for p in dict.fromkeys(action.choices.values())]
    return children


def _invokes(line: str, prog: str) -> bool:
    command = line.split("#", 1)[0]
    return f" {prog} " in f" {command} " or command.rstrip().endswith(prog)
