"""How `harness explore` draws a replication state: a replicated log (template views/replicated_log.html), as
for kraft."""

from __future__ import annotations

from harness.bitset import as_set
from harness.itf import OptId
from specs.replication import spec
from specs.replication.state import BROKER_STATUS, LEADER, ROLE, VALUE_NAMES, ReplicationConfig, State


@spec.protocol_view
def drawn(cfg: ReplicationConfig, s: State) -> dict:
    """The state as `harness explore` draws a replicated log (template views/replicated_log.html), as for
    kraft: the controller's partition metadata, each broker's log by leader epoch with HWM, LEO and LESO,
    its status and the metadata it knows, a leader's Maximal ISR, and every message in the network (also as
    `messages`, with sender and receiver, for the explorer's timeline)."""
    c = s.con_partition_metadata
    controller = [("replicas", as_set(c.replicas)), ("ISR", as_set(c.isr)), ("leader", OptId().show(c.leader)),
                  ("leader epoch", str(c.leader_epoch)), ("partition epoch", str(c.partition_epoch)),
                  ("adding", as_set(c.adding)), ("removing", as_set(c.removing)), ("ELR", as_set(c.elr)),
                  ("last known ELR", as_set(c.last_known_elr)), ("unfenced", as_set(s.con_unfenced))]
    brokers = []
    for i, (b, role, meta, data, leso) in enumerate(zip(s.broker_state, s.partition_status, s.partition_metadata,
                                                        s.partition_data, s.partition_leso), 1):
        leads = role == LEADER
        known = [("broker epoch", str(b.broker_epoch)), ("leader", OptId().show(meta.leader)),
                 ("leader epoch", str(meta.leader_epoch)), ("partition epoch", str(meta.partition_epoch)),
                 ("ISR", as_set(meta.isr)), ("replicas", as_set(meta.replicas))]
        if leads:
            peers = s.partition_replica_state[i - 1]
            known.append(("follower LEOs", ", ".join(f"{f}:{p.leo or '-'}" for f, p in enumerate(peers, 1))))
        brokers.append({"id": i, "status": BROKER_STATUS.show(b.status), "role": ROLE.show(role) if role else "",
                        "log": [{"epoch": r.epoch, "label": VALUE_NAMES[r.value - 1] if r.value else r.epoch,
                                 "text": f"value {VALUE_NAMES[r.value - 1] if r.value else '-'}"} for r in data.log],
                        # offsets start at 1 (the TLA+ specification's): offset n is the boundary before record n - 1
                        "marks": [("HWM", data.hwm, data.hwm - 1), ("LEO", data.leo, data.leo - 1),
                                  ("LESO", leso if leads and leso else None, leso - 1)],
                        "known": known, "maximal_isr": as_set(meta.maximal_isr) if leads else None})
    network = spec.schema.fields["messages"]
    in_flight, messages = [], []
    for kind, bag in s.messages._asdict().items():
        for message in bag:
            text = f"{kind.replace('_', ' ')[:-1]}: {network.fields[kind].item.show(message)}"
            in_flight.append(text)
            messages.append({**_ends_and_staleness(kind, message, s), "label": MESSAGE_LABELS[kind], "text": text})
    history = [("true HWM", str(s.inv_true_hwm)), ("sent", as_set(s.inv_sent)),
               ("acknowledged", as_set(s.inv_pos_acked)), ("refused", as_set(s.inv_neg_acked))]
    return {"kind": "replicated_log", "controller": controller, "brokers": brokers, "in_flight": in_flight,
            "messages": messages, "history": history}


MESSAGE_LABELS = {"register_broker_requests": "BrokerRegistration", "register_broker_responses": "registered",
                  "alter_partition_requests": "AlterPartition", "alter_partition_responses": "AP response",
                  "fetch_requests": "Fetch", "fetch_responses": "FetchResponse"}


def _ends_and_staleness(kind: str, m, s: State) -> dict:
    """A message's sender and receiver for the explorer's timeline, and why it is stale where it is: an
    AlterPartition of an older partition epoch than the controller's, a Fetch of an older leader epoch than
    its leader's."""
    c = s.con_partition_metadata
    if kind == "register_broker_requests":
        return {"src": f"broker {m.broker_id}", "dst": "controller", "stale": ""}
    if kind in ("register_broker_responses", "alter_partition_responses"):
        return {"src": "controller", "dst": f"broker {m.dest}", "stale": ""}
    if kind == "alter_partition_requests":
        older = m.partition_epoch < c.partition_epoch
        return {"src": f"broker {m.source}", "dst": "controller",
                "stale": f"partition epoch {m.partition_epoch} < the controller's {c.partition_epoch}" if older else ""}
    known = s.partition_metadata[m.dest - 1].leader_epoch
    older = kind == "fetch_requests" and m.leader_epoch < known
    return {"src": f"broker {m.source}", "dst": f"broker {m.dest}",
            "stale": f"leader epoch {m.leader_epoch} < broker {m.dest}'s {known}" if older else ""}


# Symmetry: none. The TLA+ `Init` gives broker b incarnation id and broker epoch b, so no two brokers start
# alike (tests/test_symmetry.py found permuted reachable states unreachable); --symmetry reduces nothing here.
spec.symmetry(lambda cfg: [])
