"""Kafka Reassignment Harness: one protocol model, many engines (BFS, Hypothesis, Z3, Spark, graph)."""

__version__ = "0.1.0"

# The hot modules' compiled build, where one exists and matches their sources (harness/compiled.py).
from harness import compiled as _compiled  # noqa: E402

_compiled.install()
