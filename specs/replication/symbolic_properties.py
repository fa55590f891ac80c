"""The replication model's properties and strengthening lemmas as Z3 formulas over the symbolic state of
`specs/replication/symbolic.py` (its relation and field layout); `invariants/replication.py` registers them,
`prove` and BMC read them. Why each lemma holds: docs/models/replication.md, "What prove closes"."""

from __future__ import annotations

import itertools

import z3

from harness.bitset import bit
from specs.replication.state import (AP_REQ, AP_RESP, FETCH_REQ, FETCH_RESP, FOLLOWER, LEADER, NO_ERROR, NO_ROLE,
                                     REG_REQ, REG_RESP, RUNNING)
from specs.replication.symbolic import COUNTERS, RECORD, _bit, _count, _eq, _has, _select, _set

# ---------------------------------------------------------------------------------- the properties

def _member_of(s, who, b):
    return who == b


def leader_completeness(s):
    cfg, n = s["cfg"], s["n"]
    out = []
    for b in range(1, n + 1):
        holds = [z3.Or(*[z3.And(i < s[f"leo{b}"], s[f"lval{b}_{i}"] == v) for i in range(1, cfg.values + 1)])
                 for v in range(1, cfg.values + 1)]
        complete = z3.And(s[f"leo{b}"] >= s["thwm"], *[z3.Implies(_bit(s["acked"], v), holds[v - 1])
                                                      for v in range(1, cfg.values + 1)])
        out.append(z3.Implies(z3.And(s["C_L"] == b, s[f"bst{b}"] == RUNNING), complete))
    return z3.Or(s["thwm"] <= 1, z3.And(*out))


def leader_candidate_completeness(s):
    n = s["n"]
    return z3.Or(s["thwm"] <= 1, z3.And(*[z3.Implies(z3.And(_bit(s["C_I"] | s["C_E"], b), s[f"bst{b}"] == RUNNING),
                                                     s[f"leo{b}"] >= s["thwm"]) for b in range(1, n + 1)]))


def replication_quorum_superset(s):
    cfg, n = s["cfg"], s["n"]
    out = []
    for b in range(1, n + 1):
        current = z3.And(s[f"role{b}"] == LEADER, s[f"rle{b}"] == s["C_le"])
        pending = s[f"pape{b}"] > s[f"rpe{b}"]
        superset = (s["C_I"] | s["C_E"]) & ~s[f"rX{b}"] == 0
        if cfg.kip966:
            superset = z3.Or(superset, _count(s[f"rI{b}"]) < cfg.min_isr)
        out.append(z3.Implies(current, z3.And(z3.Or(pending, s[f"rX{b}"] == s[f"rI{b}"]), superset)))
    return z3.And(*out)


def log_matching(s):
    cfg, n = s["cfg"], s["n"]
    out = []
    for o in range(1, cfg.values + 1):
        for b, c in itertools.combinations(range(1, n + 1), 2):
            below = z3.And(*[z3.And(s[f"leo{x}"] > o, s[f"hwm{x}"] > o) for x in (b, c)])
            out.append(z3.Implies(below, s[f"lval{b}_{o}"] == s[f"lval{c}_{o}"]))
    return z3.And(*out)


def metadata_log_matching(s):
    n, rel = s["n"], s["rel"]
    out = []
    for b in range(1, n + 1):
        out.append(s[f"blen{b}"] <= s["clen"])
        out += [z3.Implies(i <= s[f"blen{b}"], s[f"bl{b}_{i}"] == rel.code(rel.record(s, i), n))
                for i in range(1, rel.Mb + 1)]
    return z3.And(*out)


def min_isr_recovery_quorum(s):
    cfg = s["cfg"]
    return z3.Or(s["C_I"] != 0, s["C_E"] != 0, _count(s["C_K"]) == cfg.min_isr)


# Strengthening lemmas (docs/models/replication.md, "What prove closes"): each holds on every state the model
# reaches (tests/test_replication_z3.py), and removes a family of CTIs' impossible pre-states.

def lemma_hwm_within_log(s):
    """A replica's HWM is at most its log end: it advances only to committed offsets of its own log, a
    follower takes the leader's HWM only where it falls within its log, and an emptied log restarts at 1."""
    return z3.And(*[s[f"hwm{b}"] <= s[f"leo{b}"] for b in range(1, s["n"] + 1)])


