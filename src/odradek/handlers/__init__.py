"""Request handlers: one module per API family, each a thin async function from request to response.

Importing this package registers every handler (see registry.py).
"""

from odradek.handlers import api_versions as api_versions
from odradek.handlers import fetch as fetch
from odradek.handlers import init_producer_id as init_producer_id
from odradek.handlers import list_offsets as list_offsets
from odradek.handlers import metadata as metadata
from odradek.handlers import produce as produce
