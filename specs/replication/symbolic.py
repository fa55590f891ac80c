"""The replication model's rules as a Z3 transition relation over bounded logs and bounded message sets,
for `prove` and bounded model checking (docs/models/replication.md, "The symbolic form").

The symbolic state is the model's VIEW, field for field, within the config's bounds: a replica's log is
`values` slots (each value is written at most once, so no log is longer; a record's offset is its slot),
the metadata logs `metadata_log_bound` slots, each message type `message_bound` slots. Broker sets are
(N+1)-bit vectors (bit b = broker b), epochs and offsets unbounded integers. A message set is its
messages in the slots' order, sorted and without repeats (type_ok), so equal sets are equal slots, as
the model's sorted tuples are; sending inserts in order, receiving removes a slot. A broker's copy of a
metadata log record is kept as one bit-vector, the record's code (all nine fields side by side, `code`).

Where the model reads a field outside the VIEW, the relation allows any value the VIEW does not exclude:
* the acknowledged values (`inv_pos_acked`) on an HWM advance: any unacknowledged written values at the
  offsets committed (the model also skips those below the leader's floor offset `aux_flo` or negatively
  acknowledged; negative acknowledgements and `inv_consumed` are not kept: no property here reads them);
* a new broker epoch or incarnation id: any value above every one the state holds (the model's counters
  `aux_broker_epoch`, `incarn_ctr`);
* a retried AlterPartition request (the TLA+ __AvoidCycle reads the processed messages): always allowed.
The budgets (`aux_ctrs`) are kept, as kip642's are: the faults a config allows are bounded.

Each rule mirrors one rule of the model under the same name (`specs/replication/*.py`);
tests/test_replication_z3.py checks that every step of the model is a step of the relation.

The module is kept whole (about 1,600 lines: the 18 rules of the TLA+ `Next` at about 50 lines each, then
the properties and the sixteen strengthening lemmas that make them inductive at p1, about 370): its rules are
the methods of one `Relation`, sized by the config, beside the shared functions they call (as the model's
`logic` is beside its rules), and every protocol package has the same layout, with one module for the Z3 form
(tests/test_spec_api.py), as the other four keep their properties and lemmas beside their relation.

Where things are, in order (each part opens with a `# ---` line): the entry points (`for_config`, `for_bmc`)
and small bit-vector helpers; `Relation`: the state (fields, `type_ok`, record codes), the projection of a
model state, BMC's cut relation (`saturated`, `widened`), the relations' shared pieces (message sets, logs,
HWM, the controller's partition changes), then the rules in the order of the TLA+ `Next`; after the class,
the properties, then the strengthening lemmas, then the tables `prove` and the gate read (LEMMAS, PROPERTIES, CI_PLAN).
"""

from __future__ import annotations

import dataclasses
import itertools

import z3

from harness.bitset import bit
from harness.errors import BadInput
from specs.replication.state import (AP_REQ, AP_RESP, FENCED_LEADER_EPOCH, FETCH_REQ, FETCH_RESP, FOLLOWER,
                                     INELIGIBLE_REPLICA, LEADER, NO_ERROR, NO_ROLE, NOT_LEADER_OR_FOLLOWER,
                                     OFFLINE_CLEAN, OFFLINE_DIRTY, REG_REQ, REG_RESP, RUNNING, STARTING,
                                     UNKNOWN_LEADER_EPOCH)

W = 12  # the bits of an epoch, an offset, a broker id or a message field (type_ok keeps them below the LIMIT)
COUNT_BITS = 8  # the bits of a broker count
RECORD = ("R", "I", "L", "le", "pe", "A", "M", "E", "K")  # a PartitionChange: the sets, leader id and epochs
SETS = {"R", "I", "A", "M", "E", "K"}
CODE = ("pe", "le", "L", "R", "I", "A", "M", "E", "K")  # a record's code: these fields, most significant first
COUNTERS = ("cs", "us", "fb", "ls", "ra")  # aux_ctrs: clean, unclean shutdowns, fences, shrinks, reassignments
KINDS = (REG_REQ, REG_RESP, AP_REQ, AP_RESP, FETCH_REQ, FETCH_RESP)


def unsupported(cfg) -> str | None:
    return None


def for_config(cfg) -> "Relation":
    """The relation for this config's bounds (log, metadata log and message slots)."""
    return Relation(cfg)


def for_bmc(cfg, depth: int) -> "Relation":
    """BMC's relation for runs of up to `depth` steps: one message slot per type and one metadata record
    more than the initial state holds (BMC widens them where a run fills them: `Relation.saturated`),
    numbers as wide as `depth` steps need: a step raises the largest number by at most one (a new epoch
    or incarnation is the model's counter plus one), so none passes the initial state's largest (the
    counters included) plus `depth`. A short search runs over a relation a fraction of the config's size."""
    from specs.replication.logic import init_state
    st = init_state(cfg)
    slots = min(cfg.message_bound, 1 + max(len(st.messages[kind]) for kind in KINDS))
    log_slots = min(cfg.metadata_log_bound, 1 + len(st.con_metadata_log))
    probe = Relation(cfg, slots, log_slots, counters=True)
    values = probe.project(cfg, st)
    top = max([values[f] for f in probe._numbers(probe.make_state("w_", cfg.broker_count), names=True)[0]]
              + [st.aux_broker_epoch, st.aux_ctrs.incarn_ctr, cfg.values + 1, cfg.broker_count]) + depth
    width = cfg.broker_count + 2  # a broker set in a message field is a positive number
    while (1 << (width - 1)) - 2 <= top:  # below the LIMIT
        width += 1
    return Relation(cfg, slots, log_slots, width, counters=True)


def _bit(x, b: int):
    """Broker (or value) b is in bit-vector x."""
    return z3.Extract(b, b, x) == 1


def _has(x, who, n: int):
    """Symbolic broker id `who` is in bit-vector x."""
    return z3.Or(*[z3.And(who == b, _bit(x, b)) for b in range(1, n + 1)])


def _lt(xs, ys):
    """Lexicographic order of two tuples of integers (Python's tuple order)."""
    out = z3.BoolVal(False)
    for x, y in reversed(list(zip(xs, ys))):
        out = z3.Or(x < y, z3.And(x == y, out))
    return out


def _eq(xs, ys):
    return z3.And(*[x == y for x, y in zip(xs, ys)])


def _select(index, options: list, default=0):
    """options[index - 1] for a symbolic 1-based index."""
    out = default if not z3.is_expr(default) else default
    for i, o in enumerate(options, 1):
        out = z3.If(index == i, o, out)
    return out


def _one(who, n: int):
    """The set {who} for a symbolic broker id (empty for 0)."""
    return z3.If(who == 0, z3.BitVecVal(0, n + 1), z3.BitVecVal(1, n + 1) << _set(who, n + 1))


def _set(x, width: int):
    """A message field as a broker set of `width` bits."""
    return z3.Extract(width - 1, 0, x)


def _count(x):
    """|x| as a COUNT_BITS-bit number (compared with MinISR and other counts only)."""
    return z3.Sum([z3.ZeroExt(COUNT_BITS - 1, z3.Extract(i, i, x)) for i in range(1, x.size())])


def _zmax(a, b):
    return z3.If(a > b, a, b)


@dataclasses.dataclass
class Step:
    """One way a rule fires: its guard, the fields it sets, and the message sets it changes (kind ->
    function of the post-state's slots giving the constraints)."""

    guard: list
    upd: dict
    msgs: dict