def lemma_hwm_within_true_hwm(s):
    """No replica's HWM passes the true HWM: every leader advance raises the true HWM with it, and a follower
    copies an HWM a leader had."""
    return z3.And(*[s[f"hwm{b}"] <= s["thwm"] for b in range(1, s["n"] + 1)])


def lemma_fetch_between_two_brokers(s):
    """Every fetch request and response in flight goes between two distinct brokers: a follower fetches
    only from another broker, and the response goes back to the request's source."""
    rel, n = s["rel"], s["n"]
    return z3.And(*[z3.Implies(p, z3.And(xs[0] != xs[1], xs[0] >= 1, xs[0] <= n, xs[1] >= 1, xs[1] <= n))
                    for kind in (FETCH_REQ, FETCH_RESP) for p, xs in rel.slots(s, kind)])


def _msgs(s, kind):
    return s["rel"].slots(s, kind)


def lemma_budgets(s):
    """No fault budget is overspent: each counter of `aux_ctrs` rises by one only under the guard that it is
    below the config's limit."""
    cfg = s["cfg"]
    limits = {"cs": cfg.clean_shutdown_limit, "us": cfg.unclean_shutdown_limit, "fb": cfg.fence_broker_limit,
              "ls": cfg.leader_shrink_isr_limit, "ra": cfg.reassignment_limit}
    return z3.And(*[s[c] <= limits[c] for c in COUNTERS])


def lemma_controller_is_last_record(s):
    """The controller's partition state is its metadata log's last record, and the slots past the log's end
    are blank: ApplyPartitionChange sets both to the same record, and nothing else writes either."""
    rel = s["rel"]
    out = []
    for i in range(1, rel.Mb + 1):
        rec = rel.record(s, i)
        out.append(z3.Implies(s["clen"] == i, z3.And(*[s[f"C_{f}"] == rec[f] for f in RECORD])))
        out.append(z3.Implies(s["clen"] < i, z3.And(*[rec[f] == 0 for f in RECORD])))
    return z3.And(*out)


def lemma_leader_in_isr(s):
    """The controller's leader, if any, is an ISR member: every election picks it from the new ISR (or, with
    KIP-966, from the ELR, making it the ISR), and a leader that leaves the ISR is replaced."""
    n = s["n"]
    return z3.And(s["C_L"] <= n, z3.Implies(s["C_L"] != 0, _has(s["C_I"], s["C_L"], n)))


