"""Named cluster scenarios: a topic, then admin calls (Kafka's Admin API) and faults, each with its wait.

A scenario runs on a started `Cluster`; every wait has a timeout, and a wait that times out ends the
scenario with BadInput (one line, exit 2: the cluster did not do what the scenario needs, so there is no
history to judge). Brokers are 1, 2, 3; the topic has one partition.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from harness.cluster import Cluster
from harness.cluster.admin import AdminError
from harness.errors import BadInput

TOPIC = "reassigned"
WAIT_TIMEOUT = 90.0  # seconds for one wait (a killed broker is fenced after 3 s; a loaded machine is slow)


@dataclass(frozen=True)
class Step:
    what: str  # produce, reassign, cancel, kill, restart, shutdown, elect, wait
    arg: object = None
    until: str | None = None  # what to wait for after the step (see `Run.wait`), with `value`
    value: object = None

    def text(self) -> str:
        arg = self.arg
        said = {"produce": "produce {} records (acks=all)", "reassign": "reassign to {}",
                "cancel": "cancel the reassignment", "kill": "kill -9 broker {}", "restart": "restart broker {}",
                "shutdown": "controlled shutdown of broker {}", "elect": "{} leader election",
                "wait": "wait"}[self.what].format(list(arg) if isinstance(arg, tuple) else arg)  # [2, 3], not (2, 3)
        if self.until:
            value = list(self.value) if isinstance(self.value, tuple) else self.value
            said += f", until {self.until}" + (f" {value}" if value is not None else "")
        return said


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    replicas: tuple[int, ...]
    steps: tuple[Step, ...]
    configs: dict = field(default_factory=dict)  # the topic's configs
    nightly: bool = True  # False: the short one `make test` runs
    controllers: tuple[int, ...] = (1, 2, 3)  # the nodes that are also controllers (all: the combined mode)
    known: str = ""  # a known divergence of Kafka from the model this scenario may show (the nightly reports it)

    @property
    def targets(self) -> tuple[tuple[int, ...], ...]:
        """The assignments the scenario asks for: the model's reassignment targets."""
        return tuple(dict.fromkeys(s.arg for s in self.steps if s.what == "reassign"))

    @property
    def produced(self) -> int:
        return sum(s.arg for s in self.steps if s.what == "produce")


SCENARIOS = {s.name: s for s in (
    Scenario("kill-leader", "a reassignment [1,2] -> [2,3], then the new leader killed -9 and restarted (the short "
             "one, in `make test`)", (1, 2), (
                 Step("produce", 2),
                 Step("reassign", (2, 3), until="assignment", value=(2, 3)),
                 Step("kill", 2, until="fenced", value=2),
                 Step("restart", 2, until="isr", value=(2, 3)),
             ), nightly=False),
    Scenario("reassign", "a plain reassignment [1,2] -> [2,3]", (1, 2), (
        Step("produce", 2),
        Step("reassign", (2, 3), until="assignment", value=(2, 3)),
    )),
    Scenario("kill-leader-midway", "a reassignment [1,2] -> [1,3] with its leader killed -9 at once, then restarted",
             (1, 2), (
                 Step("produce", 2),
                 Step("reassign", (1, 3)),
                 Step("kill", 1, until="fenced", value=1),
                 Step("restart", 1, until="assignment", value=(1, 3)),
                 Step("wait", until="isr", value=(1, 3)),
             )),  # Kafka 4.4 completes at once (KAFKA-19975): explained by completion=kafka-4.4, 4.0 by kafka
    Scenario("shutdown-target", "a controlled shutdown of a target: [1,2] -> [1,3] waits for broker 3, which "
             "then restarts", (1, 2), (
                 Step("produce", 2),
                 Step("shutdown", 3, until="fenced", value=3),
                 Step("reassign", (1, 3), until="reassigning"),
                 Step("restart", 3, until="assignment", value=(1, 3)),
             )),
    Scenario("cancel", "a reassignment [1,2] -> [2,3] to a shut-down target, cancelled", (1, 2), (
        Step("produce", 2),
        Step("shutdown", 3, until="fenced", value=3),
        Step("reassign", (2, 3), until="reassigning"),
        Step("cancel", until="assignment", value=(1, 2)),
        Step("restart", 3, until="unfenced", value=3),
    )),
    Scenario("replace", "an ongoing reassignment [1,2] -> [1,3] replaced by [2,3]", (1, 2), (
        Step("produce", 2),
        Step("shutdown", 3, until="fenced", value=3),
        Step("reassign", (1, 3), until="reassigning"),
        Step("reassign", (2, 3), until="reassigning"),
        Step("restart", 3, until="assignment", value=(2, 3)),
    )),
    Scenario("unclean-election", "unclean.leader.election.enable: the ISR's last member killed -9, an out-of-sync "
             "replica elected (node 3 alone is the controller, so that two brokers may be down at once)", (1, 2), (
                 Step("kill", 2, until="fenced", value=2),
                 Step("produce", 2),
                 Step("kill", 1, until="leaderless"),
                 Step("restart", 2, until="unfenced", value=2),
                 Step("elect", "UNCLEAN", until="leader", value=2),
                 Step("restart", 1, until="unfenced", value=1),
             ), configs={"unclean.leader.election.enable": "true"}, controllers=(3,)),
)}


