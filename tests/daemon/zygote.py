"""A process that has imported the daemon once and forks a daemon for each test that asks.

Most of a daemon's start is Python importing it (about a second, half of it lsprotocol's
types), and the daemon tests start about two hundred daemons. Here a test's ``spawn``
(spawn.py) hands this process the three ends of its pipes (stdin, stdout, stderr) with the
command line, environment and folder; this process forks, and the child takes those ends as its
0, 1 and 2, that environment and folder, and runs ``hdcontext``'s ``main`` as ``python -m
hdcontext`` would: the same code over the same pipes, only not imported again. The test learns
the child's pid at once and its exit code when it ends (this process is its parent and reaps it).

Run as a script by spawn.py (standard library and hdcontext only: no test module is imported
into a daemon). It ends when its stdin ends (the pytest worker that started it went away).

The wire, per connection: the test sends one JSON line ``{"argv", "env", "cwd"}`` with the three
descriptors (SCM_RIGHTS); this process answers ``<pid>\\n``, then ``<exit code>\\n`` when the
child ends (negative: the signal that ended it, as asyncio reports it).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import selectors
import signal
import socket
import sys
import traceback
from pathlib import Path
from typing import Any, NoReturn


def _preload() -> None:
    """What ``hdcontext serve`` imports and loads before and during its first requests."""
    from lsprotocol import types
    from pygls.capabilities import ServerCapabilitiesBuilder

    import hdcontext.cli.main
    import hdcontext.edges.daemon.daemon
    import hdcontext.edges.daemon.summarizer
    import hdcontext.edges.daemon.watcher
    import hdcontext.edges.lsp.logs
    import hdcontext.edges.lsp.server
    import hdcontext.edges.lsp.tcp
    import hdcontext.edges.lsp.transport
    import hdcontext.edges.storage.store  # noqa: F401
    from hdcontext.core.tokens import count_text
    from hdcontext.edges.lsp.server import build_server

    count_text("warm the encoding")
    # The converter every connection shares, with the code it generates the first time it reads
    # an ``initialize`` and writes its result: read the client profiles the tests send (the JSON
    # files pytest-lsp ships; read as data, pytest-lsp itself is not imported) and write the
    # capabilities a daemon answers with.
    ls = build_server()
    converter = ls.protocol._converter
    spec = importlib.util.find_spec("pytest_lsp")
    folders = spec.submodule_search_locations if spec is not None else None
    for folder in folders or []:
        for profile in sorted(Path(folder, "clients").glob("*.json")):
            params = json.loads(profile.read_text(encoding="utf-8"))
            message = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
            converter.structure(message, types.InitializeRequest)
    fm = ls.protocol.fm
    built = ServerCapabilitiesBuilder(
        types.ClientCapabilities(),
        set({**fm.features, **fm.builtin_features}),
        fm.feature_options,
        list(fm.commands),
        types.TextDocumentSyncKind.None_,
    ).build()
    converter.unstructure(types.InitializeResult(capabilities=built))


def _child(
    conn: socket.socket, fds: list[int], request: dict[str, Any], closing: list[int]
) -> NoReturn:
    """In the fork: become ``python -m hdcontext ARGS`` over the test's pipes. Never returns."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in closing:
            with contextlib.suppress(OSError):
                os.close(fd)
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        argv: list[str] = request["argv"]
        import hdcontext

        # What `python -m hdcontext ARGS` shows in sys.argv: the module's file, then ARGS.
        sys.argv = [str(Path(hdcontext.__file__).with_name("__main__.py")), *argv[3:]]
        sys.path.insert(0, os.getcwd())  # as `python -m` puts the folder first
        from hdcontext.cli.main import main

        code = main(argv[3:])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except BaseException:  # as an interpreter would: the traceback on stderr, exit code 1
        traceback.print_exc()
        code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, 3)
    while not data.endswith(b"\n"):
        more = conn.recv(1 << 20)
        if not more:
            raise ConnectionError("the request ended early")
        data += more
    return json.loads(data), list(fds)


def serve(path: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    os.set_blocking(wake_r, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    selector = selectors.SelectSelector()  # no descriptor of its own for a child to inherit
    selector.register(listener, selectors.EVENT_READ, "accept")
    selector.register(wake_r, selectors.EVENT_READ, "child")
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ, "parent")
    print("ready", flush=True)
    children: dict[int, socket.socket] = {}
    while True:
        for key, _events in selector.select():
            if key.data == "parent":
                if not os.read(sys.stdin.fileno(), 4096):
                    return
            elif key.data == "accept":
                conn, _ = listener.accept()
                try:
                    request, fds = _receive(conn)
                except (OSError, ValueError):
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    others = [c.fileno() for c in children.values()]
                    _child(conn, fds, request, [listener.fileno(), wake_r, wake_w, *others])
                for fd in fds:
                    os.close(fd)
                children[pid] = conn
                conn.sendall(f"{pid}\n".encode())
            else:
                with contextlib.suppress(BlockingIOError):
                    while os.read(wake_r, 4096):
                        pass
                while True:
                    try:
                        pid, status = os.waitpid(-1, os.WNOHANG)
                    except ChildProcessError:
                        break
                    if pid == 0:
                        break
                    conn = children.pop(pid, None)
                    if conn is not None:
                        with contextlib.suppress(OSError):
                            conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                        conn.close()


if __name__ == "__main__":
    sys.path.pop(0)  # this folder: nothing of the tests is importable in a daemon
    _preload()
    serve(sys.argv[1])
