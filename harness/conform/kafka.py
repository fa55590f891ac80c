"""The Kafka side of `conform`: Kafka's controller managers in this process's JVM (JPype), through the adapter
`kafka/adapter/.../ConformAdapter.java` that `make kafka` compiles against each version's jars.

One crossing into the JVM per call: the adapter runs the controller's method, replays the records it generated
into the managers, and answers the state after as one int array, decoded here into a `ControllerView`.
"""

from __future__ import annotations

from harness.conform import FIELDS, Call, ControllerView, perturbed_field
from harness.errors import BadInput
from harness.kafka import classpath, has_adapter, start_jvm


def _mask_view(state, brokers: int) -> ControllerView:
    """The adapter's `state()` array as a view (see ConformAdapter.state)."""
    n = state[9]
    replicas = tuple(state[10:10 + n])
    rest = state[10 + n:]
    return ControllerView(replicas, state[4], state[5], state[6], max(state[0], 0), state[1], state[2], state[7],
                          state[8], bool(state[3]), tuple((rest[2 * i], rest[2 * i + 1]) for i in range(brokers)))


class KafkaController:
    """One topic with one partition on Kafka's ReplicationControlManager (and its ClusterControlManager,
    FeatureControlManager, ConfigurationControlManager, one SnapshotRegistry)."""

    def __init__(self, version: str, *, brokers: int, replicas, isr, leader: int, min_isr: int, elr: bool,
                 unclean: bool) -> None:
        classpath(version)  # an unknown or unresolved version: one line
        if not has_adapter(version):
            raise BadInput(f"Kafka {version}'s conform adapter is not built here: run `make kafka KAFKA={version}`")
        start_jvm(version)
        import jpype

        self.version = version
        self.brokers = brokers
        self.perturb = perturbed_field()
        adapter = jpype.JClass("org.apache.kafka.controller.ConformAdapter")
        self.adapter = adapter(brokers, list(replicas), list(isr), leader, min_isr, elr, unclean)
        # after the adapter (which keeps the logging backends' start-up notices off stderr): Errors has a logger
        self._errors = jpype.JClass("org.apache.kafka.common.protocol.Errors")
        self._short = jpype.JShort
        self._int_array = jpype.JArray(jpype.JInt)
        self._long_array = jpype.JArray(jpype.JLong)
        self._names: dict[int, str] = {}

    def describe(self) -> dict:
        return {"version": self.version, "metadata_version": str(self.adapter.metadataVersion()),
                "elr": bool(self.adapter.elrEnabled()), "unstable_features": bool(self.adapter.unstableFeatures())}

    def view(self) -> ControllerView:
        return _mask_view(list(self.adapter.state()), self.brokers)

    def mark(self) -> int:
        return int(self.adapter.mark())

    def revert(self, snapshot: int) -> None:
        self.adapter.revert(snapshot)

    def records(self) -> list[str]:
        """The records of the last call, one line each (a trace refuses line breaks in a string)."""
        return str(self.adapter.lastRecords()).splitlines()

    def response(self) -> str:
        return str(self.adapter.lastResponse())

    def error_name(self, code: int) -> str:
        name = self._names.get(code)
        if name is None:
            name = self._names[code] = str(self._errors.forCode(self._short(code)).name())
        return name

    def apply(self, call: Call) -> tuple[ControllerView, tuple | None]:
        """Run `call`; Kafka's view after it and its answer: (error name,) for a reassignment, (error name, ISR,
        leader epoch, partition epoch) for an AlterPartition, None for the rest (no response to compare)."""
        a, op, args = self.adapter, call.op, call.args
        response = None
        if op == "reassign":
            out = list(a.reassign(self._int_array(args[0]) if args else None))
            response, state = (self.error_name(out[0]),), out[1:]
        elif op == "alter":
            broker, broker_epoch, leader_epoch, partition_epoch, isr, epochs = args
            out = list(a.alterPartition(broker, broker_epoch, leader_epoch, partition_epoch, self._int_array(isr),
                                        self._long_array(epochs)))
            name = self.error_name(out[0])
            response = (name, out[4], out[2], out[3]) if name == "NONE" else (name,)
            state = out[5:]
        elif op == "fence":
            state = list(a.fence(args[0]))
        elif op == "controlled_shutdown":
            state = list(a.controlledShutdown(args[0]))
        elif op == "unfence":
            state = list(a.unfence(args[0]))
        elif op == "register":
            state = list(a.register(*args))
        else:
            raise ValueError(f"no Kafka call {op!r}")
        view = _mask_view(state, self.brokers)
        if self.perturb is not None:  # test-only: a deliberately wrong adapter value (perturbed_field)
            i = FIELDS.index(self.perturb)
            view = view._replace(**{self.perturb: type(view[i])(view[i] + 1) if not isinstance(view[i], tuple)
                                    else view[i] + (0,)})
        return view, response
