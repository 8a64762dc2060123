"""Regular expressions that clients send: KIP-848 subscriptions (ConsumerGroupHeartbeat's
SubscribedTopicRegex) and KIP-1152's ListTransactions filter.

Kafka specifies RE2 syntax for both (it uses RE2/J) and matches a whole name
(`Pattern.matcher(name).matches()`); so does odradek, with Google's RE2. RE2 runs in time linear in
the text, yet that is text length times program size (a pattern that defeats its DFA costs up to
milliseconds per name), and compiling holds Python's GIL (a nine-character pattern can take a tenth of
a second). So none of it runs in the broker's process: regex worker processes do it (regex_worker.py),
at the lowest CPU priority, each job held to a CPU budget (compiling included) and the worker to an
address-space limit. Consumer groups' work and ListTransactions' (which needs no ACL) have a worker
and a queue each (regex_lane.py): a bounded queue, one job per principal at a time, past which a
request is answered COORDINATOR_LOAD_IN_PROGRESS (clients retry it after a backoff).

A pattern RE2 refuses (syntax RE2 lacks, such as look-arounds and back-references, or a program over
RE2's 8 MiB budget) is INVALID_REGULAR_EXPRESSION; so is one that takes more CPU time than the budget
(WorkerLimits.cpu_seconds, 5 s), more memory than the worker may have (512 MiB), or is longer than
MAX_PATTERN_CHARS, where Kafka has no bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from odradek.coordinator.regex_frames import Message
from odradek.coordinator.regex_lane import OverBudget, Requester, WorkerLane, WorkerLimits
from odradek.protocol.error_codes import ErrorCode, KafkaError

#: The longest pattern taken (Kafka has none). Real subscriptions and filters are far shorter (a union
#: of a hundred topic names is a few thousand characters); at this length the costliest pattern found
#: (\pL repeated) takes RE2 ~1 s of CPU and ~190 MiB to parse before it refuses the program.
MAX_PATTERN_CHARS: Final = 16384
#: Jobs that may wait in each lane.
MAX_QUEUED_JOBS: Final = 16
#: Resolutions run for the group coordinator, not for a connection.
_COORDINATOR: Final = Requester("")


class RegexMatcher:
    """Compiles and matches client regexes in the regex workers (see the module docstring)."""

    def __init__(self, limits: WorkerLimits | None = None) -> None:
        self.limits = limits or WorkerLimits()
        #: Consumer groups' work: heartbeats' checks and subscriptions' resolutions.
        self.groups = WorkerLane("groups", self.limits, MAX_QUEUED_JOBS)
        #: ListTransactions' filters: anyone may send them, so they never wait in front of groups' work.
        self.transactions = WorkerLane("transactions", self.limits, MAX_QUEUED_JOBS)

    async def check(self, pattern: str, what: str, requester: Requester) -> None:
        """Raise INVALID_REGULAR_EXPRESSION unless RE2 compiles `pattern`; `what` names it in the
        message, as Kafka's does ("SubscribedTopicRegex `x` is not a valid regular expression: ...")."""
        _check_length(pattern, what)
        request = {"op": "check", "pattern": pattern}
        await self._run(self.groups, request, ("principal", requester.principal), requester, what)

    async def matching(
        self, pattern: str, names: Sequence[str], what: str, requester: Requester
    ) -> list[str]:
        """The names `pattern` matches whole, in order (ListTransactions); INVALID_REGULAR_EXPRESSION if
        RE2 refuses it or it is over the limits."""
        _check_length(pattern, what)
        request = {"op": "match", "pattern": pattern, "names": list(names)}
        owner = ("principal", requester.principal)
        reply = await self._run(self.transactions, request, owner, requester, what)
        return [names[index] for index in reply["matched"]]

    async def resolve(self, group_id: str, pattern: str, names: Sequence[str]) -> frozenset[str]:
        """The names a subscription of `group_id` matches, a job of its own (each pattern has its own
        budget). KafkaError: INVALID_REGULAR_EXPRESSION (refused by RE2, or over the limits),
        COORDINATOR_LOAD_IN_PROGRESS (the groups' lane is full), UNKNOWN_SERVER_ERROR (the worker
        failed); RuntimeError once closed."""
        request = {"op": "match", "pattern": pattern, "names": list(names)}
        reply = await self._run(
            self.groups, request, ("group", group_id), _COORDINATOR, "SubscribedTopicRegex"
        )
        return frozenset(names[index] for index in reply["matched"])

    def close(self) -> None:
        """Stop the workers; later calls fail with RuntimeError (the broker is stopping)."""
        self.groups.close()
        self.transactions.close()

    async def _run(
        self, lane: WorkerLane, request: Message, owner: tuple[str, str], requester: Requester, what: str
    ) -> Message:
        budget = self.limits.cpu_seconds
        pattern = request["pattern"]
        try:
            reply = await lane.run({**request, "budget": budget}, owner, requester, request["op"] == "check")
        except OverBudget:
            raise _invalid(
                what, pattern, f"compiling and matching it took more than {budget:g} s of CPU"
            ) from None
        if "invalid" in reply:
            raise _invalid(what, pattern, reply["invalid"])
        if "out_of_memory" in reply:
            megabytes = self.limits.memory_bytes >> 20
            raise _invalid(what, pattern, f"compiling and matching it needs more than {megabytes} MiB")
        return reply


def _check_length(pattern: str, what: str) -> None:
    if len(pattern) > MAX_PATTERN_CHARS:
        message = f"{what} is not a valid regular expression: longer than {MAX_PATTERN_CHARS} characters."
        raise KafkaError(ErrorCode.INVALID_REGULAR_EXPRESSION, message)


def _invalid(what: str, pattern: str, reason: str) -> KafkaError:
    return KafkaError(
        ErrorCode.INVALID_REGULAR_EXPRESSION,
        f"{what} `{pattern}` is not a valid regular expression: {reason}.",
    )
