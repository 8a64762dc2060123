"""Replication (ZooKeeper mode): replica fetchers on followers, ISR and high-watermark tracking on
leaders, and ISR changes sent to the controller with AlterPartition (key 56)."""
