"""Wake-ups across processes: PostgreSQL LISTEN/NOTIFY, Redis pub/sub, one machine's local sockets, or none.

The local channel is for the embedded default under `flask serve` (SQLite, no Redis, several processes on
one machine): each process listens on a Unix socket of its own in one folder, and sends each message to
every other socket there. No process relays for the others, so a busy one (the knowledge process while it
indexes) delays no one's wake-ups but its own.

A wake-up only says "look again": stored run events stay the source of truth, so a lost message
costs a listener latency (until its safety re-check), never an event. Each process keeps one
listening connection per channel in a daemon thread of its own (not from the SQLAlchemy pool),
started on first use and again after a fork, and reconnects with a back-off when it drops.

Messages are short strings: `e <run id> <seq> [<run id> <seq> …]` (runs stored events up to seq: one
message for a whole batch of the event store), `s <run id>` (Stop was requested) and `*` (this process
may have missed messages: every listener looks again).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flask import Flask
from sqlalchemy import func, select
from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

CHANNEL = "skilldesk_run_events"
READY_WAIT_SECONDS = 2.0
HEALTH_CHECK_SECONDS = 30.0
MAX_BACKOFF_SECONDS = 10.0

# Runs named in one `e` message: a run id and a number take about 45 bytes, pg_notify takes 8000 at most.
RUNS_PER_MESSAGE = 100

Deliver = Callable[[str], None]


def event_messages(newest: dict[str, int]) -> list[str]:
    """The `e` messages that announce runs' newest stored events (run id -> sequence number)."""
    pairs = [f"{run_id} {seq}" for run_id, seq in newest.items()]
    return ["e " + " ".join(pairs[start:start + RUNS_PER_MESSAGE])
            for start in range(0, len(pairs), RUNS_PER_MESSAGE)]


def parse_events(rest: str) -> list[tuple[str, int]]:
    """Read the (run id, sequence number) pairs of an `e` message (without its `e `); skip malformed ones."""
    words = rest.split()
    return [(run_id, int(seq)) for run_id, seq in zip(words[::2], words[1::2], strict=False) if seq.isdigit()]


class Wakeups:
    """In-process only: the embedded default, where every listener shares the writer's process."""

    crosses_processes = False

    def stage(self, session: Session, message: str) -> None:
        """Add the message to the session's open transaction (sent when it commits), if the backend can."""

    def committed(self, message: str) -> None:
        """Send the message after the transaction that stored what it announces has committed."""

    def listen(self) -> bool:
        """Make sure this process hears messages; True when it has just begun (the caller should look again)."""
        return False


class PostgresWakeups(Wakeups):
    """`pg_notify` inside the transaction that stores the events; `LISTEN` on a connection of its own."""

    crosses_processes = True

    def __init__(self, dsn: str, deliver: Deliver) -> None:
        self.dsn = dsn
        self.deliver = deliver

    def stage(self, session: Session, message: str) -> None:
        # Transactional: delivered exactly when the events become visible, and never for a rollback.
        session.execute(select(func.pg_notify(CHANNEL, message)))

    def listen(self) -> bool:
        return _listener(("postgresql", self.dsn), lambda: _PostgresListener(self.dsn, self.deliver)).ensure()


class RedisWakeups(Wakeups):
    """`PUBLISH` after the commit; a `SUBSCRIBE` connection of its own."""

    crosses_processes = True

    def __init__(self, url: str, deliver: Deliver) -> None:
        # Imported here: only deployments that set REDIS_URL pay for the client at start.
        import redis

        self.url = url
        self.deliver = deliver
        self.client = redis.Redis.from_url(url)
        # Pub/sub ignores the database number: name the channel after it, so databases stay apart.
        self.channel = f"{CHANNEL}:{self.client.connection_pool.connection_kwargs.get('db', 0)}"

    def committed(self, message: str) -> None:
        try:
            self.client.publish(self.channel, message)
        except Exception:  # the events are stored: listeners find them at their safety re-check
            log.warning("could not publish a run wake-up on Redis", exc_info=True)

    def listen(self) -> bool:
        return _listener(("redis", self.url), lambda: _RedisListener(self.url, self.channel, self.deliver)).ensure()


