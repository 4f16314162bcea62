"""Local TCP ports: one free now, or whether one can be bound. Used by the embedded cluster (its
NameNode port) and the trainer (the ports of PS/worker slots and the coordinator).

A port picked now is bound later, seconds later for a slot (its container starts, imports
TensorFlow, then binds). Ports are picked outside the OS's ephemeral range: inside it, any process
on the host that opens a connection may get the port as its local end meanwhile, and the server's
bind then fails (TensorFlow: "UnknownError: Could not start gRPC server"), SO_REUSEADDR or not."""
from __future__ import annotations

import random
import socket

EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"  # Linux: "low high", inclusive
LOWEST_PICKED = 10000  # below: the well-known and registered services' usual ports
TRIES = 200  # random candidates tried before leaving the choice to the OS


def ephemeral_range() -> tuple[int, int] | None:
    """The ports the OS hands out as connections' local ends (Linux), or None where unknown."""
    try:
        with open(EPHEMERAL_RANGE_FILE) as f:
            low, high = (int(v) for v in f.read().split())
        return low, high
    except (OSError, ValueError):
        return None


def listen_candidates() -> list[range]:
    """The ranges outside the ephemeral one a server's port is picked from (none: unknown)."""
    found = ephemeral_range()
    if found is None:
        return []
    low, high = found
    return [r for r in (range(LOWEST_PICKED, low), range(high + 1, 65536)) if len(r) > 0]


def _bind_one(host: str, ranges: list[range]) -> socket.socket:
    """A socket bound to a free port of ``ranges`` (random, so concurrent pickers rarely meet), or
    to the OS's choice when none is found or there are no such ranges."""
    weights = [len(r) for r in ranges]
    for _ in range(TRIES if ranges else 0):
        port = random.choice(random.choices(ranges, weights)[0])
        s = socket.socket()
        try:
            s.bind((host, port))
            return s
        except OSError:
            s.close()
    s = socket.socket()
    s.bind((host, 0))
    return s


def free_port(host: str = "") -> int:
    """A port that is free on ``host`` now, outside the ephemeral range where the OS allows."""
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = "") -> list[int]:
    """``count`` distinct ports free on ``host`` now, outside the ephemeral range where the OS
    allows. Each stays bound until all are picked: separate ``free_port`` calls may hand out one
    port twice (a PSS bench cluster's chief once got a worker's port, and the worker died binding it)."""
    ranges = listen_candidates()
    sockets = []
    try:
        for _ in range(count):
            sockets.append(_bind_one(host, ranges))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def answers(address: str, timeout: float = 0.3) -> bool:
    """Whether a process accepts connections at ``host:port`` now (refused, unreachable or no
    answer within ``timeout``: no)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return True
    except (OSError, ValueError):
        return False


def port_is_free(port: int, host: str = "") -> bool:
    """Whether ``port`` can be bound on ``host`` the way servers bind it: with SO_REUSEADDR, so
    closed connections of a stopped server in TIME_WAIT do not count, a listening socket does."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True
