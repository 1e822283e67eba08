"""The HTTP listener: real sockets, real requests."""
from __future__ import annotations

import socket

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
