"""The console's client side: every number it shows, asked of the cluster over the Kafka protocol.

Everything here is blocking (confluent-kafka's futures, odradek's own codec for DescribeLogDirs); the
pages call it from a worker thread. Failures are `ClusterError`s with a sentence for the page.
"""
