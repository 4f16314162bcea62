"""The job's event log: every failure and recovery the masters see, on HDFS and in the key-value
store (its newest lines), written so that an HDFS outage delays lines and never drops them."""
from __future__ import annotations

import collections
import json
import time

from tfhadoop.trainer import protocol


class EventLog:
    """Every failure and recovery: appended line by line to ``<job_dir>/events.jsonl`` on HDFS, the
    full log, which outlives the application; the newest ones (``protocol.EVENTS_TAIL``) in the
    key-value store (``events``) for live display: rewriting the whole list there on each event
    would pass gRPC's 4 MB message limit in a long job. Each event carries the application id (a
    resumed job appends to the same log) and ``seq``, its number in this application's events,
    by which a client shows each event once, whether from the tail or from the file."""

    def __init__(self, app, job_dir: str, app_id: str | None = None):
        self.app, self.url, self.events = app, protocol.job_file(job_dir, protocol.EVENTS_FILE), []
        self.app_id, self.base = app_id, 0  # base: events of this application before this attempt
        self.recent: collections.deque[str] = collections.deque(maxlen=protocol.EVENTS_TAIL)  # as JSON
        self.unwritten: list[str] = []  # lines HDFS refused (safe mode, NameNode restart): appended later

    def resume(self) -> None:
        """A later attempt of the same application numbers its events after the earlier ones'."""
        from tfhadoop.trainer import jobdir

        url = self.url.rsplit("/", 1)[0]
        self.base = max((jobdir.seq(e, i) + 1 for i, e in enumerate(jobdir.events(url, self.app_id))), default=0)

    def add(self, kind: str, **fields) -> dict:
        event = {"time": time.time(), "event": kind, **fields, "seq": self.base + len(self.events)}
        if self.app_id:
            event["app"] = self.app_id
        self.events.append(event)
        self.recent.append(json.dumps(event))
        print("event:", self.recent[-1], flush=True)
        self.app.kv[protocol.KV_EVENTS] = self.tail()
        self.unwritten.append(self.recent[-1])
        self.flush()
        return event

    def flush(self) -> None:
        """Append the lines not yet in the file; those HDFS refuses stay for the next try (each
        event and each round of the master's loop), so an outage delays lines, never drops them."""
        if not self.unwritten:
            return
        try:
            from tfhadoop.connectors import hdfs

            hdfs.append_bytes(self.url, "".join(line + "\n" for line in self.unwritten).encode())
            self.unwritten.clear()
        except Exception as exc:  # noqa: BLE001 - kept for the next try; the key-value store's tail has them
            print(f"cannot append to {self.url} ({len(self.unwritten)} line(s) kept for later): {exc}", flush=True)

    def flush_waiting(self, budget_s: float | None = None, sleep=time.sleep) -> None:
        """At the job's end: append what HDFS refused, waiting out an outage (``hdfs.retry``'s
        backoff, its budget unless ``budget_s``), since no later round of the loop will try again.
        Lines still refused after that are said in the log (the key-value tail had them)."""
        from tfhadoop.connectors import hdfs

        def appended():
            self.flush()
            if self.unwritten:
                raise OSError(f"{len(self.unwritten)} event line(s) not appended to {self.url}")

        try:
            hdfs.retry(appended, "event log", budget_s=hdfs.RETRY_BUDGET_S if budget_s is None else budget_s,
                       sleep=sleep)
        except OSError as exc:
            print(f"giving up: {exc}", flush=True)

    def tail(self) -> bytes:
        """The newest events as JSON, at most ``EVENTS_TAIL`` of them and ``EVENTS_TAIL_BYTES``."""
        lines = list(self.recent)
        size = sum(len(line) + 1 for line in lines) + 1
        while len(lines) > 1 and size > protocol.EVENTS_TAIL_BYTES:
            size -= len(lines.pop(0)) + 1
        return ("[" + ",".join(lines) + "]").encode()

    def rewrite(self) -> None:
        """Replace this application's lines by ``self.events`` (after details were added to past
        events), keeping other applications' lines; written whole, then renamed over."""
        from tfhadoop.connectors import hdfs

        self.recent.clear()
        self.recent.extend(json.dumps(e) for e in self.events[-protocol.EVENTS_TAIL:])
        try:
            old = hdfs.read_bytes(self.url).decode().splitlines() if hdfs.exists(self.url) else []
            kept = [line for line in old if line.strip() and (json.loads(line).get("app") != self.app_id
                                                              or json.loads(line).get("seq", 0) < self.base)]
            hdfs.write_bytes(self.url, "".join(line + "\n" for line in kept + [json.dumps(e) for e in self.events])
                                .encode())
        except Exception as exc:  # noqa: BLE001 - the appended log stays as it was
            print(f"cannot rewrite {self.url}: {exc}", flush=True)

