"""The handlers' shared layer: the request context, the API registry, authorization and the
services every API module asks. API modules import it; it imports none of them."""
