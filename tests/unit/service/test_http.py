"""The HTTP listener: real sockets, real requests."""
from __future__ import annotations

import socket
import subprocess
import sys
import threading

import pytest

from scheduler import exception
from scheduler.service import http
from tests.fixtures._net import http_get


def get(server, path: str) -> tuple[int, str]:
    host, port = server.server_address[:2]
    return http_get(f"http://{host}:{port}{path}")


@pytest.fixture
def serve():
    servers = []

    def start(routes):
        server = http.serve("127.0.0.1:0", routes)
        servers.append(server)
        return server
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_healthcheck_is_200_ok_or_503_with_the_reason(serve):
    verdict = [(True, "2/2 workers consuming")]
    server = serve({"/healthcheck": http.healthcheck(lambda: verdict[0])})
    assert get(server, "/healthcheck") == (200, "OK\n")
    verdict[0] = (False, "1/2 workers consuming; worker 1 loading")
    assert get(server, "/healthcheck") == (
        503, "1/2 workers consuming; worker 1 loading\n")
    assert get(server, "/other")[0] == 404


def test_a_failing_route_is_a_500_and_the_listener_stays(serve):
    def broken():
        raise RuntimeError("bug")
    server = serve({"/x": broken,
                    "/y": lambda: http.Response(200, b"y")})
    assert get(server, "/x") == (500, "RuntimeError\n")
    assert get(server, "/y") == (200, "y")


def test_an_address_in_use_names_address_and_option():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        with pytest.raises(exception.ConfigError) as e:
            http.serve(address, {})
    assert str(e.value).startswith(
        f"cannot listen on {address} ([scheduler] http_listen): Address "
        f"already in use")


@pytest.mark.parametrize("text", ["8779", "localhost", "host:port",
                                  ":8779", "127.0.0.1:70000", "127.0.0.1:-1"])
def test_malformed_addresses(text):
    with pytest.raises(exception.ConfigError, match=r"\[scheduler\] "
                       r"http_listen: expected host:port"):
        http.parse_address(text)


def test_ipv6_address():
    assert http.parse_address("[::1]:8796") == ("::1", 8796)


def test_an_ipv6_address_is_listened_on():
    try:
        server = http.serve("[::1]:0", {"/healthcheck": http.healthcheck(
            lambda: (True, "ok"))})
    except exception.ConfigError as e:
        pytest.fail(f"::1 refused: {e}")
    try:
        port = server.server_address[1]
        assert http_get(f"http://[::1]:{port}/healthcheck") == (200, "OK\n")
    finally:
        server.shutdown()
        server.server_close()


def _request(server, method: str, path: str):
    import http.client
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=10)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, dict(response.headers), response.read()
    finally:
        connection.close()


def test_head_is_answered_like_get_without_a_body(serve):
    # Load balancers probe with HEAD (oslo.middleware's healthcheck
    # answers it); RFC 9110 makes HEAD mandatory wherever GET is served.
    verdict = [(True, "ok")]
    server = serve({"/healthcheck": http.healthcheck(lambda: verdict[0])})
    status, headers, body = _request(server, "HEAD", "/healthcheck")
    assert (status, body) == (200, b"")
    assert headers["Content-Type"] == "text/plain; charset=utf-8"
    assert headers["Content-Length"] == "3"
    verdict[0] = (False, "no worker consuming")
    assert _request(server, "HEAD", "/healthcheck")[0] == 503
    assert _request(server, "HEAD", "/other")[0] == 404


@pytest.mark.parametrize("method", ("POST", "PUT", "DELETE", "PATCH"))
def test_a_write_is_refused_with_405_naming_the_allowed_methods(serve,
                                                                 method):
    # The stdlib answers a method it has no do_* for with a 501 HTML page:
    # "not implemented", as if the server did not know the method.
    called = []
    server = serve({"/healthcheck": lambda: called.append(1)
                    or http.Response(200, b"ok\n")})
    status, headers, body = _request(server, method, "/healthcheck")
    assert (status, headers["Allow"]) == (405, "GET, HEAD")
    assert body == f"{method} not allowed; allowed: GET, HEAD\n".encode()
    assert called == []
    assert _request(server, method, "/other")[0] == 404


