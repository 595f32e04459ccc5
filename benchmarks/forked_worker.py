"""One engine per forked process, for benchmarks that must survive an engine hanging or crashing.

``ForkedWorker`` starts ``target(conn, engine, stderr_path)`` in a child process (fork), waits for its first message
(``("ready", ...)``: the rest of the tuple is kept in ``ready``), then exchanges jobs over the pipe. A job that does
not answer in time is a ``"timeout"`` and kills the child; a child that dies is a ``"crash"``; the next job starts a
fresh child (counted in ``restarts``). ``stop()`` asks the child to exit (``None``), then kills it if it does not.
The job protocol itself (what is sent, what comes back) belongs to each benchmark.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path


class ForkedWorker:
    def __init__(self, target, engine: str, ctx, stderr_path=None):
        self.target, self.engine, self.ctx, self.stderr_path = target, engine, ctx, stderr_path
        self.proc = self.conn = None
        self.ready: tuple = ()
        self.restarts = 0

    def start(self, timeout: float = 600.0) -> tuple:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=self.target, args=(child, self.engine, self.stderr_path), daemon=True)
        self.proc.start()
        child.close()
        self.conn = parent
        if not parent.poll(timeout):
            raise RuntimeError(f"{self.engine}: worker setup timed out")
        msg = parent.recv()
        if msg[0] != "ready":
            raise RuntimeError(f"{self.engine}: {msg[1]}")
        self.ready = tuple(msg[1:])
        return self.ready

    def ensure_started(self) -> None:
        if self.proc is None:
            self.restarts += 1
            self.start()

    def recv(self, timeout: float) -> tuple:
        """The next message, or ``("timeout",)`` / ``("crash",)``."""
        try:
            if not self.conn.poll(timeout):
                return ("timeout",)
            return self.conn.recv()
        except (EOFError, OSError):
            return ("crash",)

    def kill(self) -> None:
        if self.proc is not None and self.proc.is_alive():
            os.kill(self.proc.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.join(10)
        self.proc = self.conn = None

    def stop(self) -> None:
        if self.conn is not None:
            try:
                self.conn.send(None)
                self.proc.join(5)
            except Exception:
                pass
        self.kill()


def write_results(result: dict, out, plot, markdown, log) -> None:
    """Writes ``result`` as JSON to ``out`` and its plot next to it (a failing plot is logged, not fatal), then prints
    the markdown summary."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, ensure_ascii=False))
    try:
        plot(result, out.with_suffix(".png"))
    except Exception as exc:
        log.error("plot failed: %s: %s", type(exc).__name__, exc)
    print(markdown(result))
    log.info("wrote %s and %s", out, out.with_suffix(".png"))
