"""`tfhadoop cluster up | down | status | env`: the embedded Hadoop cluster from the command line."""
from __future__ import annotations

import json
import shutil
import sys

from tfhadoop.yarn.embedded import ClusterOptions, EmbeddedCluster


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "cluster", help="run the embedded single-host Hadoop cluster (HDFS + YARN)",
        description="A real single-host Hadoop cluster (NameNode, DataNode, ResourceManager with the "
                    "CapacityScheduler and preemption, NodeManagers with yarn.io/gpu) in one JVM. "
                    "It is the default cluster when HADOOP_CONF_DIR is not set.")
    sub = p.add_subparsers(dest="cluster_command", metavar="ACTION", required=True)

    def with_state(sp):
        sp.add_argument("--state-dir", help="where conf, data and logs live "
                                            "(default: $TFHADOOP_STATE_DIR or ~/.tfhadoop/cluster)")
        sp.add_argument("--secure", action="store_true",
                        help="the Kerberized cluster (KDC, Kerberos HDFS and YARN); its default state dir "
                             "is the ordinary one's with -secure appended")
        return sp

    up = with_state(sub.add_parser("up", help="start the cluster (no-op if it is running)"))
    up.add_argument("--node-managers", type=int, default=2, help="number of NodeManagers (default 2)")
    up.add_argument("--gpus-per-node", type=int, default=2, help="yarn.io/gpu each NodeManager advertises (default 2)")
    up.add_argument("--nm-memory-mb", type=int, default=8192, help="memory each NodeManager offers (default 8192)")
    up.add_argument("--nm-vcores", type=int, default=8, help="vcores each NodeManager offers (default 8)")
    up.add_argument("--namenode-port", type=int, default=0, help="fixed NameNode RPC port (default: a free one)")
    up.add_argument("--format", action="store_true", help="wipe existing HDFS data (and the Hive metastore that points at it) before starting")
    up.add_argument("--timeout", type=float, default=180, help="seconds to wait for the cluster (default 180)")
    up.add_argument("--permissions", action="store_true",
                    help="check HDFS permissions as a production cluster does (without Kerberos: users by "
                         "HADOOP_USER_NAME; the HDFS superuser is the user who started the cluster)")
    up.add_argument("--token-renew-seconds", type=int, default=120,
                    help="with --secure: delegation tokens expire unless renewed this often (default 120)")
    up.set_defaults(func=_up)
    with_state(sub.add_parser("down", help="stop the cluster this state dir started")).set_defaults(func=_down)
    st = with_state(sub.add_parser("status", help="NameNode/ResourceManager health, nodes, queues"))
    st.add_argument("--json", action="store_true", help="print JSON")
    st.set_defaults(func=_status)
    with_state(sub.add_parser("env", help="print the exports that point clients at the cluster")).set_defaults(func=_env)


def _cluster(args) -> EmbeddedCluster:
    if args.state_dir or not args.secure:
        return EmbeddedCluster(args.state_dir)
    from tfhadoop.yarn.secure import secure_state_dir

    return EmbeddedCluster(secure_state_dir())


def _up(args) -> int:
    cluster = _cluster(args)
    opts = ClusterOptions(node_managers=args.node_managers, gpus_per_node=args.gpus_per_node,
                          nm_memory_mb=args.nm_memory_mb, nm_vcores=args.nm_vcores,
                          namenode_port=args.namenode_port, secure=args.secure, permissions=args.permissions,
                          token_renew_seconds=args.token_renew_seconds)
    info = cluster.up(opts, timeout=args.timeout, format_hdfs=args.format)
    if "ready_seconds" in info:
        print(f"embedded cluster up in {info['ready_seconds']:.1f} s (daemons {info['start_seconds']:.1f} s), "
              f"pid {info['pid']}, state dir {cluster.state_dir}")
    else:
        print(f"embedded cluster already running, pid {info['pid']}, state dir {cluster.state_dir}")
    print(f"  HDFS:          {info['fs_default']}  (WebHDFS http://{info['namenode_http']})")
    print(f"  YARN RM UI:    http://{info['rm_webapp']}")
    if info.get("secure"):
        from tfhadoop.yarn import secure

        print("\n".join(secure.describe(info)))
    print("To use it from a shell:")
    for line in cluster.env_lines():
        print("  " + line)
    return 0


def _down(args) -> int:
    cluster = _cluster(args)
    if cluster.down():
        print(f"embedded cluster in {cluster.state_dir} stopped")
    else:
        print(f"no embedded cluster is running in {cluster.state_dir}; nothing to stop")
    return 0


def _status(args) -> int:
    cluster = _cluster(args)
    st = cluster.status()
    if args.json:
        print(json.dumps(st, indent=2))
        return 0 if st["running"] else 3
    if not st["running"]:
        print(f"embedded cluster: not running (state dir {st['state_dir']})")
        return 3
    print(f"embedded cluster: running, pid {st['pid']}, state dir {st['state_dir']}")
    nn, rm = st["namenode"], st["resourcemanager"]
    print(f"NameNode        {nn.get('state')}  live datanodes {nn.get('live_datanodes')}  {st['fs_default']}")
    print(f"ResourceManager {rm.get('state')} ({rm.get('ha_state')}), Hadoop {rm.get('version')}  {st['rm_web_ui']}")
    for n in st.get("nodes", []):
        print(f"  node {n['id']:<22} {n['state']:<8} memory {n['used_memory_mb']}/{n['used_memory_mb'] + n['available_memory_mb']} MB"
              f"  vcores {n['used_vcores']}/{n['used_vcores'] + n['available_vcores']}"
              f"  gpus {n.get('used_gpus', 0)}/{n.get('used_gpus', 0) + n.get('available_gpus', 0)}")
    for q in st.get("queues", []):
        print(f"  queue {q['name']:<8} capacity {q['capacity']:.0f}% (max {q['max_capacity']:.0f}%)"
              f"  used {q['used_capacity']:.1f}%  apps {q['running_apps']}")
    healthy = nn.get("state") == "Operational" and rm.get("state") == "STARTED"
    return 0 if healthy else 1


def _env(args) -> int:
    cluster = _cluster(args)
    if not cluster.is_running():
        print(f"# the embedded cluster in {cluster.state_dir} is not running: `tfhadoop cluster up` first")
        return 3
    print("\n".join(cluster.env_lines()))
    if args.secure and shutil.which("kinit") is None:  # on stderr: `eval` runs stdout
        print("tfhadoop cluster env: kinit is not on PATH: `tfhadoop cluster up --secure` installs it "
              "(Debian's krb5-user)", file=sys.stderr)
    return 0
