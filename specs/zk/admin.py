"""The zk model's admin: the reassignment it submits through /admin/reassign_partitions (its API calls,
AlterPartitionReassignments, are the controller's rules: the controller handles them in its event).

Citations as in `specs.zk`.
"""

from __future__ import annotations

from harness.bitset import mask
from specs.zk import spec
from specs.zk.logic import TARGET, kafka, origin_of, spend, submittable, targets
from specs.zk.state import CANCELLING, IN_PROGRESS


@spec.rule(target=targets, format=TARGET, precondition=submittable)
def create_reassign_znode(cfg, s, target):
    """Admin: creates /admin/reassign_partitions with the partition's target (kafka-reassign-partitions
    before KIP-455, and still accepted by Kafka 3.9). Not validated: a target on a dead broker is
    accepted (`KafkaController.processZkPartitionReassignment`).

    Who acts: the admin (kafka-reassign-partitions, or any client writing the znode).
    Enabled when: the znode is absent and the budget allows; seed: the target differs from RS (kafka:
    a target equal to RS, or the running reassignment's target, is a submission too).
    Next: the znode holds the target; its creation is an event queued for the active controller.
    The submitter's reassignment is the target, from the replicas it believes current.
    """
    trs = cfg.targets[target]
    if s.zk.admin or trs == s.zk.rs and not kafka(cfg):
        return None
    if kafka(cfg):
        origin = origin_of(s.zk) if s.status in (IN_PROGRESS, CANCELLING) else s.zk.rs
    else:
        origin = s.zk.rs
    ors = s.ors if s.status == IN_PROGRESS else mask(origin)
    c = s.controller._replace(znode_event=True) if s.controller.epoch else s.controller
    return s._replace(zk=s.zk._replace(admin=trs), controller=c, budget=spend(s, reassignments=1),
                      status=IN_PROGRESS, ors=ors, trs=trs)
