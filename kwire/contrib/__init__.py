"""Adapters that plug kwire's Java-exact assignors into Python Kafka clients.

* :mod:`kwire.contrib.kafka_python` -- ``KafkaConsumer(partition_assignment_strategy=[...])`` (kafka-python 3.x)
* :mod:`kwire.contrib.aiokafka` -- ``AIOKafkaConsumer(partition_assignment_strategy=(...))`` (aiokafka 0.14)

Each module imports its client library, so import only the one you use.  What
they share lives in ``_base``.
"""
