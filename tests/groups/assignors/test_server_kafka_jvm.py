"""The coordinator's assignors against Kafka's own code on a real JVM.

When ``KAFKA_SRC`` names a Kafka checkout (commit 1eb7644349cb or near it) and ``java``/``javac``
are installed, Kafka's assignor classes (``UniformAssignor`` and both builders, ``RangeAssignor``,
``GroupSpecImpl`` and the API types) are compiled with a small harness written here, plus stand-ins
for what they import but do not use for assigning (slf4j, and ``Assignment``/``TopicMetadata``,
whose record code is generated at build time). The harness runs the same random groups as our
assignors, with every collection the assignors iterate in the same order (``LinkedHashMap`` and
``LinkedHashSet`` holding our orders), and both results must be equal. Skipped otherwise.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from kraft.groups.assignors.server import ASSIGNORS, GroupSpec, MemberSpec, PartitionAssignorError, \
    TopicDescriber, Uuid
from kraft.groups.assignors.server.spec import member_order, record_assignment_order, subscription_type

from tests.client.test_java_semantics import DEC, enc

KAFKA_SRC = os.environ.get("KAFKA_SRC")
JAVAC, JAVA = shutil.which("javac"), shutil.which("java")
pytestmark = [pytest.mark.jvm, pytest.mark.skipif(not (KAFKA_SRC and JAVAC and JAVA),
                                                  reason="needs KAFKA_SRC (a Kafka checkout), java and javac")]

SOURCES = [
    "clients/src/main/java/org/apache/kafka/common/Uuid.java",
    "clients/src/main/java/org/apache/kafka/common/KafkaException.java",
    "clients/src/main/java/org/apache/kafka/common/annotation/InterfaceStability.java",
    "clients/src/main/java/org/apache/kafka/common/errors/ApiException.java",
    "server-common/src/main/java/org/apache/kafka/server/common/TopicIdPartition.java",
    *(f"group-coordinator/group-coordinator-api/src/main/java/org/apache/kafka/coordinator/group/api/assignor/{n}.java"
      for n in ("ConsumerGroupPartitionAssignor", "GroupAssignment", "GroupSpec", "MemberAssignment",
                "MemberSubscription", "PartitionAssignor", "PartitionAssignorException", "SubscribedTopicDescriber",
                "SubscriptionType")),
    *(f"group-coordinator/src/main/java/org/apache/kafka/coordinator/group/assignor/{n}.java"
      for n in ("AssignorHelpers", "RangeAssignor", "RangeSet", "UniformAssignor",
                "UniformHeterogeneousAssignmentBuilder", "UniformHomogeneousAssignmentBuilder")),
    *(f"group-coordinator/src/main/java/org/apache/kafka/coordinator/group/modern/{n}.java"
      for n in ("GroupSpecImpl", "MemberAssignmentImpl", "MemberSubscriptionAndAssignmentImpl",
                "SubscribedTopicDescriberImpl")),
]

STUBS = {
    "org/slf4j/Logger.java": "package org.slf4j; public interface Logger { void debug(String s); }",
    "org/slf4j/LoggerFactory.java": "package org.slf4j; public class LoggerFactory {"
    " public static Logger getLogger(Class<?> c) { return s -> { }; } }",
    "org/apache/kafka/coordinator/group/modern/Assignment.java": """
package org.apache.kafka.coordinator.group.modern;
import org.apache.kafka.common.Uuid;
import java.util.*;
public class Assignment {
    private final Map<Uuid, Set<Integer>> partitions;
    public Assignment(Map<Uuid, Set<Integer>> partitions) { this.partitions = Collections.unmodifiableMap(partitions); }
    public Map<Uuid, Set<Integer>> partitions() { return partitions; }
}""",
    "org/apache/kafka/coordinator/group/modern/TopicMetadata.java": """
