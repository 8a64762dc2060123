"""Share partitions (KIP-932): in-flight records of share groups on the partition leader."""
