"""Kafka Reassignment Harness: one protocol model, many engines (BFS, Hypothesis, Z3, Spark, graph)."""

__version__ = "0.1.0"