class Relation:
    """The relation for one config (its bounds); the interface `harness.engines.z3prove`/`z3bmc` use."""

    PACKED = ()

    def __init__(self, cfg, slots: int | None = None, log_slots: int | None = None, width: int = W,
                 counters: bool = False) -> None:
        """The relation with the config's bounds, or (BMC) with fewer message `slots` per type, fewer
        metadata `log_slots` and narrower numbers (`width` bits): a step that needs more than such a
        cut relation holds sets a flag (`saturated`), so BMC widens it instead of missing the run.
        With `counters` (BMC), the model's counters behind new incarnations and broker epochs are kept
        (`ctr_inc`, `ctr_ep`) and new ones are exactly the model's, not any number above those held: paths
        differing only in such a number would each be a spurious candidate."""
        self.counters = counters
        self.cfg = cfg
        self._reached: dict = {}  # config -> {projection: BFS depth} (reachability)
        self.V = cfg.values
        self.Mb = log_slots or cfg.metadata_log_bound
        self.K = slots or cfg.message_bound
        self.W, self.LIMIT = width, (1 << (width - 1)) - 2  # +1 and -1 stay the integers'
        self.flags = (["ovf_m"] if self.K < cfg.message_bound else []) + (["ovf_l"] if self.Mb < cfg.metadata_log_bound else [])
        rules = [("BrokerStart", self.broker_start), ("ReceiveBrokerRegResponse", self.receive_reg_response),
                 ("ReceiveMetadataUpdate", self.receive_metadata_update),
                 ("SendAlterPartitionRequest", self.send_ap_request),
                 ("ReceiveAlterPartitionResponse", self.receive_ap_response),
                 ("SendFetchRequest", self.send_fetch_request), ("ReceiveFetchRequest", self.receive_fetch_request),
                 ("ReceiveFetchResponse", self.receive_fetch_response), ("WriteRecordToLeader", self.write_record),
                 ("UncleanShutdown", self.unclean_shutdown), ("CleanShutdown", self.clean_shutdown),
                 ("DataLossShutdown", self.data_loss_shutdown), ("NoDataLossShutdown", self.no_data_loss_shutdown),
                 ("ReceiveBrokerRegRequest", self.receive_reg_request),
                 ("ReceiveAlterPartitionRequest", self.receive_ap_request), ("FenceBroker", self.fence_broker),
                 ("UnfenceBroker", self.unfence_broker),
                 ("PerformPartitionReassignment", self.reassign)]
        self.RULES = {name: self._relation(rule) for name, rule in rules}
        self.MATCHED = tuple(self._names(cfg.broker_count))

    # ------------------------------------------------------------------------------ the state

    def _n(self, v: int):
        return z3.BitVecVal(v, self.W)

    def _num(self, x):
        """A broker set (n+1 bits) as a number (a message field)."""
        return z3.ZeroExt(self.W - x.size(), x)

    def msg_width(self, kind: int, n: int) -> int:
        return {REG_REQ: 3, REG_RESP: 4, AP_REQ: 6 + n, AP_RESP: 13 + n, FETCH_REQ: 6, FETCH_RESP: 13}[kind]

    def _fields(self, n: int):
        """(name, sort) of every field of the symbolic state with n brokers: 'set' (n+1 bits), 'vals'
        (values+1 bits), 'int', 'bool'."""
        out = [("U", "set"), *[(f"C_{f}", "set" if f in SETS else "int") for f in RECORD], ("clen", "int")]
        out += [(f"cl{i}_{f}", "set" if f in SETS else "int") for i in range(1, self.Mb + 1) for f in RECORD]
        for b in range(1, n + 1):
            out += [(f"creg_ep{b}", "int"), (f"creg_inc{b}", "int"), (f"bst{b}", "int"), (f"bep{b}", "int"),
                    (f"binc{b}", "int"), (f"breg{b}", "bool"), (f"blen{b}", "int"), (f"role{b}", "int"),
                    (f"rR{b}", "set"), (f"rI{b}", "set"), (f"rX{b}", "set"), (f"rL{b}", "int"), (f"rle{b}", "int"),
                    (f"rpe{b}", "int"), (f"leo{b}", "int"), (f"hwm{b}", "int"), (f"leso{b}", "int"),
                    (f"pape{b}", "int"), (f"papq{b}", "bool")]
            out += [(f"papq{b}_{k}", "int") for k in range(self.msg_width(AP_REQ, n))]
            out += [(f"bl{b}_{i}", "code") for i in range(1, self.Mb + 1)]
            out += [(f"{x}{b}_{i}", "int") for i in range(1, self.V + 1) for x in ("lep", "lval")]
            for c in range(1, n + 1):
                out += [(f"f{b}_{c}_{x}", "bool" if x in "adp" else "int") for x in "aoedp"]
                out += [(f"pleo{b}_{c}", "int"), (f"pbep{b}_{c}", "int")]
        for kind in KINDS:
            for j in range(self.K):
                out += [(f"m{kind}_{j}_p", "bool")] + [(f"m{kind}_{j}_{k}", "int") for k in range(self.msg_width(kind, n))]
        out += [("sent", "vals"), ("acked", "vals"), ("thwm", "int")] + [(c, "int") for c in COUNTERS]
        return out + [(f, "bool") for f in self.flags] + ([("ctr_inc", "int"), ("ctr_ep", "int")] if self.counters else [])

    def _names(self, n: int):
        return [name for name, _ in self._fields(n)]

    def make_state(self, prefix: str, n: int) -> dict:
        s = {}
        for name, sort in self._fields(n):
            s[name] = {"set": lambda x: z3.BitVec(x, n + 1), "vals": lambda x: z3.BitVec(x, self.V + 1),
                       "int": lambda x: z3.BitVec(x, self.W), "bool": z3.Bool,
                       "code": lambda x: z3.BitVec(x, 3 * self.W + 6 * (n + 1))}[sort](prefix + name)
        s["n"], s["cfg"], s["rel"] = n, self.cfg, self  # the properties read the config's bounds
        return s

    def _numbers(self, s: dict, names: bool = False) -> tuple[list, list]:
        """The W-bit fields that hold numbers, and those that hold a broker set (an AlterPartition
        message's ISR and replicas, kept in a message field): their fields' names if `names`."""
        numbers, sets = [], []
        for name, sort in self._fields(s["n"]):
            if sort != "int":
                continue
            k = name.rsplit("_", 1)[-1]  # m<kind>_<slot>_<k>, papq<b>_<k>: the message's k-th field
            is_set = (name.startswith(f"m{AP_REQ}_") or name.startswith("papq")) and k == "1" or \
                name.startswith(f"m{AP_RESP}_") and k in ("2", "3", "8")
            (sets if is_set else numbers).append(name if names else s[name])
        return numbers, sets

    def slots(self, s: dict, kind: int) -> list:
        n = s["n"]
        return [(s[f"m{kind}_{j}_p"], [s[f"m{kind}_{j}_{k}"] for k in range(self.msg_width(kind, n))])
                for j in range(self.K)]

    def type_ok(self, s: dict):
        n = s["n"]
        w = (1 << (n + 1)) - 2
        out = [s[name] & ~z3.BitVecVal(w, n + 1) == 0 for name, sort in self._fields(n) if sort == "set"]
        out += [s[v] & 1 == 0 for v in ("sent", "acked")]
        # numbers stay far from the bit-vectors' wrap-around: +1 and -1 are the integers'
        numbers, sets = self._numbers(s)
        out += [z3.And(x >= 0, x < self.LIMIT) for x in numbers]
        out += [z3.ULT(x, 1 << (n + 1)) for x in sets]
        out += [s["clen"] >= 1, s["clen"] <= self.Mb, s["thwm"] >= 1]
        for b in range(1, n + 1):
            out += [s[f"leo{b}"] >= 1, s[f"leo{b}"] <= self.V + 1, s[f"hwm{b}"] >= 1, s[f"bst{b}"] >= 0,
                    s[f"bst{b}"] <= 3, s[f"role{b}"] >= 0, s[f"role{b}"] <= 2, s[f"blen{b}"] >= 0,
                    s[f"blen{b}"] <= self.Mb]
            for i in range(1, self.V + 1):  # slots past the log end are blank, as the projection leaves them
                out.append(z3.Implies(s[f"leo{b}"] <= i, z3.And(s[f"lep{b}_{i}"] == 0, s[f"lval{b}_{i}"] == 0)))
            for i in range(1, self.Mb + 1):
                out.append(z3.Implies(s[f"blen{b}"] < i, s[f"bl{b}_{i}"] == 0))
        for kind in KINDS:
            sl = self.slots(s, kind)
            for j, (p, xs) in enumerate(sl):
                out.append(z3.Implies(z3.Not(p), z3.And(*[x == 0 for x in xs])))
                if j:
                    out.append(z3.Implies(p, z3.And(sl[j - 1][0], _lt(sl[j - 1][1], xs))))
        return z3.And(*out)

    @staticmethod
    def code(rec: dict, n: int):
        """A PartitionChange record as one bit-vector: its nine fields side by side (`_code` concretely)."""
        return z3.Concat(*[rec[f] for f in CODE])

    def record(self, s: dict, i=None) -> dict:
        return {f: s[f"C_{f}"] if i is None else s[f"cl{i}_{f}"] for f in RECORD}

    # ------------------------------------------------------------------------------ projection

    def project(self, cfg, st) -> dict:
        """The symbolic fields a concrete state determines (every MATCHED field)."""
        n = cfg.broker_count
        out = {"U": st.con_unfenced, "clen": len(st.con_metadata_log), "thwm": st.inv_true_hwm,
               "sent": st.inv_sent, "acked": st.inv_pos_acked}
        out.update({f"C_{f}": v for f, v in zip(RECORD, self._rec(st.con_partition_metadata))})
        for i in range(1, self.Mb + 1):
            rec = self._rec(st.con_metadata_log[i - 1]) if i <= len(st.con_metadata_log) else (0,) * 9
            out.update({f"cl{i}_{f}": v for f, v in zip(RECORD, rec)})
        for b in range(1, n + 1):
            reg, bs, md, d = st.con_broker_reg[b - 1], st.broker_state[b - 1], st.partition_metadata[b - 1], \
                st.partition_data[b - 1]
            pap = st.partition_pending_ap[b - 1]
            out.update({f"creg_ep{b}": reg.broker_epoch, f"creg_inc{b}": reg.incarnation_id, f"bst{b}": bs.status,
                        f"bep{b}": bs.broker_epoch, f"binc{b}": bs.incarnation_id, f"breg{b}": bs.registered,
                        f"blen{b}": len(st.broker_metadata_log[b - 1]), f"role{b}": st.partition_status[b - 1],
                        f"rR{b}": md.replicas, f"rI{b}": md.isr, f"rX{b}": md.maximal_isr, f"rL{b}": md.leader,
                        f"rle{b}": md.leader_epoch, f"rpe{b}": md.partition_epoch, f"leo{b}": d.leo, f"hwm{b}": d.hwm,
                        f"leso{b}": st.partition_leso[b - 1], f"pape{b}": pap.epoch, f"papq{b}": bool(pap.request)})
            req = self._flat(AP_REQ, pap.request[0]) if pap.request else (0,) * self.msg_width(AP_REQ, n)
            out.update({f"papq{b}_{k}": v for k, v in enumerate(req)})
            log = st.broker_metadata_log[b - 1]
            out.update({f"bl{b}_{i}": self._code(log[i - 1], n) if i <= len(log) else 0 for i in range(1, self.Mb + 1)})
            for i in range(1, self.V + 1):
                r = d.log[i - 1] if i <= len(d.log) else None
                assert r is None or r.offset == i, "a record's offset is its slot"
                out.update({f"lep{b}_{i}": r.epoch if r else 0, f"lval{b}_{i}": r.value if r else 0})
            for c in range(1, n + 1):
                f, peer = st.broker_fetchers[b - 1][c - 1], st.partition_replica_state[b - 1][c - 1]
                out.update({f"f{b}_{c}_a": f.added, f"f{b}_{c}_o": f.fetch_offset, f"f{b}_{c}_e": f.last_fetched_epoch,
                            f"f{b}_{c}_d": f.delayed, f"f{b}_{c}_p": f.pending_response,
                            f"pleo{b}_{c}": peer.leo, f"pbep{b}_{c}": peer.broker_epoch})
        for kind in KINDS:
            msgs = sorted(self._flat(kind, m) for m in st.messages[kind])
            for j in range(self.K):
                m = msgs[j] if j < len(msgs) else None
                out[f"m{kind}_{j}_p"] = m is not None
                out.update({f"m{kind}_{j}_{k}": (m[k] if m else 0) for k in range(self.msg_width(kind, n))})
        c = st.aux_ctrs
        out.update(cs=c.clean_shutdown_ctr, us=c.unclean_shutdown_ctr, fb=c.fence_broker_ctr,
                   ls=c.leader_shrink_isr_ctr, ra=c.reassignment_ctr)
        if self.counters:
            out.update(ctr_inc=st.aux_ctrs.incarn_ctr, ctr_ep=st.aux_broker_epoch)
        return out | {f: False for f in self.flags}

    @staticmethod
    def _rec(md) -> tuple:
        return (md.replicas, md.isr, md.leader, md.leader_epoch, md.partition_epoch, md.adding, md.removing, md.elr,
                md.last_known_elr)

    def _code(self, md, n: int) -> int:
        out, values = 0, dict(zip(RECORD, self._rec(md)))
        for f in CODE:
            out = out << (n + 1 if f in SETS else self.W) | values[f]
        return out

    def _flat(self, kind: int, m) -> tuple:
        if kind == AP_REQ:
            return (m.source, m.isr, *m.isr_and_epochs, m.leader, m.leader_epoch, m.partition_epoch, m.broker_epoch)
        if kind == AP_RESP:
            return (m.dest, m.error, m.replicas, m.isr, m.leader, m.leader_epoch, m.partition_epoch,
                    *self._flat(AP_REQ, m.request))
        if kind == FETCH_RESP:
            r = m.records[0] if m.records else None
            return (m.source, m.dest, m.error, m.leader_epoch, m.fetch_offset, int(m.diverging), m.diverging_epoch,
                    m.diverging_offset, m.hwm, len(m.records), r.epoch if r else 0, r.offset if r else 0,
                    r.value if r else 0)
        return tuple(m)

    def init(self, s: dict, cfg):
        """The config's initial state (at its broker count; none at another)."""
        from specs.replication.logic import init_state
        if s["n"] != cfg.broker_count:
            return z3.BoolVal(False)
        p = self.project(cfg, init_state(cfg))
        return z3.And(*[s[f] == _const(s[f], v) for f, v in p.items()])

    def brokers(self, cfg) -> int:
        return cfg.broker_count

    def reachability(self, model, pre: dict, limit: int = 100_000) -> tuple:
        """`prove`'s verdict on a CTI's pre-state (fields as `prove` shows them: broker sets as member
        lists): (BFS depth, text) if the model reaches it, else (None, text), by exhausting the config
        (BMC from Init over this relation takes hours); None and why when the config is too large."""
        if model.config not in self._reached:
            self._reached[model.config] = reached = {}
            frontier, depth = {st: None for st in model.init_states()}, 0
            while frontier and len(reached) <= limit:
                nxt = {}
                for st in frontier:
                    reached.setdefault(tuple(sorted(self.project(model.config, st).items())), depth)
                    nxt.update((t, None) for _, t in model.successors(st))
                frontier = {t: None for t in nxt if tuple(sorted(self.project(model.config, t).items())) not in reached}
                depth += 1
            if frontier:
                reached.clear()
        reached = self._reached[model.config]
        if not reached:
            return None, f"not decided: the config has more than {limit:,} states"
        key = tuple(sorted((k, sum(1 << i for i in v) if isinstance(v, list) else v) for k, v in pre.items()))
        if key in reached:
            return reached[key], f"reachable in {reached[key]} steps: real violation"
        return None, (f"unreachable (not among the {len(reached):,} states BFS reaches): the property is too weak "
                      "to be inductive")

    def broker_counts(self, cfg, max_brokers: int) -> list:
        """`prove`'s broker counts: the config's (the slots are sized by it), which --brokers must allow."""
        if cfg.broker_count > max_brokers:
            raise BadInput(f"the replication relation is sized by the config: --brokers must be at least its "
                           f"broker_count ({cfg.broker_count})")
        return [cfg.broker_count]

    # ------------------------------------------------------------------------------ BMC's cut relation

    LOGIC = "QF_BV"  # bit-vectors and Booleans only: BMC's incremental solver bit-blasts to SAT

    def saturated(self, s):
        """A send or a metadata record found this relation's slots full on the way to state s: a model run
        needing more room is flagged at its first step past them (so within the same number of steps)."""
        return z3.Or(*[s[f] for f in self.flags])

    def fits(self, cfg, st) -> bool:
        """Concrete state st fits this relation's slots."""
        return len(st.con_metadata_log) <= self.Mb and all(len(st.messages[kind]) <= self.K for kind in KINDS)

    @property
    def size(self) -> dict:
        return {"message_slots": self.K, "metadata_slots": self.Mb, "number_bits": self.W}

    def widened(self, values: dict) -> "Relation":
        """The relation with room where a saturated state (its field values) ran out of it."""
        cfg = self.cfg
        return Relation(cfg, min(self.K + values.get("ovf_m", False), cfg.message_bound),
                        min(self.Mb + values.get("ovf_l", False), cfg.metadata_log_bound), self.W, self.counters)

    # ------------------------------------------------------------------------------ relations

    def _relation(self, rule):
        """Rule -> relation(s, t, cfg). A rule is a list of Steps (one per broker, message slot, case...);
        the relation picks one by the parameter `which`, and each field is set by an if-chain over the
        Steps that set it, so the formula grows with what the Steps change, not with their number times
        the state. A message set goes through intermediate slots `mid` (the chosen Step's set before
        its send, and the message `new` it sends, if any), so the sorted insertion is written once."""
        name = rule.__name__

        def relation(s, t, cfg):
            steps, params = rule(s, cfg)
            n = s["n"]
            if not steps:
                return z3.BoolVal(False), params
            which = z3.BitVec(f"{name}_which", max(self.W, len(steps).bit_length() + 1))
            sel = [which == i for i in range(len(steps))]
            cons = [z3.Or(*[z3.And(sel[i], *st.guard) for i, st in enumerate(steps)])]
            setters: dict = {}
            for i, st in enumerate(steps):
                for f, v in st.upd.items():
                    setters.setdefault(f, []).append((i, v))
            for f in self._names(n):
                if self._is_msg(f) or f == "ovf_m":
                    continue
                value = s[f]
                for i, v in reversed(setters.get(f, [])):
                    value = z3.If(sel[i], v, value)
                cons.append(t[f] == value)
            aux, overflows = [], []
            for kind in KINDS:
                after, before_s = self.slots(t, kind), self.slots(s, kind)
                users = [i for i, st in enumerate(steps) if kind in st.msgs]
                if not users:
                    cons += self._same(after, before_s)
                    continue
                width = self.msg_width(kind, n)
                mid = [(z3.Bool(f"{name}_mid{kind}_{j}_p"), [z3.BitVec(f"{name}_mid{kind}_{j}_{k}", self.W) for k in range(width)])
                       for j in range(self.K)]
                new = [z3.BitVec(f"{name}_new{kind}_{k}", self.W) for k in range(width)]
                sends = z3.Bool(f"{name}_sends{kind}")
                aux += [x for p, xs in mid for x in (p, *xs)] + new + [sends]
                filters = []
                for i in users:
                    op = steps[i].msgs[kind]
                    if op[0] == "keep":
                        filters.append(sel[i])
                        cons.append(z3.Implies(sel[i], z3.And(*self._kept(before_s, op[1], after))))
                    else:
                        link = self._same(mid, op[1]) + ([_eq(new, op[2]), sends] if op[0] == "insert" else [z3.Not(sends)])
                        cons.append(z3.Implies(sel[i], z3.And(*link)))
                cons.append(z3.Implies(z3.Not(z3.Or(*[sel[i] for i in users])), z3.And(*self._same(mid, before_s),
                                                                                       z3.Not(sends))))
                inserted = z3.And(*self._inserted(mid, new, after))
                if "ovf_m" in self.flags:  # a send into full slots: the cut relation cannot follow it
                    full = z3.And(z3.Not(z3.Or(*filters)), sends, *[z3.And(p, z3.Not(_eq(xs, new))) for p, xs in mid])
                    overflows.append(full)
                    inserted = z3.Or(full, inserted)
                cons.append(z3.Implies(z3.Not(z3.Or(*filters)), z3.If(sends, inserted, z3.And(*self._same(after, mid)))))
            if "ovf_m" in self.flags:
                cons.append(t["ovf_m"] == z3.Or(s["ovf_m"], *overflows))
            return z3.And(*cons), [*params, which, *aux]
        relation.__doc__ = rule.__doc__
        return relation

    @staticmethod
    def _is_msg(name: str) -> bool:
        return name.startswith("m") and name[1:2].isdigit()

    # message sets (sorted slots)

    def _removed(self, s, kind: int, j: int) -> list:
        """The slots of kind's set without slot j (the later ones move up)."""
        sl = self.slots(s, kind)
        width = len(sl[0][1])
        return sl[:j] + sl[j + 1:] + [(z3.BoolVal(False), [z3.BitVecVal(0, self.W)] * width)]

    @staticmethod
    def _same(after: list, before: list) -> list:
        return [z3.And(p == q, _eq(x, y)) for (p, x), (q, y) in zip(after, before)]

    @staticmethod
    def _inserted(before: list, m: list, after: list) -> list:
        """Constraints: the slots `after` hold `before`'s messages and m (sorted by type_ok)."""
        out = [z3.Or(*[z3.And(p, _eq(x, m)) for p, x in after])]
        out += [z3.Implies(p, z3.Or(*[z3.And(q, _eq(x, y)) for q, y in after])) for p, x in before]
        out += [z3.Implies(p, z3.Or(_eq(x, m), *[z3.And(q, _eq(x, y)) for q, y in before])) for p, x in after]
        return out

    @staticmethod
    def _kept(before: list, keep, after: list) -> list:
        """Constraints: the slots `after` hold `before`'s messages that satisfy keep."""
        out = [z3.Implies(z3.And(p, keep(x)), z3.Or(*[z3.And(q, _eq(x, y)) for q, y in after])) for p, x in before]
        out += [z3.Implies(p, z3.And(keep(x), z3.Or(*[z3.And(q, _eq(x, y)) for q, y in before]))) for p, x in after]
        return out

    @staticmethod
    def _send(before: list, m: list) -> tuple:
        return ("insert", before, m)

    @staticmethod
    def _as_is(before: list) -> tuple:
        return ("as_is", before)

    def _receive(self, s, kind: int):
        """(slot index, message fields, present) for every slot of kind."""
        return [(j, xs, p) for j, (p, xs) in enumerate(self.slots(s, kind))]

    # shared functions (specs/replication/logic.py)

    def _log(self, s, b) -> list:
        return [(s[f"lep{b}_{i}"], s[f"lval{b}_{i}"]) for i in range(1, self.V + 1)]

    def _last_epoch(self, log, leo):
        return _select(leo - 1, [e for e, _ in log], z3.BitVecVal(0, self.W))

    def _commit_offset(self, s, b: int, maximal, leo, peer_leo):
        """GetCommitOffset: peer_leo(c) is the leader's record of follower c's LEO."""
        n = s["n"]
        highest = leo - 1
        zero = z3.BoolVal(False)
        for c in range(1, n + 1):
            if c == b:
                continue
            inx = _bit(maximal, c)
            zero = z3.Or(zero, z3.And(inx, peer_leo(c) == 0))
            highest = z3.If(z3.And(inx, peer_leo(c) - 1 < highest), peer_leo(c) - 1, highest)
        return z3.If(z3.Or(leo == 1, zero), 0, _zmax(highest, 0))

    def _may_advance(self, isr, n):
        return z3.BoolVal(True) if not self.cfg.kip966 else _count(isr) >= self.cfg.min_isr

    def _acks(self, s, log, lower, higher, name: str):
        """An acknowledgement of values at offsets lower..higher of log (any of those the model would
        acknowledge: see the module docstring); (the acknowledged values, constraints, parameter)."""
        x = z3.BitVec(name, self.V + 1)
        cons = [x & ~(s["sent"] & ~s["acked"]) == 0]
        for v in range(1, self.V + 1):
            held = z3.Or(*[z3.And(lower <= i, i <= higher, val == v) for i, (_, val) in enumerate(log, 1)])
            cons.append(z3.Implies(_bit(x, v), held))
        return x, cons

    def _advance(self, s, b: int, isr, new_hwm, positive, log, x):
        """MaybeAdvanceHighWatermark: (updates, ) with acknowledgement x (a parameter, see _acks)."""
        n = s["n"]
        adv = z3.And(new_hwm > s[f"hwm{b}"], self._may_advance(isr, n))
        return {f"hwm{b}": z3.If(adv, new_hwm, s[f"hwm{b}"]),
                "acked": z3.If(z3.And(adv, positive), s["acked"] | x, s["acked"]),
                "thwm": z3.If(z3.And(adv, new_hwm > s["thwm"]), new_hwm, s["thwm"])}

    def _hwm_on_change(self, s, b: int, isr, maximal, x):
        leo = s[f"leo{b}"]
        new_hwm = self._commit_offset(s, b, maximal, leo, lambda c: s[f"pleo{b}_{c}"]) + 1
        upd = self._advance(s, b, isr, new_hwm, _count(maximal) >= self.cfg.min_isr, self._log(s, b), x)
        return upd, new_hwm

    def _lofe(self, s, b: int, req, is_leader: bool):
        """LastOffsetForEpoch: (epoch, end offset) of the highest epoch <= req in b's log."""
        log, leo, le = self._log(s, b), s[f"leo{b}"], s[f"rle{b}"]
        last = self._last_epoch(log, leo)
        direct = z3.Or(leo == 1, req == last, le == req if is_leader else z3.BoolVal(False))
        higher = leo  # no epoch above req: the log end (the model fails unless a newer leader)
        for o in reversed(range(1, self.V + 1)):
            e = log[o - 1][0]
            earlier = [z3.And(o2 < leo, req < log[o2 - 1][0], log[o2 - 1][0] < e) for o2 in range(1, o)]
            higher = z3.If(z3.And(o < leo, e > req, z3.Not(z3.Or(*earlier))), o, higher)
        floor = z3.BitVecVal(-1, self.W)
        for o in range(1, self.V + 1):
            e = log[o - 1][0]
            floor = z3.If(z3.And(o < leo, e <= req, e > floor), e, floor)
        return z3.If(direct, req, z3.If(floor >= 0, floor, req)), z3.If(direct, leo, higher)

    def _without_partition(self, s, b: int, c: int) -> dict:
        return {f"f{b}_{c}_a": z3.BoolVal(False), f"f{b}_{c}_o": z3.BitVecVal(0, self.W), f"f{b}_{c}_e": z3.BitVecVal(0, self.W),
                f"f{b}_{c}_d": z3.BoolVal(False)}

    def _blank_peers(self, s, b: int) -> dict:
        upd = {}
        for c in range(1, s["n"] + 1):
            upd[f"pleo{b}_{c}"], upd[f"pbep{b}_{c}"] = z3.BitVecVal(0, self.W), z3.BitVecVal(0, self.W)
        return upd

    def _no_pending_ap(self, s, b: int) -> dict:
        upd = {f"pape{b}": z3.BitVecVal(0, self.W), f"papq{b}": z3.BoolVal(False)}
        upd.update({f"papq{b}_{k}": z3.BitVecVal(0, self.W) for k in range(self.msg_width(AP_REQ, s["n"]))})
        return upd

    def _empty_data(self, s, b: int) -> dict:
        upd = {f"leo{b}": z3.BitVecVal(1, self.W), f"hwm{b}": z3.BitVecVal(1, self.W)}
        for i in range(1, self.V + 1):
            upd[f"lep{b}_{i}"], upd[f"lval{b}_{i}"] = z3.BitVecVal(0, self.W), z3.BitVecVal(0, self.W)
        return upd

    def _may_disrupt(self, s):
        if self.cfg.max_disruptions < 0:
            return z3.BoolVal(True)
        return s["cs"] + s["us"] + s["fb"] + s["ls"] < self.cfg.max_disruptions

    # the controller's partition changes

    def _apply(self, s, md: dict) -> tuple[list, dict]:
        """ApplyPartitionChange: (guard, updates) appending md to the metadata log."""
        n = s["n"]
        if self.cfg.kip966:
            md = dict(md, K=z3.If(_count(md["I"]) >= self.cfg.min_isr, z3.BitVecVal(0, n + 1),
                                  s["C_K"] | (md["R"] & s["C_E"] & ~md["E"])))
        upd = {f"C_{f}": md[f] for f in RECORD}
        upd["clen"] = s["clen"] + 1
        for i in range(1, self.Mb + 1):
            for f in RECORD:
                upd[f"cl{i}_{f}"] = z3.If(s["clen"] + 1 == i, md[f], s[f"cl{i}_{f}"])
        if "ovf_l" not in self.flags:
            return [s["clen"] < self.Mb], upd
        full = s["clen"] >= self.Mb  # past a cut relation's slots: flagged, not followed
        upd["clen"], upd["ovf_l"] = z3.If(full, s["clen"], s["clen"] + 1), z3.Or(s["ovf_l"], full)
        return [], upd

    def _change(self, s, changed, md) -> tuple[list, dict]:
        """(guard, updates): md applied if `changed`, else nothing (both cases as one update)."""
        guard, upd = self._apply(s, md)
        return [z3.Implies(changed, z3.And(*guard))], {f: z3.If(changed, v, s[f]) for f, v in upd.items()}

    def _on_broker_change(self, s, new_isr, new_unf, choice: int) -> tuple[list, dict]:
        """MaybeUpdatePartitionOnBrokerChange (v3.5) for leader choice `choice`."""
        n = s["n"]
        cur = self.record(s)
        L = cur["L"]
        cand = new_isr & new_unf
        keeps = z3.Or(z3.And(L == 0, cand == 0), z3.And(L != 0, _has(new_isr, L, n), _has(new_unf, L, n)))
        ok = z3.If(keeps, choice == 0, z3.If(cand != 0, _has(cand, choice, n), choice == 0))
        md = dict(cur, I=new_isr, pe=cur["pe"] + 1, L=z3.If(keeps, L, choice),
                  le=z3.If(keeps, cur["le"], cur["le"] + 1))
        guard, upd = self._change(s, z3.Or(z3.Not(keeps), new_isr != cur["I"]), md)
        return [ok, *guard], upd

    def _elr_change(self, s, new_isr, new_elr, new_unf, choice: int) -> tuple[list, dict]:
        """KIP-966's MaybeUpdatePartitionOnBrokerChange for leader choice `choice`."""
        n = s["n"]
        cur = self.record(s)
        L = cur["L"]
        ecand = new_elr & new_unf
        keeps = z3.Or(z3.And(L == 0, new_isr == 0, ecand == 0), z3.And(L != 0, _has(new_isr, L, n)))
        elect = z3.Or(new_isr != 0, ecand != 0)
        pool = z3.If(new_isr != 0, new_isr, ecand)
        ok = z3.If(keeps, choice == 0, z3.If(elect, _has(pool, choice, n), choice == 0))
        one = _one(choice, n)
        from_elr = z3.And(z3.Not(keeps), elect, new_isr == 0)
        md = dict(cur, I=z3.If(from_elr, one, new_isr), E=z3.If(from_elr, new_elr & ~one, new_elr),
                  pe=cur["pe"] + 1, L=z3.If(keeps, L, choice), le=z3.If(keeps, cur["le"], cur["le"] + 1))
        guard, upd = self._change(s, z3.Or(z3.Not(keeps), new_isr != cur["I"], new_elr != cur["E"]), md)
        return [ok, *guard], upd

    def _update_elr(self, s, proposed, replicas):
        n = s["n"]
        return z3.If(_count(proposed) >= self.cfg.min_isr, z3.BitVecVal(0, n + 1),
                     (s["C_E"] & replicas) | (s["C_I"] & replicas & ~proposed))

    def _fenced(self, s, b: int, choice: int) -> tuple[list, dict]:
        """HandleBrokerFenced."""
        n = s["n"]
        one = z3.BitVecVal(bit(b), n + 1)
        new_unf = s["U"] & ~one
        if self.cfg.kip966:
            new_isr = s["C_I"] & ~one
            guard, upd = self._elr_change(s, new_isr, self._update_elr(s, new_isr, s["C_R"]), new_unf, choice)
        else:
            new_isr = z3.If(_count(s["C_I"]) == 1, s["C_I"], s["C_I"] & ~one)
            guard, upd = self._on_broker_change(s, new_isr, new_unf, choice)
        upd["U"] = new_unf
        return guard, upd

    def _unfenced(self, s, b: int, choice: int) -> tuple[list, dict]:
        """HandleBrokerUnfenced."""
        n = s["n"]
        new_unf = s["U"] | z3.BitVecVal(bit(b), n + 1)
        if self.cfg.kip966:
            guard, upd = self._elr_change(s, s["C_I"], s["C_E"], new_unf, choice)
        else:
            guard, upd = self._on_broker_change(s, s["C_I"], new_unf, choice)
        leaderless = s["C_L"] == 0
        upd = {f: z3.If(leaderless, v, s[f]) for f, v in upd.items()}
        upd["U"] = new_unf
        return [z3.If(leaderless, z3.And(*guard), choice == 0)], upd

    def _leader_ok(self, s, new_isr, choice: int):
        """new_leader_ok."""
        n = s["n"]
        L = s["C_L"]
        stays = z3.And(L != 0, _has(new_isr, L, n))
        return z3.If(stays, L == choice, _has(new_isr, choice, n))

    # ------------------------------------------------------------------------------ the rules

    def _running(self, s, b):
        return z3.And(s[f"bst{b}"] != OFFLINE_CLEAN, s[f"bst{b}"] != OFFLINE_DIRTY)

    def _fresh_above(self, s, x, prefix: str):
        n = s["n"]
        return [x > s[f"{prefix}{b}"] for b in range(1, n + 1)]

    def broker_start(self, s, cfg):
        n = s["n"]
        inc = z3.BitVec("start_incarnation", self.W)
        if not (cfg.clean_shutdown_limit + cfg.unclean_shutdown_limit):
            return [], [inc]
        steps = []
        for b in range(1, n + 1):
            kept = s[f"bep{b}"] if cfg.kip966 else z3.BitVecVal(0, self.W)
            guard = [z3.Or(s[f"bst{b}"] == OFFLINE_CLEAN, s[f"bst{b}"] == OFFLINE_DIRTY), inc > 0,
                     *self._fresh_above(s, inc, "binc"), *self._fresh_above(s, inc, "creg_inc")]
            upd = {f"bst{b}": z3.BitVecVal(STARTING, self.W), f"bep{b}": kept, f"binc{b}": inc, f"breg{b}": z3.BoolVal(False),
                   f"role{b}": z3.BitVecVal(NO_ROLE, self.W)}
            if self.counters:  # brokers.broker_start: the counter's value, then the counter moves on
                guard.append(inc == s["ctr_inc"])
                upd["ctr_inc"] = s["ctr_inc"] + 1
            steps.append(Step(guard, upd, {REG_REQ: self._send(self.slots(s, REG_REQ), [z3.BitVecVal(b, self.W), inc, kept])}))
        return steps, [inc]

    def receive_reg_response(self, s, cfg):
        n = s["n"]
        steps = []
        if not (cfg.clean_shutdown_limit + cfg.unclean_shutdown_limit):
            return steps, []
        for b in range(1, n + 1):
            for j, (dest, bep, inc, mo), p in self._receive(s, REG_RESP):
                guard = [p, dest == b, s[f"bst{b}"] == STARTING, z3.Not(s[f"breg{b}"])]
                if not cfg.mutated.reg_response_ignores_incarnation:
                    guard.append(s[f"binc{b}"] == inc)
                length = z3.If(mo > 1, z3.If(mo - 1 < s["clen"], mo - 1, s["clen"]), 0)
                upd = {f"bst{b}": z3.BitVecVal(RUNNING, self.W), f"bep{b}": bep, f"breg{b}": z3.BoolVal(True),
                       f"blen{b}": length}
                upd.update({f"bl{b}_{i}": z3.If(i <= length, self.code(self.record(s, i), n), 0)
                            for i in range(1, self.Mb + 1)})
                upd.update({f"r{x}{b}": z3.BitVecVal(0, n + 1) for x in "RIX"})
                upd.update({f"rL{b}": z3.BitVecVal(0, self.W), f"rle{b}": z3.BitVecVal(0, self.W), f"rpe{b}": z3.BitVecVal(0, self.W)})
                steps.append(Step(guard, upd, {REG_RESP: self._as_is(self._removed(s, REG_RESP, j))}))
        return steps, []

    def receive_metadata_update(self, s, cfg):
        n = s["n"]
        x = z3.BitVec("md_acks", self.V + 1)
        steps = []
        for b in range(1, n + 1):
            for o in range(1, self.Mb + 1):
                rec = self.record(s, o)
                role, rR, rL, rle = s[f"role{b}"], s[f"rR{b}"], s[f"rL{b}"], s[f"rle{b}"]
                needs = z3.Or(role == LEADER, z3.If(_bit(rR, b), rec["le"] > rle, _bit(rec["R"], b)))
                base = [o <= s["clen"], o > s[f"blen{b}"], self._running(s, b), s[f"breg{b}"], needs]
                learn = {f"blen{b}": z3.BitVecVal(o, self.W)}
                learn.update({f"bl{b}_{i}": self.code(self.record(s, i), n) if i <= o else
                              z3.BitVecVal(0, s[f"bl{b}_{i}"].size())
                              for i in range(1, self.Mb + 1)})
                steps.append(Step(base + [rec["pe"] <= s[f"rpe{b}"]], dict(learn), {}))  # MetadataNoOp
                in_new = _bit(rec["R"], b)
                zero = z3.BitVecVal(0, n + 1)
                md = {f"rR{b}": z3.If(in_new, rec["R"], zero), f"rI{b}": z3.If(in_new, rec["I"], zero),
                      f"rX{b}": z3.If(in_new, rec["I"], zero), f"rL{b}": z3.If(in_new, rec["L"], 0),
                      f"rle{b}": z3.If(in_new, rec["le"], 0), f"rpe{b}": z3.If(in_new, rec["pe"], 0)}
                newer = base + [rec["pe"] > s[f"rpe{b}"]]
                is_new_leader = z3.And(role != LEADER, rec["L"] == b)
                delete = z3.And(_bit(rR, b), z3.Not(in_new))
                lead_again = z3.And(z3.Not(delete), rL == b, rec["L"] == b)
                lead_new = z3.And(z3.Not(delete), rL != b, rec["L"] == b)
                follow = z3.And(z3.Not(delete), rec["L"] != b, in_new, rec["L"] != 0)
                remain_follower = z3.And(follow, rec["le"] == rle, rL != b)
                wait = z3.And(z3.Not(delete), rec["L"] != b, in_new, rec["L"] == 0)
                hwm, _ = self._hwm_on_change(s, b, rec["I"], rec["I"], x)
                cases = [
                    (delete, {**self._wait(s, b), **self._empty_data(s, b)}),
                    (z3.And(lead_again, rec["le"] == rle),
                     {**hwm, **{f: z3.If(rec["pe"] >= s[f"pape{b}"], v, s[f]) for f, v in self._no_pending_ap(s, b).items()}}),
                    (z3.Or(z3.And(lead_again, rec["le"] != rle), lead_new), self._become_leader(s, b, rec, is_new_leader, hwm)),
                    (remain_follower, {}),
                    (z3.And(follow, z3.Not(remain_follower)), self._become_follower(s, b, rec)),
                    (wait, self._wait(s, b)),
                ]
                for cond, sub in cases:
                    steps.append(Step(newer + [cond, *self._acks(s, self._log(s, b), s[f"hwm{b}"],
                                                                 self._commit_offset(s, b, rec["I"], s[f"leo{b}"], lambda c: s[f"pleo{b}_{c}"]),
                                                                 "md_acks")[1]],
                                      {**learn, **md, **sub}, {}))
        return steps, [x]

    def _become_leader(self, s, b, rec, is_new_leader, hwm: dict) -> dict:
        n = s["n"]
        upd = dict(hwm)
        upd.update({f"role{b}": z3.BitVecVal(LEADER, self.W), f"leso{b}": s[f"leo{b}"]})
        for c in range(1, n + 1):
            keep = z3.BoolVal(True) if self.cfg.mutated.leader_keeps_stale_follower_state else _bit(rec["I"], c)
            keep = z3.And(z3.Not(is_new_leader), keep)
            upd[f"pleo{b}_{c}"] = z3.If(keep, s[f"pleo{b}_{c}"], 0)
            upd[f"pbep{b}_{c}"] = z3.If(keep, s[f"pbep{b}_{c}"], 0)
            upd.update(self._without_partition(s, b, c))
        upd.update(self._no_pending_ap(s, b))
        return upd

    def _renounce(self, s, b) -> dict:
        return {**self._blank_peers(s, b), **self._no_pending_ap(s, b)}

    def _become_follower(self, s, b, rec) -> dict:
        """BecomeFollowerInNewEpoch, with AddPartitionToFetcher."""
        n = s["n"]
        upd = self._renounce(s, b)
        upd.update({f"role{b}": z3.BitVecVal(FOLLOWER, self.W), f"leso{b}": z3.BitVecVal(0, self.W)})
        new_epoch = z3.BoolVal(False) if self.cfg.mutated.fetcher_kept_on_new_epoch else rec["le"] > s[f"rle{b}"]
        leader_added = z3.Or(*[z3.And(rec["L"] == c, s[f"f{b}_{c}_a"]) for c in range(1, n + 1)])
        reset = z3.Or(new_epoch, z3.Not(leader_added))
        log, leo = self._log(s, b), s[f"leo{b}"]
        for c in range(1, n + 1):
            blank = self._without_partition(s, b, c)
            fresh = {f"f{b}_{c}_a": z3.BoolVal(True), f"f{b}_{c}_o": leo, f"f{b}_{c}_e": self._last_epoch(log, leo),
                     f"f{b}_{c}_d": z3.BoolVal(False)}
            for f in blank:
                upd[f] = z3.If(reset, z3.If(rec["L"] == c, fresh[f], blank[f]), s[f])
        return upd

    def _wait(self, s, b) -> dict:
        """WaitForLeaderChange."""
        upd = self._renounce(s, b)
        upd.update({f"role{b}": z3.BitVecVal(NO_ROLE, self.W), f"leso{b}": z3.BitVecVal(0, self.W)})
        for c in range(1, s["n"] + 1):
            upd.update(self._without_partition(s, b, c))
        return upd

    def _proposal(self, s, b, timed_out):
        n = s["n"]
        hwm, leso = s[f"hwm{b}"], s[f"leso{b}"]
        out = z3.BitVecVal(0, n + 1)
        for c in range(1, n + 1):
            one = z3.BitVecVal(bit(c), n + 1)
            if c == b:
                joins = _bit(s[f"rR{b}"], b)
            else:
                leo = s[f"pleo{b}_{c}"]
                caught_up = z3.And(leo != 0, z3.Or(leo >= hwm, self.cfg.mutated.isr_join_below_hwm),
                                   z3.Or(leo >= leso, self.cfg.mutated.isr_join_below_leso))
                joins = z3.And(_bit(s[f"rR{b}"], c), z3.If(_bit(s[f"rI{b}"], c), z3.Not(_bit(timed_out, c)), caught_up))
            out = out | z3.If(joins, one, z3.BitVecVal(0, n + 1))
        return out

    def send_ap_request(self, s, cfg):
        n = s["n"]
        timed_out = z3.BitVec("timed_out", n + 1)
        steps = []
        for b in range(1, n + 1):
            curr = s[f"rI{b}"]
            guard = [s[f"bst{b}"] == RUNNING, s[f"role{b}"] == LEADER, s[f"pape{b}"] <= s[f"rpe{b}"],
                     timed_out & ~curr == 0, z3.Not(_bit(timed_out, b))]
            if cfg.leader_shrink_isr_limit:
                guard.append(z3.Implies(timed_out != 0, z3.And(s["ls"] < cfg.leader_shrink_isr_limit, self._may_disrupt(s))))
            else:
                guard.append(timed_out == 0)
            proposal = self._proposal(s, b, timed_out)
            guard.append(proposal != curr)
            epochs = [z3.If(z3.Not(_bit(proposal, c)), 0, s[f"bep{b}"] if c == b else
                            z3.If(_bit(curr, c), 0, s[f"pbep{b}_{c}"])) for c in range(1, n + 1)]
            request = [z3.BitVecVal(b, self.W), self._num(proposal), *epochs, z3.BitVecVal(b, self.W), s[f"rle{b}"], s[f"rpe{b}"], s[f"bep{b}"]]
            upd = {f"rX{b}": proposal | curr, f"pape{b}": s[f"rpe{b}"] + 1, f"papq{b}": z3.BoolVal(True),
                   "ls": z3.If(curr & ~proposal != 0, s["ls"] + 1, s["ls"])}
            upd.update({f"papq{b}_{k}": v for k, v in enumerate(request)})
            steps.append(Step(guard, upd, {AP_REQ: self._send(self.slots(s, AP_REQ), request)}))
        return steps, [timed_out]

    def receive_ap_response(self, s, cfg):
        n = s["n"]
        x = z3.BitVec("ap_acks", self.V + 1)
        steps = []
        width = self.msg_width(AP_REQ, n)
        for b in range(1, n + 1):
            for j, m, p in self._receive(s, AP_RESP):
                dest, error, R, isr, leader, le, pe, req = m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7:]
                guard = [p, dest == b, s[f"bst{b}"] == RUNNING, s[f"role{b}"] == LEADER, s[f"pape{b}"] > s[f"rpe{b}"],
                         s[f"papq{b}"], _eq([s[f"papq{b}_{k}"] for k in range(width)], req)]
                ok = error == NO_ERROR
                guard.append(z3.Implies(ok, z3.And(pe > s[f"rpe{b}"], le == s[f"rle{b}"])))
                Rs, Is = _set(R, n + 1), _set(isr, n + 1)
                new = {f"rR{b}": z3.If(ok, Rs, s[f"rR{b}"]), f"rI{b}": z3.If(ok, Is, s[f"rI{b}"]),
                       f"rX{b}": z3.If(ok, Is, s[f"rI{b}"]), f"rL{b}": z3.If(ok, leader, s[f"rL{b}"]),
                       f"rle{b}": z3.If(ok, le, s[f"rle{b}"]), f"rpe{b}": z3.If(ok, pe, s[f"rpe{b}"])}
                hwm, new_hwm = self._hwm_on_change(s, b, new[f"rI{b}"], new[f"rX{b}"], x)
                _, cons = self._acks(s, self._log(s, b), s[f"hwm{b}"], new_hwm - 1, "ap_acks")
                steps.append(Step(guard + cons + [z3.ULT(R, 2 ** (n + 1)), z3.ULT(isr, 2 ** (n + 1))],
                                  {**new, **hwm, **self._no_pending_ap(s, b)},
                                  {AP_RESP: self._as_is(self._removed(s, AP_RESP, j))}))
        return steps, [x]

    def _converged(self, s, leader, follower):
        return z3.And(s[f"leo{leader}"] == s[f"leo{follower}"], s[f"hwm{leader}"] == s[f"hwm{follower}"],
                      s[f"pleo{leader}_{follower}"] == s[f"leo{follower}"],
                      s[f"pbep{leader}_{follower}"] == s[f"bep{follower}"])

    def send_fetch_request(self, s, cfg):
        n = s["n"]
        steps = []
        for b, to in itertools.permutations(range(1, n + 1), 2):
            f = lambda x: s[f"f{b}_{to}_{x}"]  # noqa: E731
            guard = [s[f"bst{b}"] == RUNNING, f("a"), z3.Not(f("p")), s[f"rL{b}"] == to, z3.Not(self._converged(s, to, b))]
            request = [z3.BitVecVal(b, self.W), z3.BitVecVal(to, self.W), s[f"bep{b}"], s[f"rle{b}"], f("o"), f("e")]
            steps.append(Step(guard, {f"f{b}_{to}_p": z3.BoolVal(True), f"f{b}_{to}_d": z3.BoolVal(False)},
                              {FETCH_REQ: self._send(self.slots(s, FETCH_REQ), request)}))
        return steps, []

    def receive_fetch_request(self, s, cfg):
        n = s["n"]
        x = z3.BitVec("fetch_acks", self.V + 1)
        steps = []
        for b in range(1, n + 1):
            for j, (src, dest, bep, le, fo, lfe), p in self._receive(s, FETCH_REQ):
                rest = self._removed(s, FETCH_REQ, j)
                guard = [p, dest == b, s[f"bst{b}"] == RUNNING]
                md_le, hwm, leo = s[f"rle{b}"], s[f"hwm{b}"], s[f"leo{b}"]
                leads = z3.And(s[f"role{b}"] == LEADER, md_le == le)
                error = z3.If(md_le < le, self._n(UNKNOWN_LEADER_EPOCH), z3.If(md_le > le, self._n(FENCED_LEADER_EPOCH),
                                                                   self._n(NOT_LEADER_OR_FOLLOWER)))
                zero = z3.BitVecVal(0, self.W)
                refused = [z3.BitVecVal(b, self.W), src, error, md_le, fo, zero, zero, zero, hwm, zero, zero, zero, zero]
                steps.append(Step(guard + [z3.Not(leads)], {}, {
                    FETCH_REQ: self._as_is(rest), FETCH_RESP: self._send(self.slots(s, FETCH_RESP), refused)}))
                epoch, end = self._lofe(s, b, lfe, True)
                diverges = z3.Or(epoch < lfe, end < fo)
                div = [z3.BitVecVal(b, self.W), src, z3.BitVecVal(NO_ERROR, self.W), md_le, fo, z3.BitVecVal(1, self.W), epoch, end, hwm, zero, zero, zero, zero]
                steps.append(Step(guard + [leads, diverges], {},
                                  {FETCH_REQ: self._as_is(rest), FETCH_RESP: self._send(self.slots(s, FETCH_RESP), div)}))
                peer_leo = lambda c: z3.If(src == c, fo, s[f"pleo{b}_{c}"])  # noqa: E731
                new_hwm = self._commit_offset(s, b, s[f"rX{b}"], leo, peer_leo) + 1
                new_hwm = z3.If(self._may_advance(s[f"rI{b}"], n), new_hwm, hwm)
                upd = self._advance(s, b, s[f"rI{b}"], new_hwm, z3.BoolVal(True), self._log(s, b), x)
                _, acks = self._acks(s, self._log(s, b), hwm, new_hwm - 1, "fetch_acks")
                for c in range(1, n + 1):
                    upd[f"pleo{b}_{c}"] = z3.If(src == c, fo, s[f"pleo{b}_{c}"])
                    upd[f"pbep{b}_{c}"] = z3.If(src == c, bep, s[f"pbep{b}_{c}"])
                has = fo < leo
                rep, rval = _select(fo, [e for e, _ in self._log(s, b)], z3.BitVecVal(0, self.W)), \
                    _select(fo, [v for _, v in self._log(s, b)], z3.BitVecVal(0, self.W))
                ok = [z3.BitVecVal(b, self.W), src, z3.BitVecVal(NO_ERROR, self.W), md_le, fo, zero, zero, zero, _zmax(new_hwm, hwm),
                      z3.If(has, self._n(1), self._n(0)), z3.If(has, rep, 0), z3.If(has, fo, 0), z3.If(has, rval, 0)]
                steps.append(Step(guard + [leads, z3.Not(diverges), src >= 1, src <= n] + acks, upd,
                                  {FETCH_REQ: self._as_is(rest), FETCH_RESP: self._send(self.slots(s, FETCH_RESP), ok)}))
        return steps, [x]

    def receive_fetch_response(self, s, cfg):
        n = s["n"]
        steps = []
        for b in range(1, n + 1):
            for j, m, p in self._receive(s, FETCH_RESP):
                src, dest, error, le, fo, div, dep, doff, mhwm, nrec, r_ep, _, r_val = m
                rest = {FETCH_RESP: self._as_is(self._removed(s, FETCH_RESP, j))}
                for c in range(1, n + 1):
                    if c == b:
                        continue
                    f = lambda x: s[f"f{b}_{c}_{x}"]  # noqa: E731
                    guard = [p, dest == b, src == c, s[f"bst{b}"] == RUNNING, f("p")]
                    stale = z3.Or(z3.Not(f("a")),
                                  z3.And(f("o") != fo, not cfg.mutated.fetch_response_ignores_offset),
                                  z3.And(s[f"rle{b}"] != le, not cfg.mutated.fetch_response_ignores_epoch))
                    steps.append(Step(guard + [stale], {f"f{b}_{c}_p": z3.BoolVal(False)}, rest))
                    steps.append(Step(guard + [z3.Not(stale), error != NO_ERROR],
                                      {f"f{b}_{c}_p": z3.BoolVal(False), f"f{b}_{c}_d": z3.BoolVal(True)}, rest))
                    good = guard + [z3.Not(stale), error == NO_ERROR]
                    # TruncateToSafePoint
                    lep, lend = self._lofe(s, b, dep, False)
                    cut = z3.If(z3.Or(lep != dep, lend < doff), lend, doff)
                    new_leo = z3.If(cut > 1, cut, 1)
                    upd = {f"leo{b}": new_leo}
                    log = self._log(s, b)
                    for i, (e, v) in enumerate(log, 1):
                        upd[f"lep{b}_{i}"] = z3.If(i < new_leo, e, 0)
                        upd[f"lval{b}_{i}"] = z3.If(i < new_leo, v, 0)
                    kept = [(upd[f"lep{b}_{i}"], upd[f"lval{b}_{i}"]) for i in range(1, self.V + 1)]
                    upd.update({f"f{b}_{c}_a": z3.BoolVal(True), f"f{b}_{c}_o": new_leo,
                                f"f{b}_{c}_e": self._last_epoch(kept, new_leo), f"f{b}_{c}_d": z3.BoolVal(False),
                                f"f{b}_{c}_p": z3.BoolVal(False)})
                    steps.append(Step(good + [div == 1, cut - 1 <= s[f"leo{b}"] - 1], upd, rest))
                    # append the records (at most one) and take the HWM
                    leo = s[f"leo{b}"]
                    app_leo = leo + nrec
                    upd = {f"leo{b}": app_leo, f"hwm{b}": z3.If(mhwm <= app_leo, mhwm, s[f"hwm{b}"])}
                    for i, (e, v) in enumerate(log, 1):
                        upd[f"lep{b}_{i}"] = z3.If(z3.And(nrec == 1, leo == i), r_ep, e)
                        upd[f"lval{b}_{i}"] = z3.If(z3.And(nrec == 1, leo == i), r_val, v)
                    upd.update({f"f{b}_{c}_a": z3.BoolVal(True), f"f{b}_{c}_o": app_leo,
                                f"f{b}_{c}_e": z3.If(nrec == 1, r_ep, f("e")), f"f{b}_{c}_d": z3.BoolVal(False),
                                f"f{b}_{c}_p": z3.BoolVal(False)})
                    steps.append(Step(good + [div == 0, app_leo <= self.V + 1], upd, rest))
        return steps, []

    def write_record(self, s, cfg):
        n = s["n"]
        x = z3.BitVec("write_acks", self.V + 1)
        steps = []
        for b in range(1, n + 1):
            for v in range(1, self.V + 1):
                leo, hwm = s[f"leo{b}"], s[f"hwm{b}"]
                guard = [z3.Not(_bit(s["sent"], v)), s[f"bst{b}"] == RUNNING, s[f"role{b}"] == LEADER,
                         _count(s[f"rX{b}"]) >= cfg.min_isr, leo <= self.V]
                log = [(z3.If(leo == i, s[f"rle{b}"], e), z3.If(leo == i, v, val))
                       for i, (e, val) in enumerate(self._log(s, b), 1)]
                new_hwm = self._commit_offset(s, b, s[f"rX{b}"], leo + 1, lambda c: s[f"pleo{b}_{c}"]) + 1
                hold = z3.Not(self._may_advance(s[f"rI{b}"], n))
                if cfg.write_commit == "tla":
                    hold = z3.Or(hold, leo == 1)
                new_hwm = z3.If(hold, hwm, new_hwm)
                adv = new_hwm > hwm
                sent = s["sent"] | z3.BitVecVal(bit(v), self.V + 1)
                ackable = z3.BitVecVal(0, self.V + 1) if cfg.write_commit == "tla" else z3.BitVecVal(bit(v), self.V + 1)
                acks = [x & ~((s["sent"] | ackable) & ~s["acked"]) == 0]
                for w in range(1, self.V + 1):
                    held = z3.Or(*[z3.And(hwm <= i, i <= new_hwm - 1, val == w) for i, (_, val) in enumerate(log, 1)])
                    acks.append(z3.Implies(_bit(x, w), held))
                upd = {"sent": sent, f"leo{b}": leo + 1, f"hwm{b}": _zmax(new_hwm, hwm),
                       "acked": z3.If(adv, s["acked"] | x, s["acked"]),
                       "thwm": z3.If(z3.And(adv, new_hwm > s["thwm"]), new_hwm, s["thwm"])}
                for i, (e, val) in enumerate(log, 1):
                    upd[f"lep{b}_{i}"], upd[f"lval{b}_{i}"] = e, val
                steps.append(Step(guard + acks, upd, {}))
        return steps, [x]

    def _shutdown(self, s, b: int, choice: int, status: int, kept):
        """What the shutdowns share (faults.shutdown, with DropFetchSessions)."""
        n = s["n"]
        guard, upd = self._fenced(s, b, choice)
        upd.update({f"bst{b}": z3.BitVecVal(status, self.W), f"bep{b}": kept, f"binc{b}": z3.BitVecVal(0, self.W),
                    f"breg{b}": z3.BoolVal(False), f"role{b}": z3.BitVecVal(NO_ROLE, self.W)})
        upd.update(self._blank_peers(s, b))
        upd.update(self._no_pending_ap(s, b))
        for c in range(1, n + 1):
            upd.update({f"f{b}_{c}_{x}": v for x, v in (("a", z3.BoolVal(False)), ("o", z3.BitVecVal(0, self.W)),
                                                        ("e", z3.BitVecVal(0, self.W)), ("d", z3.BoolVal(False)),
                                                        ("p", z3.BoolVal(False)))})
            if c != b:
                pend, added = s[f"f{c}_{b}_p"], s[f"f{c}_{b}_a"]
                upd[f"f{c}_{b}_p"] = z3.BoolVal(False)
                upd[f"f{c}_{b}_d"] = z3.If(z3.And(pend, added), True, s[f"f{c}_{b}_d"])
        keep = lambda m: z3.And(m[0] != b, m[1] != b)  # noqa: E731  neither source nor destination
        msgs = {k: ("keep", keep) for k in (FETCH_REQ, FETCH_RESP)}
        return [self._running(s, b), *guard], upd, msgs

    def _shutdowns(self, s, cfg, status, ctr, limit, kept=None, extra=lambda s, b: [],
                   data_loss=False):
        n = s["n"]
        steps = []
        choice = z3.BitVec("choice", self.W)
        for b in range(1, n + 1):
            guard, upd, msgs = self._shutdown(s, b, choice, status, kept(s, b) if kept else z3.BitVecVal(0, self.W))
            guard += [s[ctr] < limit, self._may_disrupt(s), *extra(s, b)]
            upd[ctr] = s[ctr] + 1
            if data_loss:
                upd.update(self._empty_data(s, b))
                upd[f"leso{b}"] = z3.BitVecVal(0, self.W)
            steps.append(Step(guard, upd, msgs))
        return steps

    def unclean_shutdown(self, s, cfg):
        if not (cfg.unclean_shutdown_limit and not cfg.kip966):
            return [], []

        def last_standing(s, b):
            if not cfg.avoid_last_replica_standing:
                return []
            return [z3.Not(z3.And(_bit(s["C_I"], b), _count(s["C_I"]) == 1))]
        return self._shutdowns(s, cfg, OFFLINE_DIRTY, "us", cfg.unclean_shutdown_limit, extra=last_standing,
                               data_loss=True), [z3.BitVec("choice", self.W)]

    def clean_shutdown(self, s, cfg):
        if not (cfg.clean_shutdown_limit and not cfg.kip966):
            return [], []
        return self._shutdowns(s, cfg, OFFLINE_CLEAN, "cs", cfg.clean_shutdown_limit), [z3.BitVec("choice", self.W)]

    def data_loss_shutdown(self, s, cfg):
        if not (cfg.unclean_shutdown_limit and cfg.kip966):
            return [], []
        return self._shutdowns(s, cfg, OFFLINE_DIRTY, "us", cfg.unclean_shutdown_limit, data_loss=True), [z3.BitVec("choice", self.W)]

    def no_data_loss_shutdown(self, s, cfg):
        if not (cfg.clean_shutdown_limit and cfg.kip966):
            return [], []
        clean = self._shutdowns(s, cfg, OFFLINE_CLEAN, "cs", cfg.clean_shutdown_limit, kept=lambda s, b: s[f"bep{b}"])
        return clean + self._shutdowns(s, cfg, OFFLINE_CLEAN, "cs", cfg.clean_shutdown_limit), [z3.BitVec("choice", self.W)]

    def receive_reg_request(self, s, cfg):
        n = s["n"]
        epoch = z3.BitVec("new_broker_epoch", self.W)
        steps = []
        if not (cfg.clean_shutdown_limit + cfg.unclean_shutdown_limit):
            return steps, [epoch]
        choice = z3.BitVec("choice", self.W)
        for b in range(1, n + 1):
            for j, (who, inc, bep), p in self._receive(s, REG_REQ):
                if True:
                    guard = [p, who == b, z3.Or(z3.Not(_bit(s["U"], b)), s[f"creg_inc{b}"] == inc),
                             *self._fresh_above(s, epoch, "creg_ep"), *self._fresh_above(s, epoch, "bep"), epoch > n]
                    if cfg.kip966:
                        g1, u1 = self._elr_change(s, s["C_I"] & ~z3.BitVecVal(bit(b), n + 1),
                                                  s["C_E"] & ~z3.BitVecVal(bit(b), n + 1),
                                                  s["U"] | z3.BitVecVal(bit(b), n + 1), choice)
                        u1["U"] = s["U"] | z3.BitVecVal(bit(b), n + 1)
                        g2, u2 = self._unfenced(s, b, choice)
                        unclean = bep == 0
                        names = set(u1) | set(u2)
                        upd = {f: z3.If(unclean, u1.get(f, s[f]), u2.get(f, s[f])) for f in names}
                        guard.append(z3.If(unclean, z3.And(*g1), z3.And(*g2)))
                    else:
                        g2, upd = self._unfenced(s, b, choice)
                        guard += g2
                    upd.update({f"creg_ep{b}": epoch, f"creg_inc{b}": inc})
                    if self.counters:  # controller.receive_reg_request: the counter plus one
                        guard.append(epoch == s["ctr_ep"] + 1)
                        upd["ctr_ep"] = epoch
                    response = [z3.BitVecVal(b, self.W), epoch, inc, s["clen"]]
                    steps.append(Step(guard, upd, {REG_REQ: self._as_is(self._removed(s, REG_REQ, j)),
                                                   REG_RESP: self._send(self.slots(s, REG_RESP), response)}))
        return steps, [epoch, choice]

    def receive_ap_request(self, s, cfg):
        n = s["n"]
        choice = z3.BitVec("choice", self.W)
        steps = []
        for b in range(1, n + 1):
            for j, m, p in self._receive(s, AP_REQ):
                src, isr, epochs, pe, bep = m[0], m[1], m[2:2 + n], m[4 + n], m[5 + n]
                isr_bv = _set(isr, n + 1)
                rest = self._removed(s, AP_REQ, j)
                fenced_epoch = z3.Not(z3.And(s["C_L"] == b, bep == s[f"creg_ep{b}"],
                                             z3.Or(pe == s["C_pe"], cfg.mutated.ap_ignores_partition_epoch)))
                ineligible = z3.Or(*[z3.And(_bit(isr_bv, c), z3.Or(
                    z3.Not(_bit(s["U"], c)),
                    z3.Not(z3.Or(epochs[c - 1] == 0, s[f"creg_ep{c}"] == epochs[c - 1], cfg.mutated.ap_ignores_broker_epoch))))
                    for c in range(1, n + 1)])
                error = z3.If(fenced_epoch, self._n(FENCED_LEADER_EPOCH), self._n(INELIGIBLE_REPLICA))
                zero = z3.BitVecVal(0, self.W)
                base = [p, src == b, z3.ULT(isr, 2 ** (n + 1))]
                refusal = [z3.BitVecVal(b, self.W), error, zero, zero, zero, zero, zero, *m]
                steps.append(Step(base + [z3.Or(fenced_epoch, ineligible)], {},
                                  {AP_REQ: self._as_is(rest), AP_RESP: self._send(self.slots(s, AP_RESP), refusal)}))
                cur = self.record(s)
                final = isr_bv & ~cur["M"]
                complete = z3.And((cur["A"] | cur["M"]) != 0, cur["A"] & ~final == 0, _count(final) >= cfg.min_isr)
                md = dict(cur, R=z3.If(complete, cur["R"] & ~cur["M"], cur["R"]), I=z3.If(complete, final, isr_bv),
                          le=z3.If(complete, cur["le"] + 1, cur["le"]), pe=cur["pe"] + 1,
                          A=z3.If(complete, z3.BitVecVal(0, n + 1), cur["A"]),
                          M=z3.If(complete, z3.BitVecVal(0, n + 1), cur["M"]))
                if cfg.kip966:
                    md["E"] = self._update_elr(s, md["I"], md["R"])
                if True:
                    md_c = dict(md, L=choice)
                    guard, upd = self._apply(s, md_c)
                    response = [z3.BitVecVal(b, self.W), z3.BitVecVal(NO_ERROR, self.W), self._num(md["R"]), self._num(md["I"]),
                                choice, md["le"], md["pe"], *m]
                    steps.append(Step(base + guard + [z3.Not(fenced_epoch), z3.Not(ineligible),
                                                      self._leader_ok(s, md["I"], choice)], upd,
                                      {AP_REQ: self._as_is(rest),
                                       AP_RESP: self._send(self.slots(s, AP_RESP), response)}))
        return steps, [choice]

    def fence_broker(self, s, cfg):
        n = s["n"]
        steps = []
        if not cfg.fence_broker_limit:
            return steps, []
        choice = z3.BitVec("choice", self.W)
        for b in range(1, n + 1):
            guard, upd = self._fenced(s, b, choice)
            guard += [s["fb"] < cfg.fence_broker_limit, self._may_disrupt(s), _bit(s["U"], b)]
            upd["fb"] = s["fb"] + 1
            steps.append(Step(guard, upd, {}))
        return steps, [choice]

    def unfence_broker(self, s, cfg):
        n = s["n"]
        steps = []
        choice = z3.BitVec("choice", self.W)
        for b in range(1, n + 1):
            guard, upd = self._unfenced(s, b, choice)
            steps.append(Step(guard + [z3.Not(_bit(s["U"], b)), s[f"bst{b}"] == RUNNING], upd, {}))
        return steps, [choice]

    def reassign(self, s, cfg):
        n = s["n"]
        adding, removing = z3.BitVec("adding", n + 1), z3.BitVec("removing", n + 1)
        if not cfg.reassignment_limit:
            return [], [adding, removing, z3.BitVec("choice", self.W)]
        cur = self.record(s)
        zero = z3.BitVecVal(0, n + 1)
        full = z3.BitVecVal((1 << (n + 1)) - 2, n + 1)
        base = [s["ra"] < cfg.reassignment_limit, (cur["A"] | cur["M"]) == 0, (adding | removing) != 0,
                adding & cur["R"] == 0, removing & ~cur["R"] == 0, adding & ~full == 0,
                _count(cur["R"]) + _count(adding) - _count(removing) >= cfg.min_isr]
        grown = cur["R"] | adding
        fr, fi = grown & ~removing, cur["I"] & ~removing
        now = z3.And(adding & ~fi == 0, _count(fi) >= cfg.min_isr, fr != 0)
        md = dict(cur, R=z3.If(now, fr, grown), I=z3.If(now, fi, cur["I"]), le=z3.If(now, cur["le"] + 1, cur["le"]),
                  pe=cur["pe"] + 1, A=z3.If(now, zero, adding), M=z3.If(now, zero, removing))
        if cfg.kip966:
            md["E"] = z3.If(now, self._update_elr(s, fi, fr), cur["E"])
        choice = z3.BitVec("choice", self.W)
        cand = md["I"] & s["U"]
        leaderless = z3.If(choice == 0, cand == 0, _has(cand, choice, n))
        guard = [z3.If(cur["L"] == 0, leaderless, self._leader_ok(s, md["I"], choice))]
        md_c = dict(md, L=choice, le=z3.If(z3.And(choice != 0, cur["L"] == 0), cur["le"] + 1, md["le"]))
        g, upd = self._apply(s, md_c)
        upd["ra"] = s["ra"] + 1
        return [Step(base + guard + g, upd, {})], [adding, removing, choice]


def _const(x, v):
    if z3.is_bool(x):
        return z3.BoolVal(bool(v))
    return z3.BitVecVal(v, x.size()) if z3.is_bv(x) else z3.BitVecVal(v, W)


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


# ---------------------------------------------------------------------------- the strengthening lemmas

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

# What the gate and the nightly run of this relation: the properties and lemmas whose proof closes, and where
# (p1's states hold at most two messages of a type and two metadata records, so p1 with those bounds is the same
# model, which stops with an error past them, over a relation a third the size; `prove` without --config runs
# it); and the mutation whose BFS trace the nightly's BMC must find at the same length (docs/models/replication.md).
CI_PLAN = {"prove": ("p1", [*PROPERTIES, *LEMMAS]), "settings": ["message_bound=2", "metadata_log_bound=3"],
           "bmc": ("p1", "isr_join_below_hwm", 11)}  # the nightly: BMC finds this mutation at BFS's length
