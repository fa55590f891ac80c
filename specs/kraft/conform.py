"""The kraft model against Apache Kafka's controller (`harness conform kraft`): which Kafka call each controller
rule is, what both sides have, and the divergences the model declares, each with why.

Kafka's calls are those `QuorumController` makes (package org.apache.kafka.controller): `ReplicationControlManager`
for reassignments, AlterPartition and broker fencing, `ClusterControlManager.registerBroker` for a restart.
The broker-side rules (learn_metadata, produce, fetch, advance_hwm, propose_isr_*, handle_alter_partition_response)
have no controller call: what they change reaches Kafka through the requests brokers send (AlterPartition's
ISR, epochs and broker epochs: `handle_alter_partition`'s call is built from the request the leader holds).
Docs: docs/ARCHITECTURE.md, "Kafka's own code"; docs/models/kraft.md, "Conformance with Kafka".
"""

from __future__ import annotations

from harness.bitset import members
from harness.conform import ABSTRACTION, NOT_REPRODUCED, Call, Conformance, ControllerView, Declared, release
from specs.kraft import spec
from specs.kraft.state import ACCEPTED, INELIGIBLE_REPLICA, UNFENCED, follows_kafka

FENCING_RULES = ("fence", "unclean_shutdown", "fail_permanently")

# Rule -> Kafka call, what is compared (the docs' table is this one).
MAPPING = [
    ("alter_partition_reassignments", "ReplicationControlManager.alterPartitionReassignments (target)",
     "partition registration, error code"),
    ("cancel_reassignment", "ReplicationControlManager.alterPartitionReassignments (replicas = null)",
     "partition registration, error code"),
    ("handle_alter_partition", "ReplicationControlManager.alterPartition (the leader's request: broker epoch, leader "
     "and partition epochs, new ISR with the added replica's broker epoch, RECOVERED)",
     "partition registration, error code, response ISR and epochs"),
    ("fence", "ReplicationControlManager.handleBrokerFenced (missed heartbeats)", "partition registration, fencing"),
    ("unclean_shutdown", "ReplicationControlManager.handleBrokerFenced (the lost session)",
     "partition registration, fencing"),
    ("fail_permanently", "ReplicationControlManager.handleBrokerFenced (the lost session)",
     "partition registration, fencing"),
    ("clean_shutdown", "ReplicationControlManager.handleBrokerInControlledShutdown, then handleBrokerFenced "
     "(processBrokerHeartbeat's CONTROLLED_SHUTDOWN and SHUTDOWN_NOW)", "partition registration, fencing"),
    ("unfence", "ReplicationControlManager.handleBrokerUnfenced", "partition registration, fencing"),
    ("restart", "ClusterControlManager.registerBroker (new incarnation, previous broker epoch: a clean shutdown)",
     "partition registration, broker epoch, fencing"),
    ("restart_after_unclean_shutdown", "ClusterControlManager.registerBroker (previous broker epoch -1: unclean)",
     "partition registration, broker epoch, fencing"),
    ("learn_metadata, produce, fetch, advance_hwm, propose_isr_expansion, propose_isr_shrink, "
     "handle_alter_partition_response", "none (broker-side)", "the controller's view stays unchanged"),
]


# Kafka release -> the variants that match its controller from that release on (conform's default for a version;
# --variant overrides). Each was checked at `ci`, ELR on and off (docs/models/kraft.md, "Conformance with Kafka"):
# 4.0.0 is completion=kafka, 4.4.0 completion=kafka-4.4; the releases between are not checked (the declarations
# below say how 4.4 differs from the 4.0 variant). 3.9.1 is completion=kafka but for one declared difference.
VARIANTS_BY_RELEASE = [
    ("3.9", ("completion=kafka",)),
    ("4.4", ("completion=kafka-4.4",)),
]


def applies(cfg) -> str | None:
    if not follows_kafka(cfg):
        return ("conform compares kraft's Kafka variants with Kafka: --variant completion=kafka or kafka-4.4 (by "
                "default the one that matches the Kafka version)")
    return None


def call(cfg, s, action) -> Call | None:
    rule, params = action.rule, dict(action.params)
    if rule == "alter_partition_reassignments":
        return Call("reassign", (tuple(cfg.targets[params["target"]]),))
    if rule == "cancel_reassignment":
        return Call("reassign", ())
    if rule == "handle_alter_partition":
        leader = params["leader"]
        b = s.brokers[leader - 1]
        req = b.pending
        isr = tuple(members(req.isr))
        # the broker epoch the leader saw for a replica it adds; -1 (not checked) for the others
        epochs = tuple(req.added_epochs[m - 1] or -1 for m in isr)
        return Call("alter", (leader, b.epoch, req.leader_epoch, req.partition_epoch, isr, epochs))
    if rule in FENCING_RULES:
        return Call("fence", (params["broker"],))
    if rule == "clean_shutdown":
        return Call("controlled_shutdown", (params["broker"],))
    if rule == "unfence":
        return Call("unfence", (params["broker"],))
    if rule in ("restart", "restart_after_unclean_shutdown"):
        broker = params["broker"]
        epoch = s.brokers[broker - 1].epoch
        return Call("register", (broker, epoch + 1, epoch if rule == "restart" else -1))
    return None


