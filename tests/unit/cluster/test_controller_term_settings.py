"""A controller term reads the controller's settings as they are now: unclean.leader.election.enable
changes at run time (AlterConfigs), and the term made before the change must see it without the
controller assigning the term's attributes afterwards (docs/architecture.md, rule 8)."""

from __future__ import annotations

import dataclasses

from odradek.cluster.controller.broker_changes import on_broker_change
from odradek.cluster.controller.config import ControllerConfig
from odradek.cluster.controller.context import ControllerContext
from odradek.cluster.controller.registrations import BrokerRegistrations
from odradek.cluster.controller.term import ControllerTerm


def test_a_term_reads_unclean_leader_election_enable_as_the_controller_has_it_now() -> None:
    settings = ControllerConfig(broker_id=1, unclean_leader_election_enable=False)

    def current() -> ControllerConfig:
        return settings

    term = ControllerTerm(
        None,  # type: ignore[arg-type]
        current,
        None,  # type: ignore[arg-type]
        ControllerContext(epoch=1, epoch_zk_version=0),
        None,  # type: ignore[arg-type]
        print,
        print,
        BrokerRegistrations(None, 0, {}),  # type: ignore[arg-type]
        on_broker_change,
    )
    assert not term.config.unclean_leader_election_enable
    settings = dataclasses.replace(settings, unclean_leader_election_enable=True)
    assert term.config.unclean_leader_election_enable
    assert term.controller_id == 1
