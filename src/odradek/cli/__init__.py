"""The `odradek` command line."""
