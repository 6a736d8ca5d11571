"""What a connection may hold of ``mmjudge serve`` before it has sent a request: uvicorn's h11 protocol with a
deadline on each request's headers and a cap on the connections from one address.

uvicorn counts every open connection against its ``limit_concurrency`` (then answers 503 to everyone), and a
connection that has not finished its headers has no timer at all: 520 clients sending a header byte a
second held every slot with no key. Here a connection that has not finished a request's headers
``header_timeout`` seconds after it opened (or after its previous answer) is closed (with a 408 when it
had started one), and one address holds at most ``max_connections_per_client`` connections: the next ones
get a 429 at once and never count against the server's slots. Both happen before the app runs, so before
the API key is read: nothing here costs more than a timer and a counter.

>>> client_key(("10.0.0.7", 5123)), client_key(("::ffff:10.0.0.7", 80)), client_key(("2001:db8::1", 80))
('10.0.0.7', '10.0.0.7', '2001:db8::/64')
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
from collections import Counter
from typing import TYPE_CHECKING, Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.utils import get_remote_addr

from mmjudge.serve.protocol import error_body

if TYPE_CHECKING:
    from mmjudge.serve.settings import ServeSettings

_LINGER = 1.0  # seconds a refused connection may take to read its 429 before it is closed
_REASONS = {408: b"Request Timeout", 429: b"Too Many Requests"}


def client_key(address: tuple | None) -> str:
    """Who a connection counts against: its IP address; for IPv6 its /64 (one host's usual allocation:
    otherwise one machine would be as many clients as it has addresses)."""
    if not address:
        return ""  # a Unix socket: one local client
    host = str(address[0])
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:  # ::ffff:10.0.0.7 is 10.0.0.7
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def raw_answer(status: int, message: str, server_name: str) -> bytes:
    """A whole HTTP/1.1 error answer that closes the connection, written before any request was read."""
    blob = json.dumps(error_body(message)).encode("utf-8")
    head = (
        b"HTTP/1.1 %d %s\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n"
        b"server: %s\r\n\r\n" % (status, _REASONS[status], len(blob), server_name.encode())
    )
    return head + blob


def guarded_protocol(settings: ServeSettings, server_name: str) -> type:
    """An h11 protocol class for ``uvicorn.Config(http=...)`` enforcing ``settings.header_timeout`` and
    ``settings.max_connections_per_client``; its connections count per address in a counter of its own."""
    return type("GuardedH11Protocol", (_Guard,), {"settings": settings, "server_name": server_name, "peers": Counter()})


class _Guard(H11Protocol):
    settings: ServeSettings
    server_name: str
    peers: Counter

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._peer: str | None = None  # counted against this address (None: refused, or not yet made)
        self._refused = False
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        peer = client_key(get_remote_addr(transport))
        cap = self.settings.max_connections_per_client
        if self.peers[peer] >= cap:
            self._refused, self.transport = True, transport
            message = (
                f"too many connections from {peer}: this server allows {cap} at once from one address "
                "(mmjudge serve --max-connections-per-client)."
            )
            transport.write(raw_answer(429, message, self.server_name))
            if transport.can_write_eof():
                transport.write_eof()  # a FIN, then read what the client sends: closing on unread data would reset
            self._deadline = self.loop.call_later(_LINGER, transport.close)
            return
        self.peers[peer] += 1
        self._peer = peer
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if not self._refused:  # a refused connection's request is read and dropped
            super().data_received(data)

    def eof_received(self) -> bool | None:
        if self._refused:
            self.transport.close()
        return super().eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._refused:
            return
        if self._peer is not None:
            self.peers[self._peer] -= 1
            if self.peers[self._peer] <= 0:
                del self.peers[self._peer]
            self._peer = None
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        if not self._refused:
            super().pause_writing()

    def resume_writing(self) -> None:
        if not self._refused:
            super().resume_writing()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()  # the next request's headers have their own deadline

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(self.settings.header_timeout, self._headers_late)

    def _headers_late(self) -> None:
        self._deadline = None
        if self.transport.is_closing() or (self.cycle is not None and not self.cycle.response_complete):
            return  # a request is being answered: its headers came in time (re-armed when it is answered)
        started = self.conn.their_state is h11.IDLE and bool(self.conn.trailing_data[0])
        if started:  # part of a request's headers: say why it is cut
            message = (
                f"the request headers did not arrive within {self.settings.header_timeout:g} s "
                "(mmjudge serve --header-timeout)."
            )
            self.transport.write(raw_answer(408, message, self.server_name))
        self.transport.close()  # idle, or still sending a body nobody reads: just closed