def lemma_no_election_before_a_fault(s):
    """Until the first fault (every `aux_ctrs` counter still 0: no shutdown, fencing, ISR shrink or
    reassignment) the controller never elects: it changes the leader only when the leader leaves the ISR or
    the partition is leaderless, and only a fault causes either. So, before a fault:
    * Init's leader (broker 1) leads in leader epoch 1 in the controller's state, in every metadata record
      and in every replica's metadata; the replicas are Init's, the ISR only grows (the leader's
      AlterPartition requests only add caught-up followers: shrinking one is a fault), and there is no
      reassignment or ELR; every broker runs, registered under Init's epoch and incarnation, and no
      registration is in flight; the true HWM is the leader's HWM (only it advances one);
    * the controller is at most one change ahead of the leader: the record of its pending AlterPartition,
      which is then accepted (its response, if in flight, carries no error) and not otherwise;
    * one leader epoch means nothing diverges: the followers fetch only from the leader, their logs are
      prefixes of the leader's (only it writes), a fetch request carries its sender's log end and last
      epoch (the log does not change while the fetch is in flight), and a fetch response carries the
      leader's record at the follower's log end."""
    cfg, n, rel = s["cfg"], s["n"], s["rel"]
    R = sum(bit(b) for b in range(1, cfg.init_replication_factor + 1))
    Rv = z3.BitVecVal(R, n + 1)
    Iv = z3.BitVecVal(sum(bit(b) for b in range(1, cfg.init_isr_size + 1)), n + 1)
    out = [s["thwm"] == s["hwm1"]]
    for i in [None, *range(1, rel.Mb + 1)]:
        rec = rel.record(s, i)
        out.append(z3.Implies(z3.BoolVal(i is None) if i is None else i <= s["clen"],
                              z3.And(rec["L"] == 1, rec["le"] == 1, rec["R"] == Rv, rec["I"] & Iv == Iv, rec["A"] == 0,
                                     rec["M"] == 0, rec["E"] == 0, rec["K"] == 0)))
    for b in range(1, n + 1):
        out += [s[f"bst{b}"] == RUNNING, s[f"breg{b}"], s[f"bep{b}"] == b, s[f"binc{b}"] == b,
                s[f"creg_ep{b}"] == b, s[f"creg_inc{b}"] == b]
        if R >> b & 1:
            out += [s[f"rL{b}"] == 1, s[f"rle{b}"] == 1, s[f"rR{b}"] == Rv,
                    s[f"role{b}"] == (LEADER if b == 1 else FOLLOWER)]
        else:
            out += [s[f"rle{b}"] == 0, s[f"role{b}"] == NO_ROLE]
    out += [z3.Not(p) for kind in (REG_REQ, REG_RESP) for p, _ in _msgs(s, kind)]
    out += [z3.Implies(p, z3.And(m[0] == 1, _set(m[1], n + 1) & Iv == Iv)) for p, m in _msgs(s, AP_REQ)]
    out.append(z3.Implies(s["papq1"], _set(s["papq1_1"], n + 1) & Iv == Iv))
    # the only record the leader may not know yet is the one its pending AlterPartition produced
    out.append(z3.Or(s["C_pe"] == s["rpe1"], z3.And(s["C_pe"] == s["rpe1"] + 1, s["pape1"] == s["C_pe"], s["papq1"],
                                                   s["C_I"] == _set(s["papq1_1"], n + 1))))
    # its pending AlterPartition is accepted exactly when the controller is one change ahead of it
    accepted = s["C_pe"] == s["rpe1"] + 1
    w = rel.msg_width(AP_REQ, n)
    req1 = [s[f"papq1_{k}"] for k in range(w)]
    pending = z3.And(s["papq1"], s["pape1"] > s["rpe1"])
    out += [z3.Implies(z3.And(p, pending, _eq(m, req1)), z3.Not(accepted)) for p, m in _msgs(s, AP_REQ)]
    out += [z3.Implies(z3.And(p, pending, m[0] == 1, _eq(m[7:], req1)), (m[1] == NO_ERROR) == accepted)
            for p, m in _msgs(s, AP_RESP)]
    # one leader epoch: nothing diverges, and every fetch response answers in it
    out += [z3.Implies(p, z3.And(m[5] == 0, m[3] == 1)) for p, m in _msgs(s, FETCH_RESP)]
    out += [z3.Implies(p, m[3] == 1) for p, m in _msgs(s, FETCH_REQ)]
    out += [s[f"leo{b}"] <= s["leo1"] for b in range(2, n + 1)]  # only the leader writes; followers copy
    out += [z3.Not(s[f"f{b}_{c}_p"]) for b in range(1, n + 1) for c in range(1, n + 1) if b == 1 or c != 1]
    # a follower's log does not change while its fetch is in flight; the leader answers from its own log
    logs = {b: rel._log(s, b) for b in range(1, n + 1)}
    for p, m in _msgs(s, FETCH_REQ):
        out += [z3.Implies(z3.And(p, m[0] == c), z3.And(m[4] == s[f"leo{c}"], m[5] == rel._last_epoch(logs[c], s[f"leo{c}"])))
                for c in range(1, n + 1)]
    for p, m in _msgs(s, FETCH_RESP):
        out += [z3.Implies(z3.And(p, m[1] == c), m[4] == s[f"leo{c}"]) for c in range(1, n + 1)]
        out.append(z3.Implies(p, z3.And(m[9] <= 1, z3.Implies(m[9] == 1, z3.And(
            m[4] < s["leo1"], m[10] == _select(m[4], [e for e, _ in logs[1]], z3.BitVecVal(0, s["rel"].W)),
            m[12] == _select(m[4], [v for _, v in logs[1]], z3.BitVecVal(0, s["rel"].W))))))) 
    faults = s["cs"] + s["us"] + s["fb"] + s["ls"] + s["ra"]
    return z3.Implies(faults == 0, z3.And(*out))


