"""Start the front doors: LSP on stdio or TCP, HTTP, or HTTP beside LSP, in one process.

Every door calls the same application service (lsp_server/service.py): one
worker thread, one engine, one KV cache. `serve` picks the combination:
- LSP alone (stdio, or `--tcp`): until `exit`, then the process ends
  (0 after shutdown + exit, 1 if the client went away without them);
- HTTP alone: until SIGINT/SIGTERM; returns the exit code (1 if the port
  cannot be bound);
- HTTP beside LSP: one asyncio loop runs the protocol's message loop
  (protocol.py's framing) next to aiohttp; ends the process as LSP alone does.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
from typing import TYPE_CHECKING, NoReturn, cast

from pygls.io_ import StdoutWriter

from .http import FrontDoor, start_http
from .logs import setup_logging
from .lsp_gate import gated
from .options import ServerOptions, StartupConfig
from .server import create_server
from .service import CompletionService
from .startup import ListenError, cannot_listen, parse_http, parse_tcp, say_error

if TYPE_CHECKING:
    from .protocol import GroundspecProtocol
    from .server import GroundspecServer

log = logging.getLogger(__name__)


def serve(
    config: StartupConfig | None = None,
    *,
    stdio: bool = False,
    tcp: str | None = None,
    http: str | None = None,
    log_file: str | None = None,
    api_key: str | None = None,
) -> int:
    """Serve the doors asked for: LSP on stdio (the default), or on `tcp`
    (HOST:PORT); HTTP at `http` ([HOST:]PORT), alone or beside LSP on stdio
    (`stdio`) or `tcp`. `api_key`: required of HTTP and TCP clients (never of
    stdio, whose client started the server). Returns only when HTTP runs alone
    (its exit code)."""
    config = config or StartupConfig(options=ServerOptions())
    if http is None:
        run_lsp(config, tcp=tcp, log_file=log_file, api_key=api_key)
    if tcp or stdio:
        serve_with_lsp(config, http, tcp=tcp, log_file=log_file, api_key=api_key)
    return run_http(config, http, log_file=log_file, api_key=api_key)


def serve_with_lsp(
    config: StartupConfig,
    http: str,
    *,
    tcp: str | None,
    log_file: str | None = None,
    api_key: str | None = None,
) -> NoReturn:
    """HTTP beside LSP (stdio, or `tcp`) in one process and one loop."""
    setup_logging(log_file)
    host, port = parse_http(http)
    lsp_address = parse_tcp(tcp) if tcp else None
    ls = create_server(config)
    ls.service.roots.confined = lsp_address is not None  # a client it did not start with
    front = FrontDoor(ls.service, lambda: ls.service.options, api_key=api_key)

    async def main() -> None:
        runner = await start_http(front, host, port)
        try:
            await (
                _serve_lsp_tcp(ls, *lsp_address, api_key=api_key)
                if lsp_address
                else _serve_lsp_stdio(ls)
            )
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    except (KeyboardInterrupt, SystemExit):  # pygls ends `exit` with sys.exit()
        pass
    except ListenError as exc:
        say_error(exc)
    finally:
        end_process(ls)


def run_lsp(
    config: StartupConfig | None = None,
    *,
    tcp: str | None = None,
    log_file: str | None = None,
    api_key: str | None = None,
) -> NoReturn:
    """Serve LSP on stdio (or TCP, to clients with `api_key` if given) until
    `exit`, then end the process.

    Does not return: the stdin reader thread cannot be joined."""
    setup_logging(log_file)
    address = parse_tcp(tcp) if tcp else None
    ls = create_server(config or StartupConfig(options=ServerOptions()))
    ls.service.roots.confined = address is not None  # a client it did not start with
    try:
        if address is not None:
            log.info("listening on %s:%d", *address)
            ls.start_tcp(*address, api_key=api_key)
        else:
            ls.start_io()
    finally:
        end_process(ls)


def run_http(
    config: StartupConfig,
    address: str,
    log_file: str | None = None,
    api_key: str | None = None,
) -> int:
    """HTTP alone: serve until SIGINT/SIGTERM. Returns the exit code: 1 if the
    port cannot be bound."""
    setup_logging(log_file)
    host, port = parse_http(address)
    service = CompletionService(config)
    for problem in service.problems:
        log.warning("%s", problem)

    async def main() -> None:
        front = FrontDoor(service, lambda: service.options, api_key=api_key)
        runner = await start_http(front, host, port)
        service.start()  # /health says "Loading model" until it is done
        try:
            await until_signalled()
        finally:
            await runner.cleanup()
            service.shutdown()

    try:
        asyncio.run(main())
    except ListenError as exc:
        say_error(exc)
        service.shutdown()
        return 1
    return 0


def end_process(ls: GroundspecServer) -> NoReturn:
    """Stop the service and end the process: 0 after shutdown + exit, 1 if the
    client went away without them (the LSP rule). os._exit, because the stdin
    reader thread cannot be joined."""
    ls.service.shutdown()
    code = 0 if ls.shutdown_requested else 1
    log.info("exiting with %d", code)
    logging.shutdown()
    os._exit(code)


async def until_signalled() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def _protocol(ls: GroundspecServer) -> GroundspecProtocol:
    return cast("GroundspecProtocol", ls.protocol)


async def _serve_lsp_stdio(ls: GroundspecServer) -> None:
    ls._stop_event = stop = threading.Event()  # as GroundspecServer.start_io sets up
    ls.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    await _protocol(ls).serve_stdio(sys.stdin.buffer.fileno(), stop)


async def _serve_lsp_tcp(
    ls: GroundspecServer, host: str, port: int, api_key: str | None = None
) -> None:
    ls._stop_event = stop = threading.Event()
    finished = asyncio.Event()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ls.protocol.set_writer(writer)  # type: ignore[arg-type]
        await _protocol(ls).serve_stream(reader, stop)
        finished.set()

    try:
        server = await asyncio.start_server(gated(connection, api_key), host, port)
    except OSError as exc:
        raise cannot_listen(host, port, exc) from None
    log.info("LSP listening on %s:%d", *server.sockets[0].getsockname()[:2])
    async with server:
        await finished.wait()
