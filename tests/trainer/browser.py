"""The job pages in a real browser (issue 31 §4): headless Chromium loads a page, live through the
ResourceManager's proxy or a file ``tfhadoop status --html`` wrote, and returns its DOM."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def chromium(url: str, tmp_path, name: str) -> str:
    """Load ``url`` in headless Chromium (the Debian package, installed by tools/ensure-chromium if
    missing): returns the DOM and saves a screenshot as ``<tmp_path>/<name>.png``."""
    browser = subprocess.run([str(ROOT / "tools" / "ensure-chromium")], capture_output=True, text=True,
                             timeout=600)
    assert browser.returncode == 0, browser.stderr[-2000:]
    flags = [browser.stdout.strip().splitlines()[-1], "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--window-size=1280,1800"]
    dom = subprocess.run([*flags, f"--user-data-dir={tmp_path / (name + '-profile-dom')}", "--dump-dom", url],
                         capture_output=True, text=True, timeout=120)
    shot = tmp_path / f"{name}.png"
    subprocess.run([*flags, f"--user-data-dir={tmp_path / (name + '-profile-shot')}", f"--screenshot={shot}", url],
                   capture_output=True, text=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000, f"no screenshot of {url}"
    kept = ROOT / "build" / "test-artifacts" / shot.name  # outlives pytest's tmp dirs
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_bytes(shot.read_bytes())
    print(f"screenshot of {url}: {kept}")
    return dom.stdout


def finished_job_page(app_id: str, tmp_path, name: str) -> str:
    """``tfhadoop status APP --html`` of a finished job, loaded in Chromium: its DOM."""
    page = tmp_path / f"{name}.html"
    status = subprocess.run([sys.executable, "-m", "tfhadoop", "status", app_id, "--html", str(page)],
                            capture_output=True, text=True, timeout=120)
    assert status.returncode == 0 and page.exists(), (status.stdout + status.stderr)[-3000:]
    return chromium(f"file://{page}", tmp_path, name)