def lemma_log_records(s):
    """Every record in a log or in a fetch response was written by a leader: its value was sent (1..values,
    each once) and its epoch is a leader epoch the controller has reached (1..C_le); a response's record is
    at the offset fetched, and its HWM one a leader had (at most the true HWM); acknowledged values were sent."""
    n, V = s["n"], s["cfg"].values
    out = []

    def good(ep, val):
        return z3.And(ep >= 1, ep <= s["C_le"], val >= 1, val <= V,
                      z3.Or(*[z3.And(val == v, _bit(s["sent"], v)) for v in range(1, V + 1)]))
    for b in range(1, n + 1):
        for i in range(1, V + 1):
            out.append(z3.Implies(i < s[f"leo{b}"], good(s[f"lep{b}_{i}"], s[f"lval{b}_{i}"])))
    for p, m in _msgs(s, FETCH_RESP):
        out.append(z3.Implies(z3.And(p, m[9] == 1), z3.And(good(m[10], m[12]), m[11] == m[4])))
        out.append(z3.Implies(p, m[8] <= s["thwm"]))  # the HWM a leader had
    out.append(s["acked"] & ~s["sent"] == 0)
    return z3.And(*out)


def lemma_fetcher_at_log_end(s):
    """An added fetcher holds its broker's log end and last epoch (it is set from the log whenever the log
    changes: append, truncation, a fresh fetcher; only a follower with a fetcher changes its log that way),
    points at another broker, is not a leader's (becoming leader removes them), and a follower's points at
    its leader (Init gives every other broker, replica or not, a fetcher towards broker 1)."""
    n, rel = s["n"], s["rel"]
    out = []
    for b in range(1, n + 1):
        last = rel._last_epoch(rel._log(s, b), s[f"leo{b}"])
        for c in range(1, n + 1):
            out.append(z3.Implies(s[f"f{b}_{c}_a"], z3.And(s[f"f{b}_{c}_o"] == s[f"leo{b}"], s[f"f{b}_{c}_e"] == last,
                                                           s[f"role{b}"] != LEADER, c != b,
                                                           z3.Implies(s[f"role{b}"] == FOLLOWER, s[f"rL{b}"] == c))))
    return z3.And(*out)


def lemma_one_fetch_in_flight(s):
    """A fetcher waits (pending) exactly while its request or the response to it is in flight, and there is
    at most one: a follower sends only when not pending, the leader answers by replacing the request with
    the response, and receiving the response (or a shutdown dropping it) clears pending."""
    n = s["n"]
    out = []
    for c in range(1, n + 1):
        for b in range(1, n + 1):
            one = lambda x: z3.If(x, z3.BitVecVal(1, s["rel"].W), z3.BitVecVal(0, s["rel"].W))  # noqa: E731
            count = z3.Sum([one(z3.And(p, m[0] == c, m[1] == b)) for p, m in _msgs(s, FETCH_REQ)] +
                           [one(z3.And(p, m[0] == b, m[1] == c)) for p, m in _msgs(s, FETCH_RESP)])
            out.append(count == z3.If(s[f"f{c}_{b}_p"], z3.BitVecVal(1, s["rel"].W), z3.BitVecVal(0, s["rel"].W)))
    return z3.And(*out)


def lemma_fetch_offsets_within_logs(s):
    """Until an unclean shutdown or a reassignment (which empty a log: a data loss, a removed replica's
    deletion): a fetch request's offset is at most its sender's log
    end (a follower's log only grows between its fetches: it truncates only on a response, with none in
    flight), a leader's record of a follower's log end (`pleo`, taken from a fetch request) is at most that
    log end, and every running member of a leader's Maximal ISR has a log reaching the leader's HWM (the
    leader commits only up to its followers' recorded log ends, and proposes a follower for the ISR only once
    that reaches the HWM)."""
    n = s["n"]
    out = []
    for p, m in _msgs(s, FETCH_REQ):
        out.append(z3.Implies(p, z3.And(*[z3.Implies(m[0] == c, m[4] <= s[f"leo{c}"]) for c in range(1, n + 1)])))
    for b in range(1, n + 1):
        for c in range(1, n + 1):
            out.append(z3.Implies(z3.And(s[f"role{b}"] == LEADER, _bit(s[f"rX{b}"], c), s[f"bst{c}"] == RUNNING),
                                  s[f"leo{c}"] >= s[f"hwm{b}"]))
    for b in range(1, n + 1):
        for c in range(1, n + 1):
            out.append(z3.Implies(s[f"role{b}"] == LEADER, s[f"pleo{b}_{c}"] <= s[f"leo{c}"]))
    return z3.Implies(s["us"] + s["ra"] == 0, z3.And(*out))


