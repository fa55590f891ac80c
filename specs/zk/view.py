"""How the explorer draws a zk state (`harness explore`, template views/assignment.html)."""

from __future__ import annotations

from harness.bitset import as_list, as_set
from harness.itf import OptId
from harness.symmetry import unnamed_ids
from specs.zk import spec
from specs.zk.state import ROLE, STATUS, STEP, Controller, State, ZkConfig


@spec.protocol_view
def drawn(cfg: ZkConfig, s: State) -> dict:
    """The state as `harness explore` draws an assignment (template views/assignment.html): the phase (the
    submitter's status and the step the controller is at), ZooKeeper's assignment and partition state, the
    controllers' contexts, and each broker with the requests in flight to it."""
    def controller_rows(c: Controller) -> list:
        return [("epoch", str(c.epoch)), ("step", STEP.show(c.step)), ("assignment (RS)", as_list(c.rs)),
                ("adding", as_set(c.adding)), ("removing", as_set(c.removing)), ("stopping", as_set(c.stopping)),
                ("started", as_set(c.started)), ("live brokers", as_set(c.live))]

    z = s.zk
    sections = [
        {"title": "reassignment", "rows": [("status", STATUS.show(s.status)), ("original replicas (ORS)", as_set(s.ors)),
                                           ("target (TRS)", as_list(s.trs))]},
        {"title": "ZooKeeper", "rows": [
            ("assignment (RS)", as_list(z.rs)), ("adding (AR)", as_set(z.adding)), ("removing (RR)", as_set(z.removing)),
            ("/admin/reassign_partitions", as_list(z.admin) if z.admin else "absent"),
            ("leader", OptId().show(z.leader)), ("leader epoch", str(z.leader_epoch)), ("ISR", as_set(z.isr)),
            ("zkVersion", str(z.version)), ("controller epoch", str(z.controller_epoch))]},
        {"title": "controller", "rows": controller_rows(s.controller)},
    ]
    if s.zombie.epoch:
        sections.append({"title": "deposed controller (zombie)", "rows": controller_rows(s.zombie)})
    request = spec.schema.fields["brokers"].item.fields["inbox"].item
    for i, b in enumerate(s.brokers, 1):
        rows = [("alive", str(b.alive)), ("role", ROLE.show(b.role)), ("leader", OptId().show(b.leader)),
                ("leader epoch", str(b.leader_epoch)), ("ISR", as_set(b.isr)), ("replicas", as_set(b.replicas)),
                ("log (epochs)", as_list(b.log)), ("HWM", str(b.hwm))]
        rows += [(f"in flight {n}", request.show(r)) for n, r in enumerate(b.inbox, 1)]
        sections.append({"title": f"broker {i}", "rows": rows})
    phase = f"{STATUS.show(s.status)}, controller at {STEP.show(s.controller.step)}"
    return {"kind": "assignment", "phase": phase, "sections": sections}


def interchangeable(cfg: ZkConfig) -> list[tuple[int, ...]]:
    """Symmetry: the brokers the config names nowhere (no initial replica or target) behave alike."""
    return unnamed_ids(cfg.brokers, cfg.replicas, *cfg.targets)


spec.symmetry(interchangeable, id_fields=("rs", "admin", "trs"))  # replica lists: RS (in ZooKeeper, a controller's), TRS
