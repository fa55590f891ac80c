"""How `harness explore` draws a kraft state: the controller's partition metadata, each broker's log by
leader epoch with its marks (HWM, LEO, LESO), a leader's Maximal ISR, and the messages in flight."""

from __future__ import annotations

from harness.bitset import as_list, as_set, bit
from harness.itf import OptId
from harness.symmetry import unnamed_ids
from specs.kraft import spec
from specs.kraft.state import (AWAITING_METADATA, BROKER_STATUS, FENCED, NO_RESPONSE_YET, RESPONSE_STATUS, KraftConfig,
                               State)


@spec.protocol_view
def drawn(cfg: KraftConfig, s: State) -> dict:
    """The state as `harness explore` draws a replicated log (template views/replicated_log.html): the
    controller's partition metadata, each broker's log by leader epoch with its marks and what it has
    learned, a leader's Maximal ISR, and the AlterPartition requests and responses in flight (also as
    `messages` for the explorer's timeline, a request of an older partition epoch marked stale)."""
    p = s.partition
    controller = [("replicas", as_list(p.replicas)), ("ISR", as_set(p.isr)), ("ELR", as_set(p.elr)),
                  ("last known ELR", as_set(p.last_known_elr)), ("leader", OptId().show(p.leader)),
                  ("leader epoch", str(p.leader_epoch)), ("partition epoch", str(p.partition_epoch)),
                  ("adding", as_set(p.adding)), ("removing", as_set(p.removing)),
                  ("recovering", str(p.recovering))]
    brokers, in_flight, messages = [], [], []
    for i, b in enumerate(s.brokers, 1):
        running = b.status >= FENCED
        leads = running and b.known_leader == i
        role = "leader" if leads else "follower" if running and b.known_replicas & bit(i) else ""
        known = [("broker epoch", str(b.epoch)), ("leader", OptId().show(b.known_leader)),
                 ("leader epoch", str(b.known_leader_epoch)), ("partition epoch", str(b.known_partition_epoch)),
                 ("ISR", as_set(b.known_isr)), ("replicas", as_set(b.known_replicas))]
        if leads:
            known += [("follower LEOs", ", ".join(f"{f}:{leo}" for f, leo in enumerate(b.follower_leo, 1))),
                      ("fetched, expansion not yet proposed", as_set(b.fetched))]
        brokers.append({"id": i, "status": BROKER_STATUS.show(b.status), "role": role,
                        "log": [{"epoch": e} for e in b.log],
                        "marks": [("HWM", b.hwm, b.hwm), ("LEO", len(b.log), len(b.log)),
                                  ("LESO", b.leso if leads else None, b.leso)],
                        "known": known, "maximal_isr": as_set(b.maximal_isr) if leads else None})
        req, response = b.pending, b.response
        if req.isr and response.status == NO_RESPONSE_YET:
            text = (f"AlterPartition broker {i} -> controller: ISR {as_set(req.isr)}, leader epoch "
                    f"{req.leader_epoch}, partition epoch {req.partition_epoch}")
            in_flight.append(text)
            stale = (f"partition epoch {req.partition_epoch} < the controller's {p.partition_epoch}"
                     if req.partition_epoch < p.partition_epoch else "")
            messages.append({"src": f"broker {i}", "dst": "controller", "label": "AlterPartition", "text": text,
                             "stale": stale})
        elif NO_RESPONSE_YET < response.status < AWAITING_METADATA:
            text = (f"AlterPartition response controller -> broker {i}: "
                    f"{RESPONSE_STATUS.show(response.status)}, ISR {as_set(response.isr)}, leader epoch "
                    f"{response.leader_epoch}, partition epoch {response.partition_epoch}")
            in_flight.append(text)
            messages.append({"src": "controller", "dst": f"broker {i}", "text": text, "stale": "",
                             "label": RESPONSE_STATUS.show(response.status).lower().replace("_", " ")})
        elif response.status == AWAITING_METADATA:
            in_flight.append(f"broker {i} awaits metadata newer than partition epoch {req.partition_epoch}")
    history = [("committed (epochs)", as_list(s.committed)), ("acknowledged", as_list(s.acked)),
               ("budget", ", ".join(f"{k} {v}" for k, v in s.budget._asdict().items()))]
    return {"kind": "replicated_log", "controller": controller, "brokers": brokers, "in_flight": in_flight,
            "messages": messages, "history": history}


def interchangeable(cfg: KraftConfig) -> list[tuple[int, ...]]:
    """Symmetry: the brokers the config names nowhere (no replica, ISR member, leader or target) behave alike."""
    return unnamed_ids(cfg.brokers, cfg.replicas, cfg.isr, [cfg.leader], *cfg.targets)


spec.symmetry(interchangeable, id_fields=("replicas",))  # the partition's ordered replica list
