"""Local TCP ports: one free now, or whether one can be bound. Used by the embedded cluster (its
NameNode port) and the trainer (the ports of PS/worker slots and the coordinator)."""
from __future__ import annotations

import socket


def free_port(host: str = "") -> int:
    """A port that is free on ``host`` now (the OS picks it)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def free_ports(count: int, host: str = "") -> list[int]:
    """``count`` distinct ports free on ``host`` now. Each stays bound until all are picked:
    separate ``free_port`` calls may hand out one port twice (a PSS bench cluster's chief once got
    a worker's port, and the worker died binding it)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            sockets.append(s)
            s.bind((host, 0))
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
