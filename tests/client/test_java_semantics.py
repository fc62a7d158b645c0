"""Our model of Java semantics (kraft.client.java) against the real JVM.

Kafka's assignments depend on ``String.hashCode``, ``String.compareTo`` and the iteration order
of ``HashMap``/``HashSet``. Java 17 is on the machine, so instead of trusting the model we ask a
JVM: a small Java program (written here, run with ``java File.java``) fills real ``HashMap``s
and ``HashSet``s with the same keys and prints what Java prints. Skipped when ``java`` is absent.
"""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from kraft.client.java import JavaHashOrder, java_str_key, string_hash, topic_partition_hash

JAVA = shutil.which("java")

# the Java side of enc(): a string back from its UTF-16 code units in hex
DEC = r"""
    static String dec(String hex) {
        if (hex.equals("-")) return "";
        StringBuilder sb = new StringBuilder();
        for (String u : hex.split(",")) sb.append((char) Integer.parseInt(u, 16));
        return sb.toString();
    }
"""

PROGRAM = r"""
import java.io.*;
import java.util.*;

public class JavaOrder {
""" + DEC + r"""    static final class TP {
        final String topic; final int partition;
        TP(String t, int p) { topic = t; partition = p; }
        // org.apache.kafka.common.TopicPartition.hashCode/equals
        public int hashCode() { return 31 * (31 + partition) + topic.hashCode(); }
        public boolean equals(Object o) {
            return o instanceof TP && ((TP) o).partition == partition && ((TP) o).topic.equals(topic);
        }
        public String toString() { return topic + "#" + partition; }
    }
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split(" ");
            StringBuilder out = new StringBuilder();
            if (f[0].equals("HASH")) {
                out.append(dec(f[1]).hashCode());
            } else if (f[0].equals("CMP")) {
                out.append(Integer.signum(dec(f[1]).compareTo(dec(f[2]))));
            } else if (f[0].equals("MAP")) {
                Map<String, Integer> m = new HashMap<>();
                for (int i = 1; i < f.length; i++) m.put(dec(f[i]), i);
                for (String k : m.keySet()) out.append(m.get(k)).append(' ');
            } else if (f[0].equals("SET")) {
                Set<TP> s = new HashSet<>();
                for (int i = 1; i < f.length; i++) {
                    String[] op = f[i].split(":");
                    TP tp = new TP(op[1], Integer.parseInt(op[2]));
                    if (op[0].equals("+")) s.add(tp); else s.remove(tp);
                }
                for (TP tp : s) out.append(tp).append(' ');
            }
            System.out.println(out.toString().trim());
        }
    }
}
"""


def enc(s: str) -> str:
    units = s.encode("utf-16-be", "surrogatepass")
    if not units:
        return "-"
    return ",".join(f"{(units[i] << 8) | units[i + 1]:x}" for i in range(0, len(units), 2))


def rand_str(rng: random.Random) -> str:
    alphabet = ["a", "b", "z", "0", "9", "-", "_", "\u00e9", "\u4e2d", "\uffee", "\U0001F600", "\U00010400"]
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))


@pytest.fixture(scope="module")
def jvm(tmp_path_factory):
    if JAVA is None:
        pytest.skip("java not installed")
    src = tmp_path_factory.mktemp("jvm") / "JavaOrder.java"
    src.write_text(PROGRAM)

    def ask(lines: list[str]) -> list[str]:
        proc = subprocess.run([JAVA, "-Xshare:auto", str(src)], input="\n".join(lines) + "\n",
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()

    return ask


@pytest.mark.jvm
def test_hash_compare_and_iteration_order_match_the_jvm(jvm):
    rng = random.Random(20260101)
    lines: list[str] = []
    expect: list[str] = []
    for _ in range(200):
        s = rand_str(rng)
        lines.append(f"HASH {enc(s)}")
        expect.append(str(string_hash(s)))
    for _ in range(200):
        a, b = rand_str(rng), rand_str(rng)
        lines.append(f"CMP {enc(a)} {enc(b)}")
        ka, kb = java_str_key(a), java_str_key(b)
        expect.append(str((ka > kb) - (ka < kb)))
    for _ in range(60):
        keys = list(dict.fromkeys(rand_str(rng) for _ in range(rng.randint(1, 300))))
        lines.append("MAP " + " ".join(enc(k) for k in keys))
        order = JavaHashOrder.of(keys, string_hash)
        expect.append(" ".join(str(keys.index(k) + 1) for k in order))
    for _ in range(60):
        topics = ["t", "topic", "x" + str(rng.randint(0, 9))]
        model: JavaHashOrder = JavaHashOrder(lambda p: topic_partition_hash(*p))
        ops = []
        for _ in range(rng.randint(1, 150)):
            p = (rng.choice(topics), rng.randint(0, 40))
            if rng.random() < 0.7:
                ops.append(f"+:{p[0]}:{p[1]}")
                model.add(p)
            else:
                ops.append(f"-:{p[0]}:{p[1]}")
                model.discard(p)
        lines.append("SET " + " ".join(ops))
        expect.append(" ".join(f"{t}#{n}" for t, n in model))
    # the model is needed: for Kafka's own member ids the JVM does not iterate in put order
    kafka_ids = ["consumer1", "consumer2", "consumer3", "consumer4"]
    lines.append("MAP " + " ".join(enc(k) for k in kafka_ids))
    expect.append(" ".join(str(kafka_ids.index(k) + 1) for k in JavaHashOrder.of(kafka_ids, string_hash)))
    assert expect[-1] != "1 2 3 4"
    got = jvm(lines)
    mismatches = [(line[:80], e, g) for line, e, g in zip(lines, expect, got) if e != g]
    assert len(got) == len(expect)
    assert not mismatches, mismatches[:3]