package org.apache.kafka.coordinator.group.modern;
public class TopicMetadata {
    private final int numPartitions;
    public TopicMetadata(int numPartitions) { this.numPartitions = numPartitions; }
    public int numPartitions() { return numPartitions; }
}""",
}

# One group per block of lines: "A assignor kind", "T msb lsb count"..., "M member instance|- topics...",
# "P msb lsb partitions..." (the member's assignment, in order), then "G". Prints one line a group.
HARNESS = r"""
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.*;
import org.apache.kafka.coordinator.group.assignor.*;
import org.apache.kafka.coordinator.group.modern.*;
import java.io.*;
import java.util.*;

public class Harness {
""" + DEC + r"""    static Uuid uuid(String a, String b) { return new Uuid(Long.parseLong(a), Long.parseLong(b)); }
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line, assignor = null, kind = null, member = null, instance = null;
        Map<Uuid, TopicMetadata> topics = new HashMap<>();
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new LinkedHashMap<>();
        Set<Uuid> subs = null;
        Map<Uuid, Set<Integer>> assignment = null;
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        while ((line = in.readLine()) != null) {
            String[] f = line.split(" ");
            if (f[0].equals("A")) {
                assignor = f[1]; kind = f[2];
                topics = new HashMap<>(); members = new LinkedHashMap<>(); inverted = new HashMap<>();
            } else if (f[0].equals("T")) {
                topics.put(uuid(f[1], f[2]), new TopicMetadata(Integer.parseInt(f[3])));
            } else if (f[0].equals("M") || f[0].equals("G")) {
                if (member != null) {
                    members.put(member, new MemberSubscriptionAndAssignmentImpl(Optional.empty(),
                        instance.isEmpty() ? Optional.empty() : Optional.of(instance), subs,
                        new Assignment(assignment)));
                    member = null;
                }
                if (f[0].equals("M")) {
                    member = dec(f[1]); instance = f[2].equals("-") ? "" : dec(f[2]);
                    subs = new LinkedHashSet<>();
                    for (int i = 3; i + 1 < f.length; i += 2) subs.add(uuid(f[i], f[i + 1]));
                    assignment = new LinkedHashMap<>();
                } else {
                    System.out.println(run(assignor, kind, members, topics, inverted));
                }
            } else if (f[0].equals("P")) {
                Uuid t = uuid(f[1], f[2]);
                Set<Integer> ps = new LinkedHashSet<>();
                for (int i = 3; i < f.length; i++) {
                    ps.add(Integer.parseInt(f[i]));
                    inverted.computeIfAbsent(t, k -> new HashMap<>()).put(Integer.parseInt(f[i]), member);
                }
                assignment.put(t, Collections.unmodifiableSet(ps));
            }
        }
    }
    static String run(String assignor, String kind, Map<String, MemberSubscriptionAndAssignmentImpl> members,
                      Map<Uuid, TopicMetadata> topics, Map<Uuid, Map<Integer, String>> inverted) {
        ConsumerGroupPartitionAssignor a = assignor.equals("uniform") ? new UniformAssignor() : new RangeAssignor();
        GroupSpec spec = new GroupSpecImpl(Collections.unmodifiableMap(members), SubscriptionType.valueOf(kind), inverted);
        try {
            GroupAssignment result = a.assign(spec, new SubscribedTopicDescriberImpl(topics));
            TreeMap<String, String> out = new TreeMap<>();
            for (Map.Entry<String, MemberAssignment> e : result.members().entrySet()) {
                TreeMap<Uuid, TreeSet<Integer>> sorted = new TreeMap<>();
                for (Map.Entry<Uuid, Set<Integer>> t : e.getValue().partitions().entrySet())
                    if (!t.getValue().isEmpty()) sorted.put(t.getKey(), new TreeSet<>(t.getValue()));
                StringBuilder sb = new StringBuilder();
                for (Map.Entry<Uuid, TreeSet<Integer>> t : sorted.entrySet())
                    sb.append(t.getKey().getMostSignificantBits()).append(':')
                      .append(t.getKey().getLeastSignificantBits()).append('=').append(t.getValue()).append(';');
                out.put(e.getKey(), sb.toString());
            }
            return out.toString();
        } catch (PartitionAssignorException e) {
            return "error";
        }
    }
}
"""


def canonical(result) -> str:
    """The harness's output line for ``result`` (members by ``String.compareTo``, which for the
    ids used here is Python's order; topics by ``Uuid.compareTo``)."""
    parts = []
    for m in sorted(result):
        text = "".join(f"{t.msb}:{t.lsb}=[{', '.join(map(str, sorted(ps)))}];"
                       for t, ps in sorted(result[m].items()) if ps)
        parts.append(f"{m}={text}")
    return "{" + ", ".join(parts) + "}"


