"""Reading a KRaft metadata log (`__cluster_metadata-0`'s segments) with Kafka's own classes.

Each segment is read with `FileRecords`; each record's value is decoded by `MetadataRecordSerde` and
turned into Kafka's JSON form by `MetadataJsonConverters` (the form `kafka-dump-log
--cluster-metadata-decoder` prints). Batches are kept: the controller commits a batch atomically, so a
batch is the unit the trace validation matches against one model step. Control batches (leader changes,
snapshot markers) carry no metadata and are skipped. Nothing in the log is executed: it is parsed as data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.errors import BadInput


@dataclass(frozen=True)
class Record:
    offset: int
    type: str  # Kafka's record class: PartitionChangeRecord, RegisterBrokerRecord, ...
    version: int
    data: dict  # the record's fields in Kafka's JSON form (camelCase names)


@dataclass(frozen=True)
class Batch:
    base_offset: int
    records: tuple[Record, ...]


def segments(path: Path) -> list[Path]:
    """The log segments a path names: a `.log` file, or every `.log` file of a folder, in offset order."""
    if path.is_dir():
        found = sorted(path.glob("*.log"))
        if not found:
            raise BadInput(f"{path} holds no log segment (*.log): give a __cluster_metadata-0 folder or a segment file")
        return found
    if path.is_file():
        return [path]
    raise BadInput(f"{path}: no such file or folder")


def read_batches(path: Path) -> list[Batch]:
    """Every metadata batch of the log at `path` (a segment file or a folder of them), in offset order."""
    import jpype
    kafka = jpype.JPackage("org").apache.kafka
    serde = kafka.metadata.MetadataRecordSerde.INSTANCE
    # Kafka 4.4 moved the record classes into an `internal` package
    file_records = getattr(kafka.common.record, "internal", kafka.common.record).FileRecords
    batches: list[Batch] = []
    seen = 0  # batches of any kind: a file with none is not a log segment
    for segment in segments(path):
        try:
            records = file_records.open(jpype.JPackage("java").io.File(str(segment)))
        except jpype.JException as exc:
            raise BadInput(f"cannot open {segment}: {exc.getMessage()}") from None
        try:
            for batch in records.batches():
                seen += 1
                if batch.isControlBatch():
                    continue
                batch.ensureValid()  # a batch whose CRC does not match its bytes is corruption, not a record
                decoded = []
                for record in batch:
                    value = record.value()
                    message = serde.read(kafka.common.protocol.ByteBufferAccessor(value), value.remaining())
                    inner, version = message.message(), int(message.version())
                    text = kafka.common.metadata.MetadataJsonConverters.writeJson(inner, version).toString()
                    decoded.append(Record(int(record.offset()), str(inner.getClass().getSimpleName()), version,
                                          json.loads(str(text))))
                batches.append(Batch(int(batch.baseOffset()), tuple(decoded)))
        except jpype.JException as exc:
            raise BadInput(f"{segment} is not a readable KRaft metadata log segment: "
                           f"{exc.getClass().getSimpleName()}: {exc.getMessage()}") from None
        finally:
            records.close()
    if not seen:
        raise BadInput(f"{path} holds no record batch: not a KRaft metadata log")
    return batches
