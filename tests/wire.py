"""Round trips to PostgreSQL, counted on the wire: a loopback relay between a client and
the server that reads the client's messages.

The server answers after a simple query (``Q``), a sync (``S``, of a pipeline or
an extended query) and a flush request (``H``, psycopg's fetch in a pipeline);
statements sent without one of these wait for the next. A round trip is such a
message that the server then answers: a flush with nothing left to send gets no
answer and costs no wait (psycopg sends one after a pipeline's last sync). So
the count is exact, with no timing and no noise; it is taken before the answer
is passed on, so it is complete once the client has its answer.
"""

from __future__ import annotations

import selectors
import socket
import struct
import threading
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit

WAITS = frozenset(b"QSH")  # message types the client sends and then waits after
# Requests that come before the startup message, without a type byte.
PRE_STARTUP = frozenset({80877103, 80877104})  # SSLRequest, GSSENCRequest


class _Stream:
    """The client's side of one connection: its messages, read as they pass."""

    def __init__(self) -> None:
        self.buffer = b""
        self.started = False  # past the startup message: every message has a type byte
        self.asked = False  # the client sent Q, S or H, and the server has not answered yet

    def sent(self, chunk: bytes) -> None:
        self.buffer += chunk
        while True:
            head = 5 if self.started else 8
            if len(self.buffer) < head:
                return
            if self.started:
                kind, size = self.buffer[0], struct.unpack("!I", self.buffer[1:5])[0] + 1
            else:
                kind, size = 0, struct.unpack("!I", self.buffer[:4])[0]
                code = struct.unpack("!I", self.buffer[4:8])[0]
            if len(self.buffer) < size:
                return
            self.buffer = self.buffer[size:]
            if not self.started:
                self.started = code not in PRE_STARTUP
            elif kind in WAITS:
                self.asked = True

    def answered(self) -> int:
        """1 when the server's bytes answer a question of the client: a round trip."""
        trip, self.asked = int(self.asked), False
        return trip


class Relay:
    """A relay on 127.0.0.1 to the server of ``url``; ``url_through`` gives the URL that
    connects through it, ``count`` the round trips a call makes."""

    def __init__(self, url: str) -> None:
        server = urlsplit(url)
        self.target = (server.hostname or "127.0.0.1", server.port or 5432)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.trips = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def url_through(self, url: str) -> str:
        parts = urlsplit(url)
        user = parts.netloc.rsplit("@", 1)
        host = f"127.0.0.1:{self.port}"
        return urlunsplit(parts._replace(netloc=f"{user[0]}@{host}" if len(user) > 1 else host))

    def count(self, call: Callable[[], object]) -> int:
        before = self.trips
        call()
        return self.trips - before

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.listener.close()

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self.listener, selectors.EVENT_READ)
        while not self._stop.is_set():
            for key, _ in selector.select(timeout=0.05):
                if key.fileobj is self.listener:
                    self._accept(selector)
                else:
                    self._pass_on(selector, key.fileobj, *key.data)  # type: ignore[arg-type]

    def _accept(self, selector: selectors.BaseSelector) -> None:
        client, _ = self.listener.accept()
        server = socket.create_connection(self.target)
        for end in (client, server):
            end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        stream = _Stream()
        selector.register(client, selectors.EVENT_READ, (server, stream, True))
        selector.register(server, selectors.EVENT_READ, (client, stream, False))

    def _pass_on(
        self,
        selector: selectors.BaseSelector,
        end: socket.socket,
        other: socket.socket,
        stream: _Stream,
        from_client: bool,
    ) -> None:
        try:
            chunk = end.recv(65536)
        except OSError:
            chunk = b""
        if not chunk:
            for s in (end, other):
                if s.fileno() != -1:
                    selector.unregister(s)
                    s.close()
            return
        if from_client:
            stream.sent(chunk)
        else:
            self.trips += stream.answered()
        other.sendall(chunk)
