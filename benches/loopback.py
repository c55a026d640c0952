"""`quarry serve` on loopback with one admin token, for the benchmarks that ask a long-lived
server (`pages.py`, `buckets.py`, `read.py`): one kept-alive connection, timed GETs; and the
generated archive they serve."""

from __future__ import annotations

import http.client
import shutil
import subprocess
import time
from pathlib import Path


def generated_archive(quarry: str, archive: Path, messages: int, seed: int = 5) -> Path:
    """`archive`, made once from `quarry gen --lean --messages N --seed S` (the generated files
    removed once ingested)."""
    if not archive.exists():
        corpus = archive.parent / "generated"
        print(f"== quarry gen --lean --messages {messages} --seed {seed}, ingest", flush=True)
        for argv in ([quarry, "gen", "--lean", "--messages", messages, "--seed", seed, "--out", corpus],
                     [quarry, "--archive", archive, "ingest", corpus, "--no-progress"]):
            subprocess.run([str(a) for a in argv], check=True, capture_output=True, text=True)
        shutil.rmtree(corpus)
    return archive


class Server:
    """A `quarry serve` started with `global_flags` before `serve` and `serve_flags` after it."""

    def __init__(self, quarry: str, archive: Path, work: Path, tag: str = "bench",
                 global_flags: tuple = (), serve_flags: tuple = ()):
        tokens = work / f"tokens-{tag}.toml"
        tokens.unlink(missing_ok=True)
        out = subprocess.run(
            [str(a) for a in [quarry, "--archive", archive, "token", "add", "bench", "--scope",
                              "admin", "--tokens", tokens]],
            check=True, capture_output=True, text=True)
        self.token = out.stdout.strip().splitlines()[-1]
        self.process = subprocess.Popen(
            [str(a) for a in [quarry, "--archive", archive, *global_flags, "serve", "--listen",
                              "127.0.0.1:0", "--tokens", tokens, *serve_flags]],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        address = self.process.stdout.readline().strip().removeprefix("listening on http://")
        host, port = address.rsplit(":", 1)
        self.connection = http.client.HTTPConnection(host, int(port), timeout=600)

    def get(self, path: str, accept: str | None = None) -> tuple[float, int, bytes]:
        """GET `path`: seconds, status and body."""
        headers = {"Authorization": f"Bearer {self.token}"}
        if accept:
            headers["Accept"] = accept
        started = time.perf_counter()
        self.connection.request("GET", path, headers=headers)
        response = self.connection.getresponse()
        body = response.read()
        return time.perf_counter() - started, response.status, body

    def stop(self):
        self.process.terminate()
        self.process.wait()
