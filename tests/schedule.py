"""How `make test` (TEST_WORKERS=2, its default) spreads the suite over two pytest-xdist workers (`-n 2`).

The suite mostly waits (containers starting, heartbeats, injected faults), so two workers side by
side keep the 2 cores busy. Each worker is its own pytest session, with its own embedded cluster
and Spark session (the session fixtures). Work is handed out a group at a time, so the tests that
share a module's (or the secure package's) fixtures stay in one worker and start them once.

Groups start longest first (a list scheduler's best order), by the seconds each took in a recent
run (``durations.json`` beside this file, refreshed with `make test-durations`). Those seconds
only order the work: a group missing from the file runs in its place, after the known ones."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

DURATIONS = Path(__file__).with_name("durations.json")
# Packages whose modules share a package-scoped fixture: one group, so one worker starts it.
PACKAGE_GROUPS = ("tests/yarn/secure/",)


def group_of(nodeid: str) -> str:
    """The unit of work a test belongs to: its package for PACKAGE_GROUPS, else its module."""
    path = nodeid.split("::", 1)[0]
    return next((p.rstrip("/") for p in PACKAGE_GROUPS if path.startswith(p)), path)


def longest_groups_first(items: list) -> None:
    """Reorders ``items`` in place: whole groups, the longest first; within one, as collected."""
    seconds = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    first_seen: dict[str, int] = {}
    for i, item in enumerate(items):
        first_seen.setdefault(group_of(item.nodeid), i)
    items.sort(key=lambda item: (-seconds.get(group_of(item.nodeid), 0.0), first_seen[group_of(item.nodeid)]))


def make_scheduler(config, log):
    """xdist's scope scheduler with our groups, handed out in collection order (not by test count)."""
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    config.option.loadscopereorder = False
    return ByGroup(config, log)


def write_durations(junit_xml: Path) -> dict[str, float]:
    """Seconds per group from a run's JUnit XML (pytest's --junitxml) into DURATIONS."""
    seconds: dict[str, float] = {}
    for case in ET.parse(junit_xml).iter("testcase"):
        parts = case.get("classname", "").split(".")
        if parts and parts[-1][:1].isupper():  # tests.x.test_y.TestClass
            parts = parts[:-1]
        group = group_of("/".join(parts) + ".py")
        seconds[group] = seconds.get(group, 0.0) + float(case.get("time", 0))
    ordered = {g: round(s, 1) for g, s in sorted(seconds.items(), key=lambda kv: -kv[1])}
    DURATIONS.write_text(json.dumps(ordered, indent=1) + "\n")
    return ordered


if __name__ == "__main__":
    import sys

    found = write_durations(Path(sys.argv[1] if len(sys.argv) > 1 else "build/test-results/pytest.xml"))
    print(f"{DURATIONS}: {len(found)} groups, {sum(found.values()):.0f} s in all")
