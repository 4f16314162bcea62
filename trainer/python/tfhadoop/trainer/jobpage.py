"""The job master's side of the job page: progress samples appended to ``progress.jsonl`` in the
job directory (for the plots, live and afterwards), and a small HTTP server in the master that
renders ``report.render`` from the live state, added to Skein's web UI as a proxied page, so it
is reached through the ResourceManager proxy from the application's tracking URL."""
from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tfhadoop.trainer import protocol

SAMPLE_EVERY_S = 3


class Sampler:
    """Keeps a progress sample whenever progress changed (at most every ``SAMPLE_EVERY_S``)."""

    def __init__(self, app, job_dir: str, app_id: str | None):
        self.app, self.app_id, self.samples, self.last = app, app_id, [], None
        self.url = protocol.job_file(job_dir, protocol.PROGRESS_FILE)
        self.at = 0.0

    def sample(self, workers_alive: int) -> None:
        if time.monotonic() - self.at < SAMPLE_EVERY_S:
            return
        raw = self.app.kv.get(protocol.KV_PROGRESS)
        if raw is None or raw == self.last:
            return
        self.at, self.last = time.monotonic(), raw
        s = {**json.loads(raw.decode()), "workers_alive": workers_alive, "app": self.app_id,
             "resources": self.resources()}
        self.samples.append(s)
        try:
            from tfhadoop.connectors import hdfs

            hdfs.append_bytes(self.url, (json.dumps(s) + "\n").encode())
        except Exception as exc:  # noqa: BLE001 - the live page still has the samples
            print(f"cannot append to {self.url}: {exc}", flush=True)


    def resources(self) -> dict:
        """Each container's latest ``res/<role>/<slot>`` report, keyed ``<role>/<slot>``."""
        try:
            found = self.app.kv.get_prefix(protocol.KV_RESOURCES)
        except Exception:  # noqa: BLE001 - a sample without them
            return {}
        out = {}
        for key, raw in found.items():
            try:
                out[key[len(protocol.KV_RESOURCES):]] = json.loads(raw.decode())
            except ValueError:
                continue
        return out


def live_state(master) -> dict:
    """What the page shows, from the master's own view of the job."""
    app = master.app
    # the master's settings: a JobSettings, or the dict the masters read until they switch (issue 28)
    job = master.job if isinstance(master.job, dict) else dataclasses.asdict(master.job)
    raw, board = app.kv.get(protocol.KV_PROGRESS), app.kv.get(protocol.KV_TENSORBOARD)
    containers = []
    try:
        for c in app.get_containers():  # every service: naming one the spec lacks fails the call
            containers.append({"service": c.service_name, "id": c.id, "yarn": c.yarn_container_id,
                               "host": c.yarn_node_http_address, "state": str(c.state)})
    except Exception:  # noqa: BLE001 - shown without containers
        pass
    return {"app": getattr(app, "id", ""), "name": job["name"], "state": "RUNNING", "job": job,
            "job_dir": job["checkpoint_dir"], "events": list(master.events.events),
            "progress": json.loads(raw.decode()) if raw else None, "containers": containers,
            "samples": list(master.sampler.samples), "tensorboard": board.decode() if board else None}


def serve(master) -> str | None:
    """Start the page server in a thread and add it to Skein's web UI; returns its address
    through the proxy (None when the cluster's Skein UI is not available)."""
    from tfhadoop.trainer.report import render

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            try:
                body = render(live_state(master), live=True).encode()
                self.send_response(200)
            except Exception as exc:  # noqa: BLE001 - the page says what went wrong
                body = f"job page error: {type(exc).__name__}: {exc}".encode()
                self.send_response(500)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("0.0.0.0", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True, name="job-page").start()
    target = f"http://{socket.getfqdn()}:{server.server_address[1]}/"
    try:
        page = master.app.ui.add_page(protocol.PAGE_ROUTE, target, link_name="Training job")
        address = page.address
    except Exception as exc:  # noqa: BLE001 - training does not depend on the page
        print(f"job page not added to the web UI: {exc}", flush=True)
        return None
    master.app.kv[protocol.KV_PAGE] = address.encode()
    print(f"job page {address} (serving {target})", flush=True)
    return address
