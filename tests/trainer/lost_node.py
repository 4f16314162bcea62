"""A job whose roles all run on an extra NodeManager (127.0.0.2) that a test can kill: a machine
losing power. One placement trick for both strategies' lost-node tests, so they cannot drift."""
from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.trainer import jobs
from tests.trainer.preemption import hold_containers

EXTRA_HOST = "127.0.0.2"


@dataclass
class JobOnExtraNode:
    client: Any  # skein.Client
    run: Any
    proc: subprocess.Popen[str]
    app_id: str
    nm: Any  # the extra NodeManager: ``nm.kill()`` kills it with its containers
    filler: Any

    def release_filler(self) -> None:
        """Give the in-process nodes' room back, so that the replacements land there."""
        if self.filler is not None:
            self.filler.shutdown()
            self.filler = None


@contextlib.contextmanager
def job_on_an_extra_node(hadoop_cluster, start: Callable[[], tuple[Any, subprocess.Popen[str]]],
                         memory_mb: int, vcores: int) -> Iterator[JobOnExtraNode]:
    """Start the job (``start()`` -> ``(run, proc)``, in the background, its roles 2 GB each) so
    that every role but its master lands on a NodeManager started at ``EXTRA_HOST``: a filler of
    2 x 6 GB (+ its 256 MB master) leaves 2 GB on one in-process node, room for the job's 2 GB
    master only; the roles then fit nowhere but on the extra node, started once that master runs.
    On leaving: the job's process, the filler and the extra node are stopped, whatever happened."""
    from tfhadoop.yarn.client import skein_client

    if hadoop_cluster.embedded is None:
        pytest.skip("needs the embedded cluster (an extra NodeManager is started and killed)")
    jobs.wait(lambda: jobs.cluster_idle(hadoop_cluster.conf), 120, "the cluster's containers of earlier tests to end")
    nm = filler = proc = None
    try:
        with skein_client() as client:
            filler = held = hold_containers(client, "filler", queue="default", instances=2, memory=6144)
            jobs.wait(lambda: len(held.get_containers(states=["RUNNING"])) == 2, 120, "the filler's containers")
            run, proc = start()
            app_id = jobs.app_id(proc)
            jobs.wait(lambda: str(client.application_report(app_id).state) == "RUNNING" or proc.poll() is not None,
                      180, "the job's master")
            nm = hadoop_cluster.embedded.start_node_manager(EXTRA_HOST, memory_mb=memory_mb, vcores=vcores)
            job = JobOnExtraNode(client, run, proc, app_id, nm, filler)
            try:
                yield job
            finally:
                filler = job.filler
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
        if filler is not None:
            filler.shutdown()
        if nm is not None:
            nm.kill()
