"""The operator's rule in `kip435`: dynamic changes of R, P and L between batches (KIP-435, Proposed
Changes: the reassignment.parallel.* configs are dynamic)."""

from __future__ import annotations

from specs.kip435 import spec
from specs.kip435.state import Limits


def small(cfg):
    return range(1, 3)


@spec.rule(r=small, p=small, l=small, applies=lambda cfg: cfg.max_config_changes > 0,
           precondition=lambda cfg, s: s.config_changes > 0 and not any(p.target for p in s.partitions))
def change_config(cfg, s, r, p, l):
    """Operator: sets R, P and L dynamically between batches (KIP-435, Proposed Changes).

    Who acts: the operator (admin), with the budget `max_config_changes`.
    Enabled when: changes are left, no step is running, and (r, p, l) differ from the current limits.
    Next: the limits become (r, p, l); only the next step calculation reads them, the running steps are
    left as they are."""
    if Limits(r, p, l) == s.limits:
        return None
    # the last batch's counts were checked against the limits it was collected under
    return s._replace(limits=Limits(r, p, l), config_changes=s.config_changes - 1, leader_moves=0, batch_size=0)
