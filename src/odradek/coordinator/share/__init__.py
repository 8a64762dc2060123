"""The share coordinator (KIP-932): share groups' delivery state in `__share_group_state`."""
