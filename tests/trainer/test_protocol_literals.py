"""protocol.py is the one source of the trainer's protocol facts (issue 28 §4): this test reads the
package sources and fails on a key-value key, job-dir or work-dir file name, exit code,
environment variable or event kind written as a literal anywhere else, and on an
``os.environ.setdefault`` run at import time (importing a name must not change the environment).

Not literals of the protocol: docstrings and other prose, and the values of the masters' ``State``
and ``Event`` enums (rows of their state tables, not lines of the event log, though a few share a
name), and a subscript's key as an event kind (``job["gang_timeout"]`` is a setting). TensorFlow's environment (``protocol.TF_ENVIRONMENT``) is the trainer's: other packages
(Spark's predict) may set their own. Each exception is named below with its reason; there are no
others.
"""
from __future__ import annotations

import ast
from pathlib import Path

from tfhadoop.trainer import protocol

ROOT = Path(__file__).resolve().parents[2]
P = protocol
KV_PREFIXES = (P.KV_ADDR, P.KV_UP, P.KV_HEARTBEAT, P.KV_RING_EXIT)
FILES = {P.JOB_FILE, P.EVENTS_FILE, P.METRICS_FILE, P.RESULT_FILE, P.PROGRESS_FILE, P.LATEST_STATE, P.CLUSTER_FILE,
         P.WORKER_SLOTS_FILE, P.ERROR_FILE, P.RESCALE_FILE, P.AVOID_WORKERS_FILE, P.CHECKPOINT_SOON_FILE,
         P.PREEMPTION_WARNINGS_FILE, P.AM_AGENT_JAR}
ENV = {P.ENV_ROLE, P.ENV_SLOT, P.ENV_PORT, P.ENV_GPUS, P.ENV_THREADS, P.ENV_PARENT_PID, P.ENV_CONTAINER_ID,
       P.ENV_SKEIN_CONTAINER_ID, P.ENV_JAVA_TOOL_OPTIONS}
TRAINER = "trainer/python/tfhadoop/trainer/"
TF_ENV = set(P.TF_ENVIRONMENT)  # checked in TRAINER only
EXIT_CODES = {P.RESCALE_EXIT}
EVENTS = set(P.EVENT_KINDS)
# (file relative to the repository, literal) -> why it may stay
ALLOWED = {
    ("tfhadoop/hadoop.py", "cluster.json"): "the embedded cluster's state file, not the job's CLUSTER_FILE",
    ("yarn/python/tfhadoop/yarn/embedded.py", "cluster.json"): "the embedded cluster's state file",
    ("yarn/python/tfhadoop/yarn/logs.py", "cluster.json"): "the embedded cluster's state file",
}
# whole files -> why: none may stay past the merge that names them
ALLOWED_FILES: dict[str, str] = {}


def sources() -> list[Path]:
    files = sorted((ROOT / "tfhadoop").rglob("*.py")) + sorted(ROOT.glob("*/python/tfhadoop/**/*.py"))
    return [f for f in files if f.name != "protocol.py" or f.parent.name != "trainer"]


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings or bare string statements (prose)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def enum_values(tree: ast.AST) -> set[int]:
    """The ids of the constants assigned in the body of a class derived from an ``enum.Enum``."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any("Enum" in ast.unparse(b) for b in node.bases):
            out |= {id(c) for stmt in node.body if isinstance(stmt, ast.Assign) for c in ast.walk(stmt.value)}
    return out


def findings(path: Path, trainer: bool = True) -> list[tuple[int, str, str]]:
    """(line, literal, what it is) for each protocol fact written as a literal in ``path``
    (``trainer``: the file is the trainer's, where TensorFlow's environment is protocol too)."""
    tree = ast.parse(path.read_text(), str(path))
    prose, out = docstrings(tree) | enum_values(tree), []
    # job["gang_timeout"] is a setting that shares the event's name: subscripts are not event kinds
    keys = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in prose:
            continue
        value = node.value
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and value in EXIT_CODES:
            out.append((node.lineno, str(value), "exit code"))
        if not isinstance(value, str):
            continue
        if value.startswith(KV_PREFIXES):
            out.append((node.lineno, value, "key-value key"))
        if value in FILES:
            out.append((node.lineno, value, "job-dir or work-dir file"))
        if value in ENV or (trainer and value in TF_ENV):
            out.append((node.lineno, value, "environment variable"))
        if value in EVENTS and id(node) not in keys:
            out.append((node.lineno, value, "event kind"))
    for node in ast.walk(tree):  # any literal key of Skein's key-value store: app.kv["..."], kv.get("...")
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "kv":
            key = node.slice
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args and \
                node.func.attr in ("get", "get_prefix", "discard", "wait", "pop") and \
                isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "kv":
            key = node.args[0]
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and not key.value.startswith(KV_PREFIXES):
            out.append((key.lineno, key.value, "key-value key"))
    for stmt in tree.body:  # module level: what runs at import
        for node in ast.walk(stmt):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                break
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "setdefault" \
                    and ast.unparse(node.func.value) == "os.environ":
                out.append((node.lineno, ast.unparse(node), "environment changed at import"))
    return out


def test_protocol_facts_are_named_only_in_protocol_py():
    found = []
    for path in sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel in ALLOWED_FILES:
            continue
        found += [f"{rel}:{line}: {what} {literal!r}" for line, literal, what in findings(path, rel.startswith(TRAINER))
                  if (rel, literal) not in ALLOWED]
    assert not found, "use the names in trainer/python/tfhadoop/trainer/protocol.py:\n" + "\n".join(found)


def test_every_exception_is_still_needed():
    present = {(path.relative_to(ROOT).as_posix(), literal) for path in sources() for _, literal, _ in findings(path)}
    assert set(ALLOWED) <= present, set(ALLOWED) - present
    files = {path.relative_to(ROOT).as_posix() for path in sources() if findings(path)}
    assert set(ALLOWED_FILES) <= files, f"no literal left in {set(ALLOWED_FILES) - files}: drop it from ALLOWED_FILES"


def test_the_scan_sees_each_kind_of_literal(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('"""prose: up/worker/0 and job.json"""\nimport enum, os\nos.environ.setdefault("TFH_SLOT", "0")\n'
                      'class E(str, enum.Enum):\n    X = "container_lost"\n'
                      'def f(role, app):\n    return f"up/{role}/0", "error.json", 75, "hang_detected", app.kv["ring"]\n')
    kinds = sorted(what for _, _, what in findings(sample))
    assert kinds == ["environment changed at import", "environment variable", "event kind", "exit code",
                     "job-dir or work-dir file", "key-value key", "key-value key"], kinds
