"""Default principal data: wire schema.

Drafted from Kafka's message files by tools/generate_definitions.py; check_specs proves they agree.
"""

from __future__ import annotations

from odradek.protocol.schema import Bool, Message, String


class DefaultPrincipalData(Message, versions="0", flexible="0+"):
    type: str = String()
    name: str = String()
    token_authenticated: bool = Bool()
