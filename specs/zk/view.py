"""How the explorer draws a zk state (`harness explore`, template views/zk.html)."""

from __future__ import annotations

from harness.bitset import as_list, as_set
from harness.itf import OptId
from harness.symmetry import unnamed_ids
from specs.zk import spec
from specs.zk.logic import kafka
from specs.zk.state import (A0, IDLE, LEADER_AND_ISR, REQUEST_KIND, RESUME, ROLE, STATUS, STEP, U1, U3_DELETE,
                            U3_OFFLINE, Controller, State, ZkConfig)

REQUEST_NAMES = {"LEADER_AND_ISR": "LeaderAndIsr", "STOP_REPLICA": "StopReplica",
                 "STOP_REPLICA_DELETE": "StopReplica(delete)"}  # Kafka's API names, as on the wire


def phase_steps(cfg: ZkConfig) -> list[str]:
    """The steps of a reassignment event the variant's controller runs, in order (the seed comment's A/B
    phases; Kafka's U steps of an update instead of A0)."""
    skipped = {IDLE, RESUME} | ({A0} if kafka(cfg) else {U1, U3_OFFLINE, U3_DELETE})
    return [STEP.show(step) for step in range(len(STEP.names)) if step not in skipped]


@spec.protocol_view
def drawn(cfg: ZkConfig, s: State) -> dict:
    """The state as `harness explore` draws a ZooKeeper-era reassignment (template views/zk.html): the phase
    (the submitter's status and the controller's step along the A/B phases), ZooKeeper's znodes, the active
    and the deposed controller, each broker with its role, log and the requests in flight to it, and those
    messages for the timeline (a request of an older controller epoch marked stale)."""
    def controller_rows(c: Controller) -> list:
        return [("epoch", str(c.epoch)), ("step", STEP.show(c.step)), ("assignment (RS)", as_list(c.rs)),
                ("adding", as_set(c.adding)), ("removing", as_set(c.removing)), ("stopping", as_set(c.stopping)),
                ("started", as_set(c.started)), ("live brokers", as_set(c.live))]

    z = s.zk
    request = spec.schema.fields["brokers"].item.fields["inbox"].item
    znodes = [
        {"path": "/brokers/topics/t", "rows": [("replicas (RS)", as_list(z.rs)), ("adding (AR)", as_set(z.adding)),
                                               ("removing (RR)", as_set(z.removing))]},
        {"path": "/brokers/topics/t/partitions/0/state", "rows": [
            ("leader", OptId().show(z.leader)), ("leader epoch", str(z.leader_epoch)), ("ISR", as_set(z.isr)),
            ("zkVersion", str(z.version)), ("written by controller epoch", str(z.state_ctrl_epoch))]},
        {"path": "/admin/reassign_partitions", "rows": [("target", as_list(z.admin))] if z.admin else []},
        {"path": "/controller_epoch", "rows": [("epoch", str(z.controller_epoch))]},
    ]
    controllers = [{"title": f"controller (epoch {s.controller.epoch})", "rows": controller_rows(s.controller),
                    "step": STEP.show(s.controller.step)}]
    if s.zombie.epoch:
        controllers.append({"title": f"deposed controller (zombie, epoch {s.zombie.epoch})",
                            "rows": controller_rows(s.zombie), "step": STEP.show(s.zombie.step), "zombie": True})
    brokers, messages = [], []
    for i, b in enumerate(s.brokers, 1):
        role = ROLE.show(b.role)
        brokers.append({
            "id": i, "status": "alive" if b.alive else "crashed", "role": "" if role == "NONE" else role,
            "log": [{"epoch": e} for e in b.log], "marks": [("HWM", b.hwm, b.hwm), ("LEO", len(b.log), len(b.log))],
            "known": [("controller epoch seen", str(b.ctrl_epoch)), ("leader", OptId().show(b.leader)),
                      ("leader epoch", str(b.leader_epoch)), ("ISR", as_set(b.isr)), ("replicas", as_set(b.replicas))],
            "inbox": [request.show(r) for r in b.inbox]})
        for r in b.inbox:
            name = REQUEST_NAMES[REQUEST_KIND.show(r.kind)]
            older = r.ctrl_epoch < z.controller_epoch
            stale = (f"controller epoch {r.ctrl_epoch} < {z.controller_epoch}"
                     + (": the zombie's" if r.ctrl_epoch == s.zombie.epoch else ": a deposed controller's")) if older else ""
            label = f"{name} e{r.leader_epoch}" if r.kind == LEADER_AND_ISR else name
            messages.append({"src": "controller", "dst": f"broker {i}", "label": label,
                             "text": request.show(r), "stale": stale})
        if b.alter:
            messages.append({"src": f"broker {i}", "dst": "controller", "label": "AlterPartition",
                             "text": f"AlterPartition ISR {as_set(b.alter)}, leader epoch {b.leader_epoch}", "stale": ""})
    reassignment = [("status", STATUS.show(s.status)), ("original replicas (ORS)", as_set(s.ors)),
                    ("target (TRS)", as_list(s.trs))]
    return {"kind": "zk", "status": STATUS.show(s.status), "steps": phase_steps(cfg),
            "step": STEP.show(s.controller.step), "reassignment": reassignment, "znodes": znodes,
            "controllers": controllers, "brokers": brokers, "messages": messages}


def interchangeable(cfg: ZkConfig) -> list[tuple[int, ...]]:
    """Symmetry: the brokers the config names nowhere (no initial replica or target) behave alike."""
    return unnamed_ids(cfg.brokers, cfg.replicas, *cfg.targets)


spec.symmetry(interchangeable, id_fields=("rs", "admin", "trs"))  # replica lists: RS (in ZooKeeper, a controller's), TRS
