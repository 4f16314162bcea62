"""The embedded cluster's health for `tfhadoop cluster status`: the NameNode's and the
ResourceManager's own web services (JMX, REST), queried live; an unreachable daemon is a state
in the answer, not an error."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

from tfhadoop.hadoop import HadoopConf


def _http_json(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return json.loads(resp.read().decode())


def cluster_health(conf: HadoopConf) -> dict:
    """NameNode and ResourceManager health as their own web services report it."""
    out: dict = {}
    try:
        beans = _http_json(conf.webhdfs_url + "/jmx?qry=Hadoop:service=NameNode,name=FSNamesystemState")["beans"]
        nn = beans[0] if beans else {}
        out["namenode"] = {"state": nn.get("FSState"), "live_datanodes": nn.get("NumLiveDataNodes"),
                           "capacity_bytes": nn.get("CapacityTotal"), "used_bytes": nn.get("CapacityUsed")}
    except (urllib.error.URLError, OSError, ValueError) as exc:
        out["namenode"] = {"state": "UNREACHABLE", "error": str(exc)}
    rm = conf.rm_webapp_url
    try:
        cinfo = _http_json(rm + "/ws/v1/cluster/info")["clusterInfo"]
        out["resourcemanager"] = {"state": cinfo.get("state"), "ha_state": cinfo.get("haState"),
                                  "version": cinfo.get("resourceManagerVersion")}
        nodes = (_http_json(rm + "/ws/v1/cluster/nodes").get("nodes") or {}).get("node", [])
        out["nodes"] = [{"id": n["id"], "state": n["state"], **_resources(n.get("availableResource") or {}, "available_"),
                         **_resources(n.get("usedResource") or {}, "used_")} for n in nodes]
        sched = _http_json(rm + "/ws/v1/cluster/scheduler")["scheduler"]["schedulerInfo"]
        out["queues"] = [{"name": q["queueName"], "capacity": q.get("capacity"),
                          "max_capacity": q.get("maxCapacity"), "used_capacity": q.get("usedCapacity"),
                          "running_apps": q.get("numApplications")}
                         for q in (sched.get("queues") or {}).get("queue", [])]
    except (urllib.error.URLError, OSError, ValueError, KeyError) as exc:
        out["resourcemanager"] = {"state": "UNREACHABLE", "error": str(exc)}
    return out


def _resources(res: dict, prefix: str) -> dict:
    out = {f"{prefix}memory_mb": res.get("memory", 0), f"{prefix}vcores": res.get("vCores", 0)}
    for ri in (res.get("resourceInformations") or {}).get("resourceInformation", []):
        if ri.get("name") == "yarn.io/gpu":
            out[f"{prefix}gpus"] = ri.get("value")
    return out

