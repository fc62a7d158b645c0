"""Sequential specifications ("models") for the linearizability checker.

The interface follows Porcupine's ``Model`` (github.com/anishathalye/porcupine, ``model.go``):
``init`` gives the initial state, ``step(state, input, output) -> (ok, new_state)`` says whether an
operation with that input could have returned that output in that state, ``partition`` splits a
history into independent sub-histories (P-compositionality, Herlihy & Wing 1990, section 3.3), and
``describe`` renders a state for people. States are hashable and immutable (``None``, ints,
tuples, frozensets) so the checker can memoise on them.

Turning history operations into checker calls is the model's job too (:meth:`Model.calls`): which
ops constrain, which can be dropped, where the key is. Shared Jepsen/Knossos semantics:

* a ``fail`` completion means the op did not happen: the checker drops it before the model sees it;
* an ``info`` completion (or none at all) means it may or may not have happened, at any point after
  its invocation: its output is :data:`UNKNOWN` and the checker may linearize it or leave it out;
* a read whose outcome is unknown constrains nothing and is dropped.

Models (``MODELS[name]``):

``register``      ``write v`` / ``read -> v``; initial value ``initial`` (default ``None``, as
                  Knossos's ``(knossos.model/register)``; ``(register x)`` is ``initial = x``).
``cas-register``  ``register`` plus ``cas [old new]``, which succeeds iff the value is ``old``
                  (a ``fail``-ed cas is dropped, as in Knossos).
``multi-register`` Knossos's ``multi-register``: one op ``txn`` whose value is a sequence of
                  ``[f k v]`` micro-ops (``f`` is ``read`` or ``write``), applied atomically to a
                  map of registers; ``initial`` is the map of initial values (absent keys are
                  ``nil``), as ``(knossos.model/multi-register values)`` takes it.

Nil reads (``nil_reads``, set per check by :func:`with_nil_reads`):

* ``"knossos"``: an ``ok`` read whose value is ``nil`` is a read of an unknown value and matches
  every state, exactly as ``knossos.model/Register``, ``CASRegister`` ("We don't know what the
  read was") and ``MultiRegister`` ("Nil reads are always legal") step it. Such a read constrains
  nothing and is dropped like an ``info`` read. The default for EDN (Jepsen/Knossos) histories.
* ``"strict"``: ``nil`` is a value like any other (a read of ``nil`` is only linearizable where the
  register holds ``nil``: never written, or written ``nil``), for histories whose ``nil`` means
  "absent" (Porcupine's etcd model, kraft's own NDJSON histories). The default for NDJSON/JSON.
``kv``            one ``cas-register`` per key. Key convention 1: the op has a ``key`` field and
                  ``value`` is the register value. Convention 2 (Jepsen ``independent``): no key
                  field, ``value`` is ``[k v]`` on invocation and on ``ok`` completion (a read
                  invokes ``[k nil]`` and completes ``[k v]``). ``initial`` is a dict per key or
                  one value for all keys.
``set``           ``add v`` / ``read -> collection`` (the whole set, compared as a set).
``append-log``    one Kafka partition log per key. ``send``/``append v`` returns the offset it was
                  assigned (``ok`` value: an offset, or ``[offset v]`` as in Jepsen's Kafka
                  workload); ``read``/``poll`` returns ``[[offset v] ...]``, or a map
                  ``{key [[offset v] ...]}``. Jepsen Kafka micro-op values
                  (``[[:send k v] [:poll]]`` completing ``[[:send k [o v]] [:poll {k [...]}]]``)
                  are split into one call per micro-op over the op's interval. See
                  :class:`AppendLogModel` for the exact semantics.

Every model also accepts a ``key`` field on ops and then checks each key independently.
"""

from __future__ import annotations

import copy
from bisect import bisect_left
from operator import itemgetter
from typing import Any, Iterable, Sequence

import attrs

from spark_validation.ingest.edn import FrozenMap
from spark_validation.ingest.history import Operation, to_jsonable

__all__ = [
    "MODELS",
    "UNKNOWN",
    "AppendLogModel",
    "Call",
    "CasRegisterModel",
    "KVModel",
    "Model",
    "MultiRegisterModel",
    "NIL_READS",
    "ModelError",
    "RegisterModel",
    "SetModel",
    "get_model",
    "with_nil_reads",
]

