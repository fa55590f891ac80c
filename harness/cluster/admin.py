"""Kafka's Admin API (and a producer), driven in this process through JPype on the cluster's own jars.

Every call waits for its answer (`KafkaFuture.get` with a timeout); a call Kafka refuses raises
`AdminError` with Kafka's exception class and message, which the scenarios treat as their failure.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from harness.interrupt import SIGNALS
from harness import kafka

CALL_TIMEOUT_MS = 15_000


class AdminError(Exception):
    """Kafka refused an admin call (its exception's class and message)."""


@dataclass(frozen=True)
class PartitionView:
    """Partition 0 of a topic as `describeTopics` shows it."""

    leader: int  # -1: none
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...] | None  # None: this Kafka's TopicPartitionInfo has no ELR


def start_jvm_keeping_signals(version: str) -> None:
    """Start the in-process JVM without letting it take SIGINT/SIGTERM from the harness: the JVM installs
    its own handlers (to run its shutdown hooks), which would end the process without our cleanup."""
    before = {s: signal.getsignal(s) for s in SIGNALS}
    kafka.start_jvm(version)
    for s, handler in before.items():
        if handler is not None:
            signal.signal(s, handler)


def _ids(nodes) -> tuple[int, ...]:
    return tuple(int(n.id()) for n in nodes)


class Admin:
    def __init__(self, version: str, bootstrap: str) -> None:
        start_jvm_keeping_signals(version)
        import jpype
        self.j = jpype.JPackage("org").apache.kafka
        self.java = jpype.JPackage("java")
        props = self.java.util.Properties()
        props.put("bootstrap.servers", bootstrap)
        props.put("request.timeout.ms", "5000")
        props.put("default.api.timeout.ms", str(CALL_TIMEOUT_MS))
        self.bootstrap = bootstrap
        self.client = self.j.clients.admin.Admin.create(props)

    def close(self) -> None:
        if self.client is not None:
            self.client.close(self.java.time.Duration.ZERO)  # the nodes may be gone: do not wait on them
            self.client = None

    def _get(self, future, timeout_ms: int = CALL_TIMEOUT_MS):
        import jpype
        try:
            return future.get(timeout_ms, self.java.util.concurrent.TimeUnit.MILLISECONDS)
        except jpype.JException as exc:
            cause = exc.getCause() if exc.getCause() is not None else exc
            raise AdminError(f"{cause.getClass().getSimpleName()}: {cause.getMessage()}") from None

    def _partition(self, topic: str):
        return self.j.common.TopicPartition(topic, 0)

    def _list(self, ids) -> object:
        return self.java.util.Arrays.asList([self.java.lang.Integer(i) for i in ids])

    # --------------------------------------------------------------------- reads

    def unfenced_brokers(self) -> set[int]:
        """The brokers the cluster reports alive (unfenced); empty while it does not answer."""
        options = self.j.clients.admin.DescribeClusterOptions().timeoutMs(self.java.lang.Integer(2000))
        try:
            nodes = self._get(self.client.describeCluster(options).nodes(), 3000)
        except AdminError:
            return set()
        return {int(n.id()) for n in nodes}

    def describe(self, topic: str) -> PartitionView:
        names = self.java.util.List.of(topic)
        description = self._get(self.client.describeTopics(names).allTopicNames()).get(topic)
        info = description.partitions().get(0)
        leader = info.leader()
        elr = _ids(info.elr()) if hasattr(info, "elr") else None
        return PartitionView(-1 if leader is None else int(leader.id()), _ids(info.replicas()), _ids(info.isr()), elr)

    def reassigning(self, topic: str) -> bool:
        found = self._get(self.client.listPartitionReassignments().reassignments())
        return found.containsKey(self._partition(topic))

    def end_offset(self, topic: str) -> int:
        """The partition's high watermark (`listOffsets` latest, the committed end)."""
        spec = self.java.util.Map.of(self._partition(topic), self.j.clients.admin.OffsetSpec.latest())
        result = self._get(self.client.listOffsets(spec).all())
        return int(result.get(self._partition(topic)).offset())

    def metadata_features(self) -> dict[str, int]:
        features = self._get(self.client.describeFeatures().featureMetadata())
        return {str(k): int(v.maxVersionLevel()) for k, v in features.finalizedFeatures().items()}

    # --------------------------------------------------------------------- writes

    def create_topic(self, topic: str, replicas: tuple[int, ...], configs: dict[str, str]) -> None:
        assignment = self.java.util.Map.of(self.java.lang.Integer(0), self._list(replicas))
        new = self.j.clients.admin.NewTopic(topic, assignment)
        new.configs(self.java.util.Map.copyOf({k: v for k, v in configs.items()}))
        self._get(self.client.createTopics(self.java.util.List.of(new)).all())

    def reassign(self, topic: str, target: tuple[int, ...] | None) -> None:
        """AlterPartitionReassignments: move partition 0 to `target`, or cancel (None)."""
        Optional = self.java.util.Optional
        wanted = Optional.empty() if target is None else Optional.of(
            self.j.clients.admin.NewPartitionReassignment(self._list(target)))
        self._get(self.client.alterPartitionReassignments(self.java.util.Map.of(self._partition(topic), wanted)).all())

    def elect(self, topic: str, kind: str) -> None:
        """ElectLeaders: kind is PREFERRED or UNCLEAN."""
        election = getattr(self.j.common.ElectionType, kind)
        self._get(self.client.electLeaders(election, self.java.util.Set.of(self._partition(topic))).all())

    def produce(self, topic: str, count: int) -> None:
        """`count` records with acks=all, each waited for."""
        props = self.java.util.Properties()
        props.put("bootstrap.servers", self.bootstrap)
        props.put("acks", "all")
        props.put("enable.idempotence", "false")
        props.put("delivery.timeout.ms", str(CALL_TIMEOUT_MS))
        props.put("request.timeout.ms", "5000")
        serializer = "org.apache.kafka.common.serialization.StringSerializer"
        props.put("key.serializer", serializer)
        props.put("value.serializer", serializer)
        producer = self.j.clients.producer.KafkaProducer(props)
        try:
            for i in range(count):
                record = self.j.clients.producer.ProducerRecord(topic, self.java.lang.Integer(0), None, f"record-{i}")
                self._get(producer.send(record))
        finally:
            producer.close(self.java.time.Duration.ofSeconds(2))
