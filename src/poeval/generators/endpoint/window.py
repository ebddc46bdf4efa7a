"""Requests in flight, answered in index order: up to ``concurrency`` attempts ahead of the one being
counted are sent at once, and each is handed to the sampling loop in the order of its index, so that which
attempts are counted never depends on which answer came back first.

Workers are daemon threads: a job that stops (an error, a kill) does not wait for a request in flight to
end; :meth:`Window.close` closes the client's connections, which makes servers that watch them (vLLM,
llama.cpp) abort the generation.
"""

from __future__ import annotations

import queue
import threading
from typing import Callable


class Window:
    """``fetch(index)`` runs on a worker thread for each index in turn; :meth:`get` returns its result (or
    raises its error) in index order, keeping ``concurrency`` indices submitted ahead, below ``limit``."""

    def __init__(self, fetch: Callable[[int], object], concurrency: int, limit: int):
        self.fetch, self.concurrency, self.limit = fetch, concurrency, limit
        self.results: dict[int, tuple[bool, object]] = {}
        self.done = threading.Condition()
        self.todo: queue.Queue = queue.Queue()
        self.submitted = 0
        self.consumed = 0
        self.workers = [threading.Thread(target=self._work, daemon=True, name=f"poeval-request-{i}")
                        for i in range(concurrency)]
        for worker in self.workers:
            worker.start()

    def _work(self) -> None:
        while True:
            index = self.todo.get()
            if index is None:
                return
            try:
                result = (True, self.fetch(index))
            except BaseException as err:   # handed to the counting thread, which raises it
                result = (False, err)
            with self.done:
                self.results[index] = result
                self.done.notify_all()

    def get(self, index: int):
        while self.submitted < min(index + self.concurrency, self.limit):
            self.todo.put(self.submitted)
            self.submitted += 1
        with self.done:
            self.done.wait_for(lambda: index in self.results)
            ok, value = self.results.pop(index)
            self.consumed += 1
        if not ok:
            raise value
        return value

    def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the requests already sent, so that their answers reach the
        request log (they were paid for: a rerun with a larger ``n`` reuses them)."""
        with self.done:
            self.done.wait_for(lambda: self.submitted - self.consumed - len(self.results) <= 0, timeout=timeout)

    def stop(self) -> None:
        """Let the workers end after the request each is on; nothing more is sent."""
        while not self.todo.empty():
            try:
                self.todo.get_nowait()
            except queue.Empty:
                break
        for _ in self.workers:
            self.todo.put(None)