def random_group(rng: random.Random) -> tuple[GroupSpec, TopicDescriber]:
    big = rng.random() < 0.2
    ids = list({Uuid(rng.randrange(-2**63, 2**63), rng.randrange(-2**63, 2**63))
                for _ in range(rng.randint(1, 12 if big else 4))})
    counts = {t: rng.randint(0, 30 if big else 8) for t in ids}
    members = [f"m{i}" for i in rng.sample(range(100), rng.randint(1, 40 if big else 7))]
    homogeneous = rng.random() < 0.4
    common = rng.sample(ids, rng.randint(0, len(ids)))
    held: dict[str, dict[Uuid, list[int]]] = {m: {} for m in members}
    for t in ids:
        for p in range(counts[t]):
            if rng.random() < 0.6:
                held[rng.choice(members)].setdefault(t, []).append(p)
    specs = {}
    for m in member_order(members):
        subs = common if homogeneous else rng.sample(ids, rng.randint(0, len(ids)))
        instance = f"i{rng.randint(0, 50)}" if rng.random() < 0.3 else None
        specs[m] = MemberSpec(subs, record_assignment_order(held[m]), None, instance)
    return GroupSpec(specs, subscription_type(specs)), TopicDescriber(counts)


def lines_for(name: str, group: GroupSpec, topics: TopicDescriber) -> list[str]:
    out = [f"A {name} {group.subscription_type.name}"]
    out += [f"T {t.msb} {t.lsb} {n}" for t, n in topics.partitions.items()]
    for m, spec in group.members.items():
        ids = " ".join(f"{t.msb} {t.lsb}" for t in spec.subscribed_topic_ids)
        out.append(f"M {enc(m)} {enc(spec.instance_id) if spec.instance_id else '-'} {ids}".rstrip())
        out += [f"P {t.msb} {t.lsb} {' '.join(map(str, ps))}" for t, ps in spec.assignment.items()]
    return out + ["G"]


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    root = tmp_path_factory.mktemp("kafka")
    src = root / "src"
    for rel, text in STUBS.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text(text)
    (src / "Harness.java").write_text(HARNESS)
    files = [str(Path(KAFKA_SRC) / s) for s in SOURCES] + [str(p) for p in src.rglob("*.java")]  # type: ignore[arg-type]
    done = subprocess.run([JAVAC, "-nowarn", "-d", str(root / "out"), *files], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]

    def ask(lines: list[str]) -> list[str]:
        proc = subprocess.run([JAVA, "-cp", str(root / "out"), "Harness"], input="\n".join(lines) + "\n",
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return proc.stdout.splitlines()

    return ask


def test_same_result_as_kafka_on_random_groups(harness):
    rng = random.Random(848)
    cases, lines, expect = [], [], []
    for _ in range(400):
        group, topics = random_group(rng)
        for name, cls in ASSIGNORS.items():
            try:
                mine = canonical(cls().assign(group, topics))
            except PartitionAssignorError:
                mine = "error"
            cases.append((name, group))
            lines += lines_for(name, group, topics)
            expect.append(mine)
    got = harness(lines)
    assert len(got) == len(expect)
    differ = [(name, list(group.members), e, g) for (name, group), e, g in zip(cases, expect, got) if e != g]
    assert not differ, differ[:2]
    assert len({e for e in expect if e != "error"}) > 300  # the groups are not all alike