NIL_READS = ("knossos", "strict")
"""How a read that returned ``nil`` is read (module doc): Knossos's unknown read, or a value."""


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()
"""The output of an op whose outcome was not observed (``info`` or never completed)."""


class ModelError(ValueError):
    """An operation the model cannot interpret (unknown ``f``, badly shaped value)."""

    def __init__(self, operation: Operation, reason: str) -> None:
        inv = operation.invoke
        super().__init__(f"op index {inv.index} (process {inv.process}, f={inv.f!r}): {reason}")
        self.operation = operation
        self.reason = reason


_ATOMS = frozenset((str, int, float, bool, type(None)))


def freeze(value: Any) -> Any:
    """A hashable version of a normalised value (maps become :class:`FrozenMap`, lists tuples,
    sets frozensets), so any value can be part of a model state or a cache key."""
    t = type(value)
    if t in _ATOMS:  # the common cases first, by exact type (subclasses take the general path)
        return value
    if t is tuple:
        for v in value:
            if type(v) not in _ATOMS:
                break
        else:
            return value
    if isinstance(value, (str, int, float, type(None))) or value is UNKNOWN:
        return value
    if isinstance(value, tuple):
        return tuple(freeze(v) for v in value)
    if isinstance(value, dict):
        return FrozenMap((freeze(k), freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(freeze(v) for v in value)
    return value


@attrs.frozen
class Call:
    """One thing to linearize: ``input`` is ``(f, argument)``, ``output`` the observed result
    (:data:`UNKNOWN` if not observed). ``must`` is False for calls that may be left out."""

    key: Any = attrs.field(converter=freeze)
    input: tuple = attrs.field(converter=freeze)
    output: Any = attrs.field(converter=freeze)
    operation: Operation = attrs.field()

    @property
    def must(self) -> bool:
        return self.output is not UNKNOWN


_set = object.__setattr__


def make_call(key: Any, op_input: tuple, output: Any, operation: Operation) -> Call:
    """``Call(key, op_input, output, operation)`` without the attrs ``__init__`` (the hot path of
    :meth:`Model.calls`); the values are frozen the same way."""
    c = object.__new__(Call)
    _set(c, "key", key if type(key) in _ATOMS else freeze(key))
    _set(c, "input", freeze(op_input))
    _set(c, "output", output if type(output) in _ATOMS or output is UNKNOWN else freeze(output))
    _set(c, "operation", operation)
    return c


class Model:
    """Base class. Subclasses define ``name``, :meth:`step`, :meth:`calls_for` and may override
    :meth:`init`, :meth:`calls` and :meth:`describe`."""

    name = "model"

    def init(self, initial: Any = None, key: Any = None) -> Any:
        """The initial state (for ``key`` when the model is partitioned by key)."""
        return initial

    def step(self, state: Any, op_input: tuple, op_output: Any) -> tuple[bool, Any]:
        raise NotImplementedError

    def read_only(self, op_input: tuple) -> bool:
        """True if the op never changes the state (the checker then linearizes it as early as
        it can, without trying alternatives: a sound pruning for such ops)."""
        return False

    def overwrites(self, op_input: tuple) -> bool:
        """True if the op is a blind write: always accepted, and the state after it does not
        depend on the state before it (lets the checker skip orders nobody can observe)."""
        return False

    def calls_for(self, operation: Operation) -> list[Call]:
        """The calls one ``ok``/``info``/pending operation contributes (``[]`` to drop it)."""
        raise NotImplementedError

    def calls(self, operations: Iterable[Operation]) -> list[Call]:
        """All calls of a history's operations (``fail`` ones are never passed in)."""
        out: list[Call] = []
        for operation in operations:
            out.extend(self.calls_for(operation))
        return out

    def impossible(self, calls: Sequence[Call], initial_state: Any) -> list[tuple[Call, str]]:
        """Calls whose observed output no op of the partition could have produced (a value
        never written), with the reason. The checker reports these without searching."""
        return []

    def partition(self, calls: Sequence[Call]) -> list[tuple[Any, list[Call]]]:
        """Sub-histories by key, in order of first appearance (deterministic)."""
        groups: dict[Any, list[Call]] = {}
        for c in calls:
            groups.setdefault(c.key, []).append(c)
        return list(groups.items())

    def describe(self, state: Any) -> str:
        return repr(state)

    def describe_call(self, call: Call) -> str:
        f, arg = call.input
        return describe_io(f, arg, call.output)

    def state_json(self, state: Any) -> Any:
        return to_jsonable(state)


def describe_io(f: Any, arg: Any, output: Any) -> str:
    """``f(arg) -> output`` for people: ``ok`` for an acknowledged write, ``?`` for an unknown
    outcome (:meth:`Model.describe_call` of a call with input ``(f, arg)``)."""
    if output is UNKNOWN:
        out = "? (outcome unknown)"
    elif output is None and arg is not None:
        out = "ok"
    else:
        out = repr(output)
    return f"{f}({'' if arg is None else repr(arg)}) -> {out}"


def _output(operation: Operation) -> Any:
    c = operation.complete
    if c is None or c.type != "ok":
        return UNKNOWN
    return c.value


READ = "read"
WRITE = "write"
CAS = "cas"
_READ_INPUT = (READ, None)


class RegisterModel(Model):
    """A read/write register (Knossos ``register``)."""

    name = "register"
    fs: frozenset[str] = frozenset((READ, WRITE))
    nil_reads = "strict"
    read_is_equality = True  # step of a read: accepted iff its output equals the state (the checker relies on it)

    def _key_value(self, operation: Operation, value: Any) -> tuple[Any, Any]:
        return operation.invoke.key, value

    def calls_for(self, operation: Operation) -> list[Call]:
        inv = operation.invoke
        f = inv.f
        if f not in self.fs:
            raise ModelError(operation, f"{self.name} has no operation {f!r} (expected one of {sorted(self.fs)})")
        out = _output(operation)
        if f == READ:
            if out is UNKNOWN:
                return []
            key, value = self._key_value(operation, out)
            if value is None and self.nil_reads == "knossos":
                return []  # knossos.model: a nil read is a read of an unknown value
            return [make_call(key, (READ, None), value, operation)]
        key, arg = self._key_value(operation, inv.value)
        if f == CAS:
            if not (isinstance(arg, tuple) and len(arg) == 2):
                raise ModelError(operation, f"cas value must be [old new], got {arg!r}")
        if out is not UNKNOWN:
            out = None  # the output of a write/cas carries no information beyond "ok"
        return [make_call(key, (f, arg), out, operation)]

    def calls(self, operations: Iterable[Operation]) -> list[Call]:
        """:meth:`calls_for` of each operation, inlined for the plain cases (the hot path of a
        register history: an op with no key field and an atomic value)."""
        if type(self)._key_value is not RegisterModel._key_value:  # kv reads keys from values
            return super().calls(operations)
        out: list[Call] = []
        append = out.append
        fs, knossos, atoms, new, put = self.fs, self.nil_reads == "knossos", _ATOMS, object.__new__, _set
        for operation in operations:
            inv = operation.invoke
            f = inv.f
            key = inv.key
            c = operation.complete
            result = c.value if c is not None and c.type == "ok" else UNKNOWN
            if f == READ:
                if result is UNKNOWN or (result is None and knossos):
                    continue  # an unknown read, or a nil read under Knossos's semantics
                inp, res = _READ_INPUT, result
            elif f == WRITE and f in fs and type(inv.value) in atoms:
                inp, res = (WRITE, inv.value), (UNKNOWN if result is UNKNOWN else None)
            elif (f == CAS and f in fs and type(inv.value) is tuple and len(inv.value) == 2
                  and type(inv.value[0]) in atoms and type(inv.value[1]) in atoms):
                inp, res = (CAS, inv.value), (UNKNOWN if result is UNKNOWN else None)
            else:
                out.extend(self.calls_for(operation))
                continue
            if type(key) not in atoms or type(res) not in atoms and res is not UNKNOWN:
                out.extend(self.calls_for(operation))
                continue
            call = new(Call)
            put(call, "key", key)
            put(call, "input", inp)
            put(call, "output", res)
            put(call, "operation", operation)
            append(call)
        return out

    def read_only(self, op_input: tuple) -> bool:
        return op_input[0] == READ

    def overwrites(self, op_input: tuple) -> bool:
        return op_input[0] == WRITE

    def impossible(self, calls: Sequence[Call], initial_state: Any) -> list[tuple[Call, str]]:
        written = _Values([initial_state])
        for c in calls:
            f, arg = c.input
            if f == WRITE:
                written.add(arg)
            elif f == CAS:
                written.add(arg[1])
        return [(c, self.impossible_reason(c)) for c in calls if c.input[0] == READ and c.output not in written]

    @staticmethod
    def impossible_reason(call: Call) -> str:
        return f"the value {call.output!r}, which no write or cas ever wrote"

    def step(self, state: Any, op_input: tuple, op_output: Any) -> tuple[bool, Any]:
        f, arg = op_input
        if f is WRITE or f == WRITE:
            return True, arg
        return op_output == state, state

    def describe(self, state: Any) -> str:
        return f"value={state!r}"


class CasRegisterModel(RegisterModel):
    """A register with compare-and-set (Knossos ``cas-register``)."""

    name = "cas-register"
    fs = frozenset((READ, WRITE, CAS))

    def step(self, state: Any, op_input: tuple, op_output: Any) -> tuple[bool, Any]:
        f, arg = op_input
        if f == WRITE:
            return True, arg
        if f == CAS:
            if state == arg[0]:
                return True, arg[1]
            return False, state
        return op_output == state, state


class KVModel(CasRegisterModel):
    """A map of independent cas-registers, checked key by key."""

    name = "kv"

    def _key_value(self, operation: Operation, value: Any) -> tuple[Any, Any]:
        inv = operation.invoke
        if inv.key is not None:
            return inv.key, value
        if isinstance(value, tuple) and len(value) == 2:
            return value[0], value[1]
        raise ModelError(operation, f"kv op without a key field needs value [k v], got {value!r}")

    def calls_for(self, operation: Operation) -> list[Call]:
        inv = operation.invoke
        if inv.f == READ and inv.key is None:
            # the key of a read is in the invocation ([k nil]); the completion repeats it
            out = _output(operation)
            if out is UNKNOWN:
                return []
            k, _ = self._key_value(operation, inv.value)
            k2, v = self._key_value(operation, out)
            if k2 != k:
                raise ModelError(operation, f"read of key {k!r} completed with key {k2!r}")
            if v is None and self.nil_reads == "knossos":
                return []  # jepsen.independent + knossos.model: [k nil] reads an unknown value
            return [Call(k, (READ, None), v, operation)]
        return super().calls_for(operation)

    def init(self, initial: Any = None, key: Any = None) -> Any:
        if isinstance(initial, dict):
            return initial.get(key)
        return initial


class MultiRegisterModel(Model):
    """Knossos's ``multi-register`` (``knossos.model/MultiRegister``): ``txn`` ops over a map of
    registers. A ``txn`` value is a sequence of ``[f k v]``, ``f`` in ``read``/``write``; an ``ok``
    completion carries the values read. The state is the whole map (a :class:`FrozenMap` of the
    keys written or given initially; an absent key reads as ``nil``). One partition: a
    transaction may span keys, so keys are not independent (Knossos checks it as one object too).
    """

    name = "multi-register"
    nil_reads = "strict"

    def init(self, initial: Any = None, key: Any = None) -> Any:
        if initial is None:
            return FrozenMap()
        if not isinstance(initial, dict):
            raise ValueError(f"multi-register initial value must be a map of key -> value, got {initial!r}")
        return FrozenMap((freeze(k), freeze(v)) for k, v in initial.items())

    def calls_for(self, operation: Operation) -> list[Call]:
        inv = operation.invoke
        if inv.f != "txn":
            raise ModelError(operation, f"multi-register has no operation {inv.f!r} (expected txn)")
        out = _output(operation)
        mops = out if out is not UNKNOWN else inv.value
        if not isinstance(mops, tuple) or not all(
            isinstance(m, tuple) and len(m) == 3 and m[0] in (READ, WRITE) for m in mops
        ):
            raise ModelError(operation, f"txn value must be [[f k v] ...] with f read/write, got {mops!r}")
        if out is not UNKNOWN:
            if not isinstance(inv.value, tuple) or len(inv.value) != len(mops):
                raise ModelError(operation, "txn completion has not one result per micro-op of its invocation")
            for a, b in zip(inv.value, mops):
                if not isinstance(a, tuple) or len(a) != 3 or a[0] != b[0] or a[1] != b[1] or (a[0] == WRITE and a[2] != b[2]):
                    raise ModelError(operation, f"txn completion micro-op {b!r} does not match its invocation's {a!r}")
        if out is UNKNOWN:
            if not any(m[0] == WRITE for m in mops):
                return []  # a read-only txn whose results nobody saw constrains nothing
            mops = tuple(m for m in mops if m[0] == WRITE)
        elif self.nil_reads == "knossos":
            mops = tuple(m for m in mops if not (m[0] == READ and m[2] is None))
            if not mops:
                return []
        return [Call(None, ("txn", mops), None if out is not UNKNOWN else UNKNOWN, operation)]

    def read_only(self, op_input: tuple) -> bool:
        return all(m[0] == READ for m in op_input[1])

    def step(self, state: Any, op_input: tuple, op_output: Any) -> tuple[bool, Any]:
        writes: dict[Any, Any] | None = None
        for f, k, v in op_input[1]:
            if f == READ:
                cur = writes[k] if writes is not None and k in writes else state.get(k)
                if cur != v:
                    return False, state
            else:
                if writes is None:
                    writes = {}
                writes[k] = v
        if writes is None:
            return True, state
        new = dict(state)
        new.update(writes)
        return True, FrozenMap(new)

    def impossible(self, calls: Sequence[Call], initial_state: Any) -> list[tuple[Call, str]]:
        written: dict[Any, _Values] = {}
        for k, v in initial_state.items():
            written.setdefault(k, _Values()).add(v)
        for c in calls:
            for f, k, v in c.input[1]:
                if f == WRITE:
                    written.setdefault(k, _Values()).add(v)
        out = []
        for c in calls:
            for f, k, v in c.input[1]:
                if f == READ and v is not None and (k not in written or v not in written[k]):
                    out.append((c, f"the value {v!r} of key {k!r}, which no txn ever wrote"))
                    break
        return out

    def describe(self, state: Any) -> str:
        try:
            items = sorted(state.items())
        except TypeError:
            items = list(state.items())
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in items) + "}"

    def describe_call(self, call: Call) -> str:
        body = " ".join(f"[{f} {k!r} {v!r}]" for f, k, v in call.input[1])
        return f"txn [{body}]" + (" -> ? (outcome unknown)" if call.output is UNKNOWN else "")


class _Values:
    """A membership set that also takes unhashable values (compared with ==)."""

    def __init__(self, items: Iterable[Any] = ()) -> None:
        self._hashed: set[Any] = set()
        self._other: list[Any] = []
        for x in items:
            self.add(x)

    def add(self, x: Any) -> None:
        try:
            self._hashed.add(x)
        except TypeError:
            self._other.append(x)

    def __contains__(self, x: Any) -> bool:
        try:
            if x in self._hashed:
                return True
        except TypeError:
            pass
        return any(x == y for y in self._other)


class SetModel(Model):
    """A grow-only set: ``add v``, ``read`` of the whole set."""

    name = "set"

    def init(self, initial: Any = None, key: Any = None) -> Any:
        return frozenset(initial or ())

    def calls_for(self, operation: Operation) -> list[Call]:
        inv = operation.invoke
        out = _output(operation)
        if inv.f == "add":
            return [Call(inv.key, ("add", inv.value), None if out is not UNKNOWN else UNKNOWN, operation)]
        if inv.f == READ:
            if out is UNKNOWN:
                return []
            if not isinstance(out, (tuple, list, frozenset, set)):
                raise ModelError(operation, f"set read must return a collection, got {out!r}")
            return [Call(inv.key, (READ, None), frozenset(freeze(out)), operation)]
        raise ModelError(operation, f"set has no operation {inv.f!r} (expected add, read)")

    def read_only(self, op_input: tuple) -> bool:
        return op_input[0] == READ

    def step(self, state: Any, op_input: tuple, op_output: Any) -> tuple[bool, Any]:
        f, arg = op_input
        if f == "add":
            if arg in state:
                return True, state
            return True, state | {arg}
        return op_output == state, state

    def impossible(self, calls: Sequence[Call], initial_state: Any) -> list[tuple[Call, str]]:
        added = _Values(initial_state)
        for c in calls:
            if c.input[0] == "add":
                added.add(c.input[1])
        out = []
        for c in calls:
            if c.input[0] == READ:
                never = [x for x in c.output if x not in added]
                if never:
                    out.append((c, f"element(s) {never!r}, which no add ever added"))
        return out

    def describe(self, state: Any) -> str:
        try:
            return "{" + ", ".join(repr(x) for x in sorted(state)) + "}"
        except TypeError:
            return repr(set(state))


_APPEND_FS = frozenset(("send", "append"))
_READ_FS = frozenset(("poll", "read"))
_IGNORED_LOG_FS = frozenset(("assign", "subscribe", "crash", "debug-topic-partitions"))
_first = itemgetter(0)


class AppendLogModel(Model):
    """One Kafka partition log per key, as clients see it.

    State: the log as a tuple of ``(offset, value)`` pairs in append order. Offsets must increase
    strictly along the log but may have gaps (Kafka offsets skip over control records and
    transaction markers), so the order of appends is the order of their offsets.

    * ``send v -> o``: linearizable iff ``o`` is greater than every offset in the log; appends
      ``(o, v)``.
    * ``poll -> [(o1, v1) ... (ok, vk)]`` (non-empty): linearizable iff the log holds exactly
      these pairs as consecutive entries starting at offset ``o1`` (same values, no entry of the
      log skipped between ``o1`` and ``ok``). A poll may stop short of the log's end. An empty
      poll constrains nothing and is dropped.
    * An ``info``/pending send whose value some ``ok`` poll returned at offset ``o`` is checked
      as ``send v -> o`` (that it happened is known; only when is open). If polls returned the
      value at several offsets the lowest is used and the others surface as violations. An
      unknown send that no poll observed is dropped: with gaps allowed it can constrain nothing.
    * An ``ok`` send reporting no offset (``nil``, or a negative one: Kafka's -1 "unknown", e.g.
      with ``acks=0``) is treated like an ``info`` send.
    * ``assign``/``subscribe``/``crash``/``debug-topic-partitions`` ops do not touch the log and
      are dropped.

    Jepsen Kafka micro-op transactions are split into one call per micro-op (each over the whole
    op's interval): a per-partition check, not a transactional one.
    """

    name = "append-log"

    def init(self, initial: Any = None, key: Any = None) -> Any:
        if isinstance(initial, dict):
            initial = initial.get(key)
        return tuple((int(o), v) for o, v in (initial or ()))

    # -- turning ops into calls ------------------------------------------------------------

    @staticmethod
    def _micro_ops(value: Any) -> bool:
        return (
            isinstance(value, tuple)
            and len(value) > 0
            and all(
                isinstance(m, tuple) and m and m[0] in ("send", "poll", "append", "read")
                for m in value
            )
        )

    def _raw_calls(self, operation: Operation) -> list[tuple[Any, str, Any, Any]]:
        """(key, kind, argument, output) with kind ``send`` or ``poll``; output UNKNOWN if not ok."""
        inv = operation.invoke
        out = _output(operation)
        f = inv.f
        if f in _IGNORED_LOG_FS:
            return []
        if self._micro_ops(inv.value):
            mops = inv.value
            outs = out if out is not UNKNOWN else None
            if outs is not None and (not isinstance(outs, tuple) or len(outs) != len(mops)):
                raise ModelError(operation, f"completion has {outs!r}, not one result per micro-op")
            result = []
            for i, m in enumerate(mops):
                mo = outs[i] if outs is not None else None
                if m[0] in ("send", "append"):
                    if len(m) != 3:
                        raise ModelError(operation, f"micro-op {m!r} is not [:send k v]")
                    o = UNKNOWN
                    if mo is not None:
                        if not (isinstance(mo, tuple) and len(mo) == 3):
                            raise ModelError(operation, f"send result {mo!r} is not [:send k [offset v]]")
                        o = self._offset(operation, mo[2])
                    result.append((m[1], "send", m[2], o))
                else:
                    if mo is None:
                        continue
                    if not (isinstance(mo, tuple) and len(mo) == 2 and isinstance(mo[1], dict)):
                        raise ModelError(operation, f"poll result {mo!r} is not [:poll {{k [[o v] ...]}}]")
                    for k, pairs in mo[1].items():
                        result.append((k, "poll", None, self._pairs(operation, pairs)))
            return result
        if f in _APPEND_FS:
            o = self._offset(operation, out) if out is not UNKNOWN else UNKNOWN
            return [(inv.key, "send", inv.value, o)]
        if f in _READ_FS:
            if out is UNKNOWN:
                return []
            if isinstance(out, dict):
                return [(k, "poll", None, self._pairs(operation, v)) for k, v in out.items()]
            return [(inv.key, "poll", None, self._pairs(operation, out))]
        raise ModelError(operation, f"append-log has no operation {f!r} (expected send/append, poll/read)")

    @staticmethod
    def _offset(operation: Operation, out: Any) -> Any:
        """The offset a send reported; UNKNOWN when it reported none (nil or negative)."""
        if isinstance(out, tuple) and len(out) == 2:
            out = out[0]
        if out is None:
            return UNKNOWN
        if isinstance(out, int) and not isinstance(out, bool):
            return out if out >= 0 else UNKNOWN
        raise ModelError(operation, f"send completion must be an offset or [offset value], got {out!r}")

    @staticmethod
    def _pairs(operation: Operation, pairs: Any) -> tuple:
        if pairs is None:
            return ()
        if not isinstance(pairs, tuple) or not all(
            isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], int) for p in pairs
        ):
            raise ModelError(operation, f"poll result must be [[offset value] ...], got {pairs!r}")
        return pairs

    def calls(self, operations: Iterable[Operation]) -> list[Call]:
        raw: list[tuple[Operation, tuple[Any, str, Any, Any]]] = []
        for operation in operations:
            for r in self._raw_calls(operation):
                raw.append((operation, r))
        # where did polls see each value? (key, value) -> offsets
        seen: dict[tuple[Any, Any], set[int]] = {}
        for _, (k, kind, _, out) in raw:
            if kind == "poll":
                for o, v in out:
                    try:
                        seen.setdefault((k, v), set()).add(o)
                    except TypeError:  # unhashable value: cannot be matched to a send
                        pass
        calls: list[Call] = []
        for operation, (k, kind, arg, out) in raw:
            if kind == "send":
                if out is UNKNOWN:
                    try:
                        offsets = seen.get((k, arg))
                    except TypeError:
                        offsets = None
                    if not offsets:
                        continue
                    out = min(offsets)
                    # known to have happened, but keep it optional in time only: it must be
                    # linearized (it was observed), so it becomes a "must" call.
                calls.append(Call(k, ("send", arg), out, operation))
            else:
                if not out:
                    continue
                calls.append(Call(k, ("poll", None), out, operation))
        return calls

    # -- semantics ---------------------------------------------------------------------------

    def read_only(self, op_input: tuple) -> bool:
        return op_input[0] == "poll"

    def step(self, state: Any, op_input: tuple, op_output: Any) -> tuple[bool, Any]:
        if op_input[0] == "send":
            if state and state[-1][0] >= op_output:
                return False, state
            return True, state + ((op_output, op_input[1]),)
        first = op_output[0][0]
        i = bisect_left(state, first, key=_first)
        if i + len(op_output) > len(state):
            return False, state
        for j, pair in enumerate(op_output):
            if state[i + j] != pair:
                return False, state
        return True, state

    def impossible(self, calls: Sequence[Call], initial_state: Any) -> list[tuple[Call, str]]:
        sent = _Values(v for _, v in initial_state)
        for c in calls:
            if c.input[0] == "send":
                sent.add(c.input[1])
        out = []
        for c in calls:
            if c.input[0] == "poll":
                never = [p for p in c.output if p[1] not in sent]
                if never:
                    out.append((c, f"record(s) {never!r}, whose values no send ever sent"))
        return out

    def describe(self, state: Any) -> str:
        return "log=[" + " ".join(f"{o}:{v!r}" for o, v in state) + "]"


MODELS: dict[str, Model] = {
    m.name: m
    for m in (RegisterModel(), CasRegisterModel(), KVModel(), MultiRegisterModel(), SetModel(), AppendLogModel())
}


def with_nil_reads(model: Model, nil_reads: str) -> Model:
    """``model`` reading ``nil`` reads as ``nil_reads`` says (``"knossos"`` or ``"strict"``, module
    doc); models without reads of single values are returned unchanged."""
    if nil_reads not in NIL_READS:
        raise ValueError(f"nil_reads must be one of {', '.join(NIL_READS)}, got {nil_reads!r}")
    if not hasattr(model, "nil_reads") or model.nil_reads == nil_reads:
        return model
    m = copy.copy(model)
    m.nil_reads = nil_reads  # type: ignore[attr-defined]
    return m


def get_model(model: str | Model) -> Model:
    """The model named ``model`` (or ``model`` itself). Raises ``KeyError`` naming the choices."""
    if isinstance(model, Model):
        return model
    try:
        return MODELS[model]
    except KeyError:
        raise KeyError(f"unknown model {model!r}; known: {', '.join(sorted(MODELS))}") from None