class LocalWakeups(Wakeups):
    """A Unix socket per process in one folder: a message goes to every other process's socket there."""

    crosses_processes = True

    def __init__(self, folder: str, deliver: Deliver) -> None:
        self.folder = folder
        self.deliver = deliver

    def committed(self, message: str) -> None:
        _outbox(self.folder).send(message)

    def listen(self) -> bool:
        return _listener(("local", self.folder), lambda: _LocalInbox(self.folder, self.deliver)).ensure()


def local_folder(config: Any) -> str:
    """Where the processes of one machine keep their wake-up sockets: beside the job queue's file."""
    return str(Path(config["JOBS_SQLITE_PATH"]).with_suffix(".live"))


def for_app(app: Flask, engine_url: Any, deliver: Deliver) -> Wakeups:
    """Choose the app's wake-ups from LIVE_EVENTS: auto (PostgreSQL, else Redis, else the local sockets under
    `flask serve`, else none) or one by name."""
    choice = app.config["LIVE_EVENTS"]
    if choice not in ("auto", "postgresql", "redis", "local", "process"):
        raise ValueError(f"LIVE_EVENTS must be auto, postgresql, redis, local or process, not {choice!r}")
    postgres = engine_url.get_backend_name() == "postgresql"
    if choice == "postgresql" or (choice == "auto" and postgres):
        if not postgres:
            raise ValueError("LIVE_EVENTS=postgresql needs a PostgreSQL DATABASE_URL")
        dsn = engine_url.set(drivername="postgresql").render_as_string(hide_password=False)
        return PostgresWakeups(dsn, deliver)
    if choice == "redis" or (choice == "auto" and app.config.get("REDIS_URL")):
        if not app.config.get("REDIS_URL"):
            raise ValueError("LIVE_EVENTS=redis needs REDIS_URL")
        return RedisWakeups(app.config["REDIS_URL"], deliver)
    if choice == "local" or (choice == "auto" and app.config.get("KNOWLEDGE_PROCESS")):
        return LocalWakeups(local_folder(app.config), deliver)
    return Wakeups()


_listeners: dict[tuple[str, str], _Listener] = {}
_listeners_lock = threading.Lock()


def _listener(key: tuple[str, str], make: Callable[[], _Listener]) -> _Listener:
    """Return this process's listener for the channel, making a new one after a fork."""
    with _listeners_lock:
        listener = _listeners.get(key)
        if listener is None or listener.pid != os.getpid():
            listener = _listeners[key] = make()
        return listener


class _Listener:
    """A daemon thread that holds one subscription and hands every message to `deliver`."""

    name = "listener"

    def __init__(self, deliver: Deliver) -> None:
        self.deliver = deliver
        self.pid = os.getpid()
        self.ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def ensure(self) -> bool:
        with self._lock:
            if self._thread is not None:
                return False
            self._thread = threading.Thread(target=self._run, name=f"skilldesk-{self.name}", daemon=True)
            self._thread.start()
        self.ready.wait(READY_WAIT_SECONDS)
        return True

    def _run(self) -> None:
        backoff = 0.25
        while True:
            try:
                self.subscribe_and_deliver()
            except Exception:
                if self.ready.is_set():  # it was listening: try again soon, then back off while it fails
                    backoff = 0.25
                log.warning("run wake-ups (%s) lost their connection; retrying in %.1f s", self.name, backoff,
                            exc_info=True)
            self.ready.clear()
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)

    def subscribed(self) -> None:
        """Called once listening: messages sent before now may have been missed, so everyone looks again.

        The look-again goes out before `ready` is set, so whoever waited for the listener has already had it.
        """
        self.deliver("*")
        self.ready.set()

    def subscribe_and_deliver(self) -> None:
        raise NotImplementedError


class _PostgresListener(_Listener):
    name = "pg-listener"

    def __init__(self, dsn: str, deliver: Deliver) -> None:
        super().__init__(deliver)
        self.dsn = dsn

    def subscribe_and_deliver(self) -> None:
        import psycopg  # the driver SQLAlchemy already loaded for this database

        with psycopg.connect(self.dsn, autocommit=True, application_name="skilldesk-wakeups") as connection:
            connection.execute(f"LISTEN {CHANNEL}")
            self.subscribed()
            while True:
                for notification in connection.notifies(timeout=HEALTH_CHECK_SECONDS):
                    self.deliver(notification.payload)
                connection.execute("SELECT 1")  # a quiet connection may be a dead one: find out