def lemma_fetch_requests_well_formed(s):
    """A fetch request asks from offset 1 at least (its offset is its sender's fetcher's, which starts at
    an empty log's end, 1, and only moves to log ends), in a leader epoch the controller has reached, naming
    as its last fetched epoch that of a record in its sender's log (at most the controller's leader epoch)."""
    return z3.And(*[z3.Implies(p, z3.And(m[4] >= 1, m[3] <= s["C_le"], m[5] <= s["C_le"])) for p, m in _msgs(s, FETCH_REQ)])


def lemma_pending_alter_partition(s):
    """A pending AlterPartition request (partition epoch `pape` above the replica's) is kept by a leader and
    is the one it sent: at the partition epoch it had then, proposing a subset of its Maximal ISR (which it
    set to the proposal joined with its ISR), in flight once, as the request or its response (a leader sends
    only when nothing is pending; the controller replaces the request by its response; the response, or
    metadata at the request's epoch or later, ends the wait); a request the controller would accept (at its
    current partition epoch) is its sender's pending one."""
    n, rel = s["n"], s["rel"]
    w = rel.msg_width(AP_REQ, n)
    out = []
    for b in range(1, n + 1):
        req = [s[f"papq{b}_{k}"] for k in range(w)]
        pending = s[f"pape{b}"] > s[f"rpe{b}"]
        out.append(z3.Implies(pending, s[f"papq{b}"]))
        out.append(z3.Implies(s[f"papq{b}"], s[f"role{b}"] == LEADER))
        one = lambda x: z3.If(x, z3.BitVecVal(1, s["rel"].W), z3.BitVecVal(0, s["rel"].W))  # noqa: E731
        copies = z3.Sum([one(z3.And(p, _eq(m, req))) for p, m in _msgs(s, AP_REQ)] +
                        [one(z3.And(p, m[0] == b, _eq(m[7:], req))) for p, m in _msgs(s, AP_RESP)])
        out.append(z3.Implies(z3.And(s[f"papq{b}"], pending), copies == 1))
        out.append(z3.Implies(z3.And(s[f"papq{b}"], pending),
                              z3.And(req[0] == b, s[f"pape{b}"] == req[4 + n] + 1,
                                     _set(req[1], n + 1) & ~s[f"rX{b}"] == 0,
                                     s[f"rX{b}"] == s[f"rI{b}"] | _set(req[1], n + 1))))
        for p, m in _msgs(s, AP_REQ):
            out.append(z3.Implies(z3.And(p, m[0] == b, m[4 + n] == s["C_pe"]), z3.And(s[f"papq{b}"], pending, _eq(m, req))))
    return z3.And(*out)


def lemma_alter_partition_in_flight(s):
    """Until a shutdown or a reassignment (a broker shutting down forgets its pending request, and a replica
    a reassignment removes its metadata, while the request or response may still be in flight): an
    AlterPartition request of b, or the response to one, in flight is from a partition epoch b has reached
    (b sends at its own epoch, which only grows), and one from the epoch b is at is its pending one (b sends
    only when nothing is pending, and its epoch moves on when the wait ends)."""
    n, rel = s["n"], s["rel"]
    w = rel.msg_width(AP_REQ, n)
    out = []
    for b in range(1, n + 1):
        req = [s[f"papq{b}_{k}"] for k in range(w)]
        mine = z3.And(s[f"papq{b}"], s[f"pape{b}"] > s[f"rpe{b}"])
        for p, m in _msgs(s, AP_REQ):
            out.append(z3.Implies(z3.And(p, m[0] == b), z3.And(m[4 + n] <= s[f"rpe{b}"], z3.Implies(
                m[4 + n] == s[f"rpe{b}"], z3.And(mine, _eq(m, req))))))
        for p, m in _msgs(s, AP_RESP):
            out.append(z3.Implies(z3.And(p, m[0] == b), z3.And(m[7 + 4 + n] <= s[f"rpe{b}"], z3.Implies(
                m[7 + 4 + n] == s[f"rpe{b}"], z3.And(mine, _eq(m[7:], req))))))
    return z3.Implies(s["cs"] + s["us"] + s["ra"] == 0, z3.And(*out))


