"""The bound on requests read and waiting to be handled (Kafka's request channel, `queued.max.requests`).

Kafka's network threads put each request they read into one queue of `queued.max.requests` places,
which its request handler threads take from; when the queue is full the network threads stop reading.
A request leaves the queue as soon as a handler takes it up: one then waiting in purgatory (a produce
waiting for its in-sync replicas, a fetch or a join waiting for others) no longer counts, and a
connection's next request is not even read meanwhile (its channel is muted).

odradek has no handler threads: each connection takes up its own requests in order, on the event loop.
What corresponds to Kafka's queue is the requests a connection has read and not yet taken up, while it
is not handling one of its own (nor muted for a quota, nor waiting for its client to take its
answers): requests behind the one a connection is handling would still be in the socket in Kafka, the
one being handled, whatever it waits for, has left the queue, and Kafka reads nothing more from a
connection until its answer is sent. So the count grows when the event loop falls behind the
connections that send, as Kafka's when its handler threads fall behind, and a request that waits on
others (acks=all on the followers' fetches, a JoinGroup on the other members) never holds up the
reading of those: the requests counted are all about to be taken up, without waiting on anything.

As the memory pool of `queued.max.request.bytes`, the bound is not strict: a connection that reads while
the queue is full stops reading after that read, whose requests are queued (at most 32 are split off
one connection's bytes at a time), and every connection waiting resumes once the count is below the
bound again.
"""

from __future__ import annotations

from odradek.server.read_waiters import ReadWaiters


class RequestQueue(ReadWaiters):
    """The requests waiting to be taken up, across every connection of one event loop."""

    def __init__(self, capacity: int) -> None:
        super().__init__()
        self.capacity = capacity
        self.queued = 0

    @property
    def full(self) -> bool:
        return self.queued >= self.capacity

    def change(self, delta: int) -> None:
        """Requests were queued (delta > 0) or taken up, dropped or set aside (delta < 0)."""
        self.queued += delta
        if delta < 0 and self.queued < self.capacity:
            self._resume_all()
