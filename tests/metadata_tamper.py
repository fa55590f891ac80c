"""Tamper with a KRaft metadata log for tests/test_trace_validation.py: `python tests/metadata_tamper.py LOG_DIR`.

Rewrites, in the segment file, the ISR of the partition change that completed the reassignment [1,2] ->
[2,3] ([2,3] -> [2,1], the same size), and fixes its batch's CRC-32C: a log Kafka reads without complaint.
Prints [offset, forged ISR] as JSON. Run in its own process, so that the test's process hosts no JVM.
"""

import json
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.cluster.admin import start_jvm_keeping_signals  # noqa: E402
from harness.cluster.metadata import read_batches  # noqa: E402
from harness.kafka import default_version  # noqa: E402


def tagged_isr(ids) -> bytes:
    """PartitionChangeRecord's ISR as serialized: tag 0, its size, a compact array (length + 1), the int32 ids."""
    return bytes([0, 1 + 4 * len(ids), len(ids) + 1]) + b"".join(struct.pack(">i", x) for x in ids)


def tamper_isr(log_dir: Path) -> tuple[int, list[int]]:
    import jpype

    start_jvm_keeping_signals(default_version())
    kafka = jpype.JPackage("org").apache.kafka
    records = [r for b in read_batches(log_dir) for r in b.records]
    completion = next(r for r in records if r.type == "PartitionChangeRecord" and r.data.get("isr")
                      and sorted(r.data["isr"]) == [2, 3] and r.data.get("addingReplicas") == [])
    isr = completion.data["isr"]
    forged = [2 if x == 2 else 1 for x in isr]
    segment = log_dir / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    file_records = getattr(kafka.common.record, "internal", kafka.common.record).FileRecords.open(
        jpype.JPackage("java").io.File(str(segment)))
    try:
        batch = next(b for b in file_records.batches() if b.baseOffset() <= completion.offset <= b.lastOffset())
        start, size = int(batch.position()), int(batch.sizeInBytes())
    finally:
        file_records.close()
    body = bytes(data[start:start + size])
    assert body.count(tagged_isr(isr)) == 1, "the ISR's bytes are not unique in their batch"
    body = body.replace(tagged_isr(isr), tagged_isr(forged))
    checksum = jpype.JPackage("java").util.zip.CRC32C()  # the JDK's CRC-32C, which Kafka's batches use
    checksum.update(body, 21, size - 21)  # from the attributes to the batch's end
    body = body[:17] + struct.pack(">I", int(checksum.getValue())) + body[21:]
    data[start:start + size] = body
    segment.write_bytes(bytes(data))
    return completion.offset, forged


if __name__ == "__main__":
    print(json.dumps(tamper_isr(Path(sys.argv[1]))))
