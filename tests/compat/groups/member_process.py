"""A group member in its own process, so a test can kill it with SIGKILL (no LeaveGroup, no close).

    python -m tests.compat.groups.member_process CLIENT BOOTSTRAP GROUP TOPIC [COMMIT_EVERY] [INSTANCE_ID]

It prints one JSON object per line: {"assigned": [...]} when its assignment changes, {"consumed": [p, o]}
for each record, {"committed": {p: offset}} after each synchronous commit.
"""

from __future__ import annotations

import json
import sys
import time

from tests.compat.groups.group_clients import MEMBER_CLASSES, Member


def say(**fields: object) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main(argv: list[str]) -> None:
    client, bootstrap, group, topic = argv[:4]
    commit_every = int(argv[4]) if len(argv) > 4 else 0
    options: dict[str, object] = {}
    if len(argv) > 5:
        options["group.instance.id" if client.startswith("confluent") else "group_instance_id"] = argv[5]
    member: Member = MEMBER_CLASSES[client](bootstrap, group, topic, f"{client}-process", **options)
    member._open()
    assigned: frozenset[int] = frozenset()
    pending = 0
    while True:
        for partition, offset, _ in member._poll_once():
            say(consumed=[partition, offset])
            member.positions[partition] = offset + 1
            pending += 1
            if commit_every and pending >= commit_every:
                member._commit()
                say(committed={str(p): o for p, o in member.committed.items()})
                pending = 0
        now = frozenset(member._assignment())
        if now != assigned:
            assigned = now
            say(assigned=sorted(now))
        time.sleep(0.001)


if __name__ == "__main__":
    main(sys.argv[1:])
