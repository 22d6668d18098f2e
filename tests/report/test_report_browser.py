"""``report.html`` in a real browser: headless Chromium renders the page of the default run and of a
comparison; every section is in the DOM and the screenshot is not blank.

Installs Debian's ``chromium`` with apt-get when it is missing (root), as the
Slurm test installs Slurm. Skipped when it cannot be installed, or with
``PWORMHOLE_SKIP_BROWSER=1``; ``PWORMHOLE_REQUIRE_BROWSER=1`` (set by
``.ci/run``) turns those skips into failures. The screenshots are written as
``report.png`` beside each page, for a person to look at.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest
from helpers import ROOT, apt_install

from pwormhole.report.page import SECTIONS

INCAST = ROOT / "tests" / "data" / "incast"
PATH = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin", "/sbin"])
BROWSERS = ("chromium", "chromium-browser")

pytestmark = [pytest.mark.slow]


def _unavailable(reason: str):
    """Skip, or fail when PWORMHOLE_REQUIRE_BROWSER=1 (CI must not skip this silently)."""
    if os.environ.get("PWORMHOLE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"a browser is required (PWORMHOLE_REQUIRE_BROWSER=1) but: {reason}")
    pytest.skip(reason)


def _browser() -> str | None:
    return next((p for p in (shutil.which(b, path=PATH) for b in BROWSERS) if p), None)


@pytest.fixture(scope="module")
def chromium() -> str:
    if os.environ.get("PWORMHOLE_SKIP_BROWSER") == "1":
        pytest.skip("PWORMHOLE_SKIP_BROWSER=1")
    found = _browser()
    if found:
        return found
    if not shutil.which("apt-get", path=PATH):
        _unavailable("chromium is not installed and there is no apt-get")
    if os.geteuid() != 0:
        _unavailable("chromium is not installed and installing it needs root")
    why = apt_install(["chromium"], PATH)
    if why:
        _unavailable(why)
    found = _browser()
    if not found:
        _unavailable("installed chromium but no chromium command on PATH")
    return found


def _headless(browser: str, *args: str) -> subprocess.CompletedProcess:
    # root cannot use the sandbox; no GPU, no first-run UI, a private profile per call
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
           "--disable-dev-shm-usage", "--user-data-dir=" + os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                                          f"pw-chromium-{os.getpid()}"), *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=180)


class _Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.sections: list[str] = []
        self.svgs = 0

    def handle_starttag(self, tag, attrs):
        if tag == "section":
            self.sections.append(dict(attrs).get("id"))
        elif tag == "svg":
            self.svgs += 1


def _check_page(browser: str, page: Path, svgs: int) -> np.ndarray:
    """Render ``page``: every section in the DOM, ``svgs`` figures; the screenshot
    (written as report.png beside the page) is not blank. Returns the screenshot's pixels."""
    url = page.resolve().as_uri()
    r = _headless(browser, "--dump-dom", url)
    assert r.returncode == 0, r.stderr[-2000:]
    dom = _Dom()
    dom.feed(r.stdout)
    assert dom.sections == [sid for sid, _ in SECTIONS], dom.sections
    assert dom.svgs == svgs
    png = page.parent / "report.png"
    r = _headless(browser, "--window-size=1280,2400", f"--screenshot={png}", url)
    assert r.returncode == 0 and png.is_file(), r.stderr[-2000:]
    img = mpimg.imread(png)
    assert img.shape[0] == 2400 and img.shape[1] == 1280
    colours = np.unique((img[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    assert len(colours) > 50  # text, figures, the header: far from one colour
    not_white = np.any(img[..., :3] < 0.95, axis=-1).mean()
    assert 0.02 < not_white < 0.9
    return img


def test_default_run_and_compare_reports_render_in_chromium(chromium, tmp_path):
    out = tmp_path / "default"
    r = subprocess.run([sys.executable, "-m", "pwormhole", "run", "--out", str(out), "--no-progress"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    img = _check_page(chromium, out / "report.html", svgs=6)  # NIC and NVLink: slowdown, FCT CDF; timeline, per GPU
    header = img[5:60, 5:400, :3]  # the dark header band at the top
    assert header.mean() < 0.4
    cmp_out = tmp_path / "compare"
    r = subprocess.run([sys.executable, "-m", "pwormhole", "compare", "--topology", str(INCAST / "star9_topology.txt"),
                        "--flows", str(INCAST / "incast8_flows.txt"), "--config", str(INCAST / "pfc_config.txt"),
                        "--out", str(cmp_out), "--report", "--no-progress"],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert r.returncode == 0, r.stderr
    _check_page(chromium, cmp_out / "report.html", svgs=4)  # error CDF, slowdown, FCT CDF, PFC pauses