def view(cfg, s) -> ControllerView:
    p = s.partition
    return ControllerView(p.replicas, p.isr, p.elr, p.last_known_elr, p.leader, p.leader_epoch, p.partition_epoch,
                          p.adding, p.removing, p.recovering,
                          tuple((b.epoch, int(b.status != UNFENCED)) for b in s.brokers))


def response(cfg, s, nxt, c: Call) -> tuple | None:
    """The model's answer to a call, in Kafka's terms (STALE: the errors the model's leader treats alike)."""
    if c.op == "reassign":
        return ("NONE",)
    if c.op != "alter":
        return None
    r = nxt.brokers[c.args[0] - 1].response
    if r.status == ACCEPTED:
        return ("NONE", r.isr, r.leader_epoch, r.partition_epoch)
    return ("INELIGIBLE_REPLICA",) if r.status == INELIGIBLE_REPLICA else ("STALE",)


def setup(cfg) -> dict:
    return dict(brokers=cfg.brokers, replicas=cfg.replicas, isr=cfg.isr, leader=cfg.leader, min_isr=cfg.min_isr,
                elr=cfg.elr, unclean=cfg.unclean)


def _new_leader_elected(c: Call, differences: dict, version: str) -> bool:
    if c.op != "alter" or set(differences) != {"response"}:
        return False
    model, kafka = differences["response"]
    return model[0] == "NONE" and kafka[0] == "NEW_LEADER_ELECTED"


def _clean_restart_unclean_in_3x(c: Call, differences: dict, version: str) -> bool:
    return release(version) < (4, 0) and c.op == "register" and c.args[2] != -1


def _last_known_leader_not_acceptable(c: Call, differences: dict, version: str) -> bool:
    leader, recovering = differences.get("leader"), differences.get("recovering")
    return (release(version) > (4, 0) and leader is not None and leader[0] and not leader[1]
            and recovering == (True, False))


def _relaxed_completion(c: Call, differences: dict, version: str) -> bool:
    adding, removing = differences.get("adding"), differences.get("removing")
    return (release(version) > (4, 0) and c.op in ("alter", "fence", "controlled_shutdown", "register", "unfence")
            and (adding is not None and adding[0] and not adding[1] or removing is not None and removing[0]
                 and not removing[1]))


DECLARED = [
    Declared(
        "completion-relaxed", NOT_REPRODUCED,
        "after 4.0 (seen in 4.4.0; KAFKA-19975) a reassignment completes although a target replica that was already a "
        "replica is out of the ISR, unless the target is smaller than the current assignment "
        "(PartitionReassignmentReplicas); completion=kafka, as 4.0, completes only with every target replica in the "
        "ISR: completion=kafka-4.4 reproduces 4.4.0",
        _relaxed_completion, changes_state=True, variants=("completion=kafka",)),
    Declared(
        "clean-restart-handled-as-unclean", NOT_REPRODUCED,
        "Kafka 3.9 has no clean-shutdown detection at registration (KIP-966's previous broker epoch check came in "
        "4.0): ClusterControlManager.registerBroker runs the unclean-shutdown handling on every new incarnation, so a "
        "cleanly restarted broker leaves the ELR too (and may be elected as the last known leader); the model, as "
        "Kafka 4.0, handles only an unclean restart so",
        _clean_restart_unclean_in_3x, changes_state=True),
    Declared(
        "last-known-leader-must-be-acceptable", NOT_REPRODUCED,
        "after 4.0 (seen in 4.4.0) PartitionChangeBuilder elects the last known leader only if it is an acceptable "
        "leader: a broker re-registering after an unclean shutdown is not elected then, but when it is unfenced; "
        "completion=kafka follows 4.0 (and apache/kafka at 1eb76443), where that election did not check "
        "acceptability: completion=kafka-4.4 reproduces 4.4.0",
        _last_known_leader_not_acceptable, changes_state=True, variants=("completion=kafka",)),
    Declared(
        "new-leader-elected", ABSTRACTION,
        "an AlterPartition whose ISR change completes a reassignment that removes the requesting leader: Kafka commits "
        "the record and answers NEW_LEADER_ELECTED (ReplicationControlManager.alterPartition); the model answers "
        "ACCEPTED with the new leader epoch, and its leader, seeing another leader epoch, keeps its pending state "
        "until it learns the metadata, as Kafka's Partition does on that error",
        _new_leader_elected),
]

spec.conformance = Conformance(
    applies=applies, call=call, view=view, response=response, setup=setup, declared=DECLARED, mapping=MAPPING,
    error_classes={"FENCED_LEADER_EPOCH": "STALE", "INVALID_UPDATE_VERSION": "STALE", "INVALID_REQUEST": "STALE",
                   "NOT_CONTROLLER": "STALE"},
    variants=VARIANTS_BY_RELEASE,
)