def _closed_by_server(sock: socket.socket, within: float = 10.0) -> bool:
    """Whether the server closes ``sock`` within ``within`` seconds
    (reading and discarding whatever it sends first)."""
    sock.settimeout(within)
    try:
        while sock.recv(4096):
            pass
    except ConnectionResetError:
        pass
    except TimeoutError:
        return False
    return True


def _connect(server) -> socket.socket:
    return socket.create_connection(server.server_address[:2], timeout=10)


@pytest.mark.parametrize("sent", [
    b"",                                          # silent
    b"GET /healthcheck HTTP/1.1\r\nHost: x\r\n",  # headers never end
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS ClientHello
], ids=["silent", "slow-headers", "tls"])
def test_a_silent_or_slow_client_is_dropped(serve, sent):
    # Issue 46: such a connection held its socket and thread for ever.
    server = serve({"/healthcheck": http.healthcheck(lambda: (True, ""))})
    server.timeout_seconds = 0.5
    with _connect(server) as client:
        client.sendall(sent)
        assert _closed_by_server(client), "still open after 10 s"
    assert get(server, "/healthcheck")[0] == 200


def test_idle_connections_beyond_the_cap_cannot_starve_healthcheck(serve):
    server = serve({"/healthcheck": http.healthcheck(lambda: (True, ""))})
    server.max_connections, server.timeout_seconds = 4, 60
    idle = [_connect(server) for _ in range(10)]
    try:
        assert get(server, "/healthcheck") == (200, "OK\n")
        # Each newcomer evicted the oldest idle one: 10 + 1 - 4.
        for number, client in enumerate(idle[:7]):
            assert _closed_by_server(client), f"idle {number} still open"
        for client in idle[7:]:
            client.setblocking(False)
            with pytest.raises(BlockingIOError):
                client.recv(1)
    finally:
        for client in idle:
            client.close()


def test_beyond_the_cap_of_busy_connections_one_is_closed_at_once(serve):
    entered, release = threading.Event(), threading.Event()

    def slow() -> http.Response:
        entered.set()
        release.wait(30)
        return http.Response(200, b"slow\n")
    server = serve({"/slow": slow})
    server.max_connections = 1
    first = threading.Thread(target=get, args=(server, "/slow"))
    first.start()
    try:
        assert entered.wait(10)
        with _connect(server) as second:
            second.sendall(b"GET /slow HTTP/1.0\r\n\r\n")
            assert _closed_by_server(second), "queued, not refused"
    finally:
        release.set()
        first.join(30)


def test_the_listen_backlog_is_a_real_servers(serve):
    # socketserver passes it to listen(); the stdlib's default is 5.
    server = serve({})
    assert server.request_queue_size >= 128


OUT_OF_FDS_SERVER = """
import resource, sys
# Above the cap of connections (64), as any real limit is.
resource.setrlimit(resource.RLIMIT_NOFILE, (120, 120))
from scheduler.service import http
server = http.serve("127.0.0.1:0", {
    "/healthcheck": http.healthcheck(lambda: (True, "ok"))})
print(server.server_address[1], flush=True)
sys.stdin.read()
"""


def test_more_idle_connections_than_fds_cannot_starve_healthcheck():
    # Issue 46: every idle connection kept a descriptor; once they ran out
    # the listener spun on accept() and /healthcheck timed out.
    server = subprocess.Popen([sys.executable, "-c", OUT_OF_FDS_SERVER],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
    idle = []
    try:
        port = int(server.stdout.readline())
        for _ in range(200):
            # One at a time: once the server is out of descriptors and its
            # backlog is full, a connect is never answered (the attack is
            # on); a server that still accepts gets all 200.
            try:
                idle.append(socket.create_connection(("127.0.0.1", port),
                                                     timeout=5))
            except TimeoutError:
                break
        assert http_get(f"http://127.0.0.1:{port}/healthcheck") == (
            200, "OK\n")
    finally:
        for client in idle:
            client.close()
        server.stdin.close()
        server.wait(30)
