"""What every protocol shares: the step surface (``Ready``), the declaration types, the invariant
runner and quorum arithmetic.  Imports nothing from a protocol package, a checker or Spark."""

from kraft.core.declaration import Action, Protocol, Variable, Variant
from kraft.core.invariants import Invariant, InvariantViolation, Violation, check_invariants
from kraft.core.step import Ready, SpecStep, Tick, Trigger, Write

__all__ = ["Action", "Invariant", "InvariantViolation", "Protocol", "Ready", "SpecStep", "Tick", "Trigger",
           "Variable", "Variant", "Violation", "Write", "check_invariants"]
