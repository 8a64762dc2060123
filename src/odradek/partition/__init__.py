"""The data plane (#28): see docs/architecture.md."""
