"""kraft: a formal-model-driven reference implementation of Kafka's ownership protocols.

Protocol code lives in the subpackages (``quorum``, ``controller``, ``replication``, ``groups``,
``client``, ``log``, ``sim``) and is pure: no sockets, threads, wall clocks or global randomness.
"""

__version__ = "0.1.0"
