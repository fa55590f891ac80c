"""The controller's rules in `kip435`: it collects a batch of reassignment steps and starts them, elects a
step's new preferred leader, and finishes a step by forcing its dropped replicas out of the ISR and deleting
them (KIP-435, "Collecting a reassignment batch" and "Performing reassignment for a single partition")."""

from __future__ import annotations

from harness.bitset import mask
from specs.kip435 import spec
from specs.kip435.state import NO_LEADER
from specs.kip435.logic import compute, elect, in_sync, moves_leader, partitions, set_partition, top_up_count


@spec.rule(fair=True, precondition=lambda cfg, s: not any(p.target for p in s.partitions))
def collect_batch(cfg, s):
    """Controller: collects a batch of reassignment steps and starts them (KIP-435, "Performing reassignment
    for a single partition", steps 1-5).

    Who acts: the controller.
    Enabled when: no step is running, and some partition not at its FTR has an in-sync replica and a next
    step that changes its assignment (step 2).
    Next: it computes the next step of every such partition and collects a batch of at most P, leader
    movements first (`pseudocode`) or at most L of them (`described`), and starts each: CR becomes TR plus
    DR (DR are deleted at the end of the step), NR start as new replicas."""
    moves, others = [], []
    for i, p in enumerate(s.partitions):
        if p.replicas == cfg.targets[i] or not (p.isr & s.alive):
            continue
        st = compute(cfg, s.limits, i, p)
        if st.tr == p.replicas:
            continue
        (moves if moves_leader(cfg, p, st) else others).append((i, st))
    if not moves and not others:
        return None
    if cfg.batch == "pseudocode" or cfg.mutated.ignore_l:
        chosen = (moves + others)[:s.limits.p]
    else:
        chosen = moves[:min(s.limits.l, s.limits.p)]
        chosen += others[:s.limits.p - len(chosen)]
    parts = s.partitions
    for i, st in chosen:
        p = parts[i]
        cur = p.replicas
        parts = parts[:i] + (p._replace(replicas=st.tr + tuple(b for b in cur if b in st.dr), adding=mask(st.nr),
                                        removing=mask(st.dr), target=st.tr, step_isr=top_up_count(cfg, p, st.dr),
                                        step_r=s.limits.r),) + parts[i + 1:]
    # the leaders the batch moves, whatever `moves` counted: each step ends with TR's first replica leading
    n_moves = sum(1 for i, st in chosen if st.tr[0] != s.partitions[i].leader)
    return s._replace(partitions=parts, leader_moves=n_moves, batch_size=len(chosen))


@spec.rule(partition=partitions, fair=True)
def elect_preferred_leader(cfg, s, partition):
    """Controller: elects the running step's new preferred leader as soon as it is in sync (KIP-435,
    "Proposed Changes": the new preferred leader is elected in the first step).

    Who acts: the controller, for `partition`.
    Enabled when: a step is running whose TR's first replica is not the leader, and is live and in sync.
    Next: TR's first replica leads."""
    p = s.partitions[partition]
    if not p.target or p.leader == p.target[0]:
        return None
    b = p.target[0]
    if not (p.isr >> b & 1 and s.alive >> b & 1):
        return None
    return s._replace(partitions=set_partition(s, partition, p._replace(leader=b)))


@spec.rule(partition=partitions, fair=True)
def drop_replicas(cfg, s, partition):
    """Controller: finishes a partition's running step (KIP-435, "Performing reassignment for a single
    partition", steps 7-10).

    Who acts: the controller, for `partition`.
    Enabled when: a step is running and the replicas `wait` names are in the ISR (none, NR, or every TR
    replica).
    Next: TR's first replica leads if it is live and stays in sync (the new preferred leader of the first
    step), else the current leader stays if it is a live replica of TR, else the first live in-sync replica
    of TR; DR are forced out of the ISR and deleted; CR = TR."""
    p = s.partitions[partition]
    if not p.target:
        return None
    waits_for = {"target": mask(p.target), "new": p.adding, "none": 0}[cfg.wait]
    if not cfg.mutated.drop_before_in_sync and waits_for & ~p.isr:
        return None
    isr = p.isr & ~p.removing
    lost = s.lost or (partition + 1 if isr == 0 and p.isr != 0 else 0)
    after = p._replace(isr=isr, replicas=p.target, adding=0, removing=0, target=(), steps=p.steps + 1)
    first = p.target[0]
    leader = p.leader
    if isr >> first & 1 and s.alive >> first & 1 and not cfg.mutated.keep_leader:
        leader = first
    elif leader == NO_LEADER or leader not in p.target or not s.alive >> leader & 1:
        leader = elect(after, s.alive, p.target)
    after = after._replace(leader=leader)
    floor = min(cfg.min_isr, p.start_isr, len(cfg.targets[partition]))
    shrunk = s.shrunk or (partition + 1 if in_sync(after) < floor <= in_sync(p) else 0)
    preferred = cfg.targets[partition][0]
    late = s.late or (partition + 1 if p.steps == 0 and p.adding >> preferred & 1 and leader != preferred
                      and isr >> preferred & 1 and s.alive >> preferred & 1 else 0)
    return s._replace(partitions=set_partition(s, partition, after), lost=lost, shrunk=shrunk, late=late)
