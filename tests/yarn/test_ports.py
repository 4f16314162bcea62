"""Free local ports for the embedded cluster and the trainer's slots."""
import socket

from tfhadoop.ports import free_ports, port_is_free


def test_free_ports_are_distinct_and_bindable():
    for _ in range(20):  # separate free_port calls returned one port twice in a bench run
        ports = free_ports(6)
        assert len(set(ports)) == 6
        assert all(port_is_free(p) for p in ports)


def test_picked_ports_are_outside_the_ephemeral_range():
    """Inside it, a connection any process opens meanwhile may take the port as its local end, and
    the server's later bind fails: a worker "failed while starting" (the likely cause of CI run M's
    failure, whose logs were not kept)."""
    from tfhadoop.ports import ephemeral_range

    low, high = ephemeral_range() or (0, -1)
    assert high >= low, "no ephemeral range to stay out of on this host"
    ports = free_ports(50)
    assert len(set(ports)) == 50
    assert not [p for p in ports if low <= p <= high], (low, high, ports)


def test_a_connection_s_local_port_cannot_be_bound_by_a_server():
    """Why: a port is taken by an outbound connection's local end, even with SO_REUSEADDR."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        with socket.create_connection(listener.getsockname()) as c:
            assert not port_is_free(c.getsockname()[1])


def test_with_no_room_outside_the_ephemeral_range_the_os_picks(monkeypatch):
    from tfhadoop import ports

    monkeypatch.setattr(ports, "ephemeral_range", lambda: (1024, 65535))
    assert ports.listen_candidates() == []
    picked = free_ports(3)
    assert len(set(picked)) == 3 and all(port_is_free(p) for p in picked)


def test_a_listening_port_is_not_free():
    with socket.socket() as s:
        s.bind(("", 0))
        s.listen()
        assert not port_is_free(s.getsockname()[1])


def test_answers_is_true_only_while_a_process_listens():
    """What the PS master asks of a lost worker's old address (is its process still there?)."""
    from tfhadoop.ports import answers

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        address = f"127.0.0.1:{s.getsockname()[1]}"
        assert answers(address)
    assert not answers(address)  # closed: refused
    assert not answers("no-such-host.invalid:1") and not answers("not an address")
