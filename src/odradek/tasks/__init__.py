"""Small helpers every layer uses: asyncio tasks, child processes (a leaf: docs/architecture.md)."""
