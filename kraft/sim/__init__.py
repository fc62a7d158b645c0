"""kraft.sim: the deterministic cluster simulator shared by all protocols (docs/sim.md)."""

from kraft.sim.core import Clock, Faults, Network, SimulationError, Simulator
from kraft.sim.recorder import Recorder

__all__ = ["Clock", "Faults", "Network", "Recorder", "SimulationError", "Simulator"]