def lemma_accepted_alter_partition(s):
    """An accepted AlterPartition response carries the record the controller appended for it (at the
    request's partition epoch plus one), and, while it answers its leader's pending request in the current
    leader epoch, the controller's ISR and ELR are within its ISR: only that leader's requests add to them."""
    n, rel = s["n"], s["rel"]
    w = rel.msg_width(AP_REQ, n)
    out = []
    for p, m in _msgs(s, AP_RESP):
        R, I, L, le, pe, req = _set(m[2], n + 1), _set(m[3], n + 1), m[4], m[5], m[6], m[7:]
        is_rec = z3.Or(*[z3.And(i <= s["clen"], *[x == y for x, y in zip((R, I, L, le, pe),
                                                                           [rel.record(s, i)[f] for f in ("R", "I", "L", "le", "pe")])])
                         for i in range(1, rel.Mb + 1)])
        answers = z3.Or(*[z3.And(m[0] == b, s[f"papq{b}"], s[f"pape{b}"] > s[f"rpe{b}"],
                                 _eq(req, [s[f"papq{b}_{k}"] for k in range(w)])) for b in range(1, n + 1)])
        out.append(z3.Implies(z3.And(p, m[1] == NO_ERROR), z3.And(
            is_rec, pe == req[4 + n] + 1, z3.Implies(z3.And(answers, le == s["C_le"]), (s["C_I"] | s["C_E"]) & ~I == 0))))
    return z3.And(*out)


def lemma_partition_epochs(s):
    """Partition epochs order the controller's changes: each record of the metadata log has a higher one
    than the record before (the controller adds one per change), so the controller's is the highest, and
    no replica, pending request or AlterPartition message holds one above it (they copy records' epochs);
    a leader's metadata is a record of the log (it copies a record, or an accepted AlterPartition response,
    which carries one)."""
    n, rel = s["n"], s["rel"]
    out = []
    for i in range(1, rel.Mb):
        out.append(z3.Implies(i + 1 <= s["clen"], rel.record(s, i)["pe"] < rel.record(s, i + 1)["pe"]))
    for b in range(1, n + 1):
        out += [s[f"rpe{b}"] <= s["C_pe"], s[f"pape{b}"] <= s["C_pe"] + 1]
        mine = [s[f"r{f}{b}"] for f in ("R", "I", "L", "le", "pe")]
        out.append(z3.Implies(s[f"role{b}"] == LEADER, z3.Or(*[
            z3.And(i <= s["clen"], _eq(mine, [rel.record(s, i)[f] for f in ("R", "I", "L", "le", "pe")]))
            for i in range(1, rel.Mb + 1)])))
    out += [z3.Implies(p, m[4 + n] <= s["C_pe"]) for p, m in _msgs(s, AP_REQ)]
    out += [z3.Implies(p, z3.And(m[6] <= s["C_pe"], m[7 + 4 + n] <= s["C_pe"])) for p, m in _msgs(s, AP_RESP)]
    return z3.And(*out)


LEMMAS = {  # (docs/models/replication.md, "What prove closes", says why each holds and which CTIs it removes)
    "LemmaHwmWithinLog": lemma_hwm_within_log, "LemmaHwmWithinTrueHwm": lemma_hwm_within_true_hwm,
    "LemmaFetchBetweenTwoBrokers": lemma_fetch_between_two_brokers, "LemmaBudgets": lemma_budgets,
    "LemmaControllerIsLastRecord": lemma_controller_is_last_record, "LemmaPartitionEpochs": lemma_partition_epochs,
    "LemmaLeaderInIsr": lemma_leader_in_isr, "LemmaNoElectionBeforeAFault": lemma_no_election_before_a_fault,
    "LemmaLogRecords": lemma_log_records, "LemmaFetchRequestsWellFormed": lemma_fetch_requests_well_formed,
    "LemmaFetcherAtLogEnd": lemma_fetcher_at_log_end, "LemmaOneFetchInFlight": lemma_one_fetch_in_flight,
    "LemmaFetchOffsetsWithinLogs": lemma_fetch_offsets_within_logs,
    "LemmaPendingAlterPartition": lemma_pending_alter_partition, "LemmaAlterPartitionInFlight": lemma_alter_partition_in_flight,
    "LemmaAcceptedAlterPartition": lemma_accepted_alter_partition}

PROPERTIES = {"LeaderCompletenessProperty": leader_completeness,
              "LeaderCandidateCompletenessProperty": leader_candidate_completeness,
              "ReplicationQuorumSupersetProperty": replication_quorum_superset,
              "LogMatchingProperty": log_matching,
              "MetadataLogMatchingProperty": metadata_log_matching,
              "MinIsrRecoveryQuorum": min_isr_recovery_quorum}