def scenario(name: str) -> Scenario:
    if name not in SCENARIOS:
        raise BadInput(f"unknown scenario {name!r} (known: {', '.join(SCENARIOS)})")
    return SCENARIOS[name]


class Run:
    """One scenario on one cluster; `log` receives a line per step."""

    def __init__(self, cluster: Cluster, plan: Scenario, log: Callable[[str], None]) -> None:
        self.cluster, self.plan, self.log = cluster, plan, log
        self.admin = cluster.admin

    def run(self) -> None:
        self.admin.create_topic(TOPIC, self.plan.replicas, {"min.insync.replicas": "1", **self.plan.configs})
        self.wait("leader", self.plan.replicas[0])
        for step in self.plan.steps:
            self.log(step.text())
            try:
                self.act(step)
            except AdminError as exc:
                raise BadInput(f"scenario {self.plan.name}: {step.text()}: Kafka refused: {exc}") from None
            if step.until:
                self.wait(step.until, step.value)

    def act(self, step: Step) -> None:
        admin, cluster = self.admin, self.cluster
        if step.what == "produce":
            admin.produce(TOPIC, step.arg)
        elif step.what == "reassign":
            admin.reassign(TOPIC, step.arg)
        elif step.what == "cancel":
            admin.reassign(TOPIC, None)
        elif step.what == "kill":
            cluster.kill(step.arg)
        elif step.what == "shutdown":
            cluster.shut_down(step.arg)
        elif step.what == "restart":
            cluster.launch(step.arg)
        elif step.what == "elect":
            try:
                admin.elect(TOPIC, step.arg)
            except AdminError as exc:
                if "ElectionNotNeeded" not in str(exc):
                    raise  # the controller may already have elected on the broker's unfencing

    def wait(self, until: str, value) -> None:
        """Poll until the condition holds (every 0.25 s, WAIT_TIMEOUT at most)."""
        admin = self.admin
        conditions = {
            # a set: a cancellation keeps the merged list's order ([1,2] -> [2,3] cancelled is [2,1])
            "assignment": lambda: set((v := admin.describe(TOPIC)).replicas) == set(value)
            and not admin.reassigning(TOPIC) and v.leader != -1,
            "reassigning": lambda: admin.reassigning(TOPIC),
            "isr": lambda: set(admin.describe(TOPIC).isr) == set(value),
            "leader": lambda: admin.describe(TOPIC).leader == value,
            "leaderless": lambda: admin.describe(TOPIC).leader == -1,
            "fenced": lambda: value not in admin.unfenced_brokers(),
            "unfenced": lambda: value in admin.unfenced_brokers(),
        }
        deadline = time.monotonic() + WAIT_TIMEOUT
        while True:
            try:
                if conditions[until]():
                    return
            except AdminError:
                pass  # a broker that just died or restarted: ask again
            if time.monotonic() > deadline:
                raise BadInput(f"scenario {self.plan.name}: waited {WAIT_TIMEOUT:.0f} s for {until} {value or ''}"
                               f"(see the nodes' server.log under {self.cluster.workdir})")
            time.sleep(0.25)


def describe_scenarios() -> list[dict]:
    return [{"name": s.name, "summary": s.summary, "replicas": list(s.replicas), "configs": s.configs,
             "nightly_only": s.nightly, "controllers": list(s.controllers), "known": s.known, "steps": [step.text() for step in s.steps]} for s in SCENARIOS.values()]

