"""Free local ports for the embedded cluster and the trainer's slots."""
import socket

from tfhadoop.ports import free_ports, port_is_free


def test_free_ports_are_distinct_and_bindable():
    for _ in range(20):  # separate free_port calls returned one port twice in a bench run
        ports = free_ports(6)
        assert len(set(ports)) == 6
        assert all(port_is_free(p) for p in ports)


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