class _RedisListener(_Listener):
    name = "redis-listener"

    def __init__(self, url: str, channel: str, deliver: Deliver) -> None:
        super().__init__(deliver)
        self.url = url
        self.channel = channel

    def subscribe_and_deliver(self) -> None:
        import redis

        client = redis.Redis.from_url(self.url, health_check_interval=HEALTH_CHECK_SECONDS)
        pubsub = client.pubsub(ignore_subscribe_messages=True)
        try:
            pubsub.subscribe(self.channel)
            pubsub.get_message(timeout=READY_WAIT_SECONDS)  # the subscription's confirmation
            self.subscribed()
            while True:
                message = pubsub.get_message(timeout=HEALTH_CHECK_SECONDS)
                if message is None:
                    pubsub.ping()
                elif message["type"] == "message":
                    data = message["data"]
                    self.deliver(data.decode() if isinstance(data, bytes) else data)
        finally:
            pubsub.close()
            client.close()


class _LocalInbox(_Listener):
    """This process's socket in the folder: every line another process sends to it is delivered."""

    name = "local-listener"

    def __init__(self, folder: str, deliver: Deliver) -> None:
        super().__init__(deliver)
        self.folder = Path(folder)

    def subscribe_and_deliver(self) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self.folder / f"{os.getpid()}.sock"
        path.unlink(missing_ok=True)  # a process of this pid that died before
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
            server.bind(str(path))
            server.listen(128)
            self.subscribed()
            while True:
                peer, _address = server.accept()
                threading.Thread(target=self._read, args=(peer,), name="skilldesk-local-peer", daemon=True).start()

    def _read(self, peer: socket.socket) -> None:
        buffered = b""
        with peer:
            while chunk := peer.recv(65536):
                *lines, buffered = (buffered + chunk).split(b"\n")
                for line in lines:
                    if line:
                        self.deliver(line.decode())


# How long a send waits for a process that does not read its socket before that process is dropped
# (it reads the stored events at its safety re-check).
SEND_TIMEOUT_SECONDS = 0.5
_outboxes: dict[tuple[int, str], _LocalOutbox] = {}


def _outbox(folder: str) -> _LocalOutbox:
    with _listeners_lock:
        key = (os.getpid(), folder)
        if key not in _outboxes:
            _outboxes[key] = _LocalOutbox(Path(folder))
        return _outboxes[key]


class _LocalOutbox:
    """Connections from this process to every other socket of the folder, made again when the folder changes."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.peers: dict[str, socket.socket] = {}
        self._seen = -1.0
        self._lock = threading.Lock()

    def send(self, message: str) -> None:
        line = message.encode() + b"\n"
        with self._lock:
            self._connect_new()
            for name, peer in list(self.peers.items()):
                try:
                    peer.sendall(line)
                except OSError:  # gone, or not reading: it looks at the stored events again by itself
                    peer.close()
                    del self.peers[name]
                    self._seen = -1.0

    def _connect_new(self) -> None:
        try:
            changed = self.folder.stat().st_mtime_ns
        except FileNotFoundError:
            return
        if changed == self._seen:
            return
        self._seen = changed
        mine = f"{os.getpid()}.sock"
        present = {path.name for path in self.folder.glob("*.sock")} - {mine}
        for name in set(self.peers) - present:
            self.peers.pop(name).close()
        for name in present - set(self.peers):
            peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            peer.settimeout(SEND_TIMEOUT_SECONDS)
            try:
                peer.connect(str(self.folder / name))
            except OSError:  # a socket left by a process that died
                peer.close()
                if not _alive(name):
                    (self.folder / name).unlink(missing_ok=True)
                continue
            self.peers[name] = peer


def _alive(socket_name: str) -> bool:
    try:
        os.kill(int(socket_name.removesuffix(".sock")), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True
