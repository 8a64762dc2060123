"""What `odradek cluster up` starts beside its own brokers: Apache Kafka 3.9's brokers, their jars
fetched from a Maven repository into the user's cache and checked against a lock file shipped here."""
