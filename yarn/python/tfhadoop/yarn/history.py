"""Exit status and diagnostics of finished YARN containers, from YARN's own timeline service.

Skein reports a lost container only as FAILED with the diagnostics text; the exit status
(-102 preempted, -100 lost node or finished app, ...) lives in the ResourceManager's
container-finished events, which the timeline service (ATS v1) keeps after the container is gone.
"""
from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from tfhadoop.errors import CommandError
from tfhadoop.hadoop import HadoopConf

PREEMPTED = -102  # ContainerExitStatus.PREEMPTED
ABORTED = -100  # ContainerExitStatus.ABORTED: lost node, released, or the application finished
KILLED_BY_APPMASTER = -105


@dataclass(frozen=True)
class ContainerExit:
    container_id: str
    exit_status: int
    state: str
    diagnostics: str
    finished_ms: int


def _timeline_url(conf: HadoopConf) -> str:
    addr = conf.get("yarn.timeline-service.webapp.address")
    if not addr or conf.get("yarn.timeline-service.enabled", "false") != "true":
        raise CommandError(f"the YARN timeline service is not enabled in {conf.conf_dir}/yarn-site.xml "
                           "(yarn.timeline-service.enabled); container exit statuses are not recorded")
    return f"http://{addr}"


def app_attempt_ids(conf: HadoopConf, app_id: str) -> list[str]:
    """Attempt ids of an application, from the ResourceManager."""
    url = f"{conf.rm_webapp_url}/ws/v1/cluster/apps/{app_id}/appattempts"
    with urllib.request.urlopen(url, timeout=10) as resp:
        attempts = json.load(resp)["appAttempts"]["appAttempt"]
    return [a["appAttemptId"] for a in attempts]


def container_exits(conf: HadoopConf, app_id: str) -> list[ContainerExit]:
    """Every finished container of ``app_id`` (all attempts), oldest first."""
    base = _timeline_url(conf)
    out: list[ContainerExit] = []
    for attempt in app_attempt_ids(conf, app_id):
        query = urllib.parse.urlencode({"primaryFilter": f"YARN_CONTAINER_PARENT:{attempt}"})
        try:
            with urllib.request.urlopen(f"{base}/ws/v1/timeline/YARN_CONTAINER?{query}", timeout=10) as resp:
                entities = json.load(resp).get("entities", [])
        except urllib.error.URLError as exc:
            raise CommandError(f"cannot reach the YARN timeline service at {base}: {exc}") from exc
        for entity in entities:
            for event in entity.get("events", []):
                if event.get("eventType") != "YARN_CONTAINER_FINISHED":
                    continue
                info = event.get("eventInfo", {})
                out.append(ContainerExit(entity["entityId"], int(info.get("YARN_CONTAINER_EXIT_STATUS", 0)),
                                         str(info.get("YARN_CONTAINER_STATE", "")),
                                         str(info.get("YARN_CONTAINER_DIAGNOSTICS_INFO", "")),
                                         int(event.get("timestamp", 0))))
    return sorted(out, key=lambda e: (e.finished_ms, e.container_id))
