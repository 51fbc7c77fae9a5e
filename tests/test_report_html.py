"""The HTML report: structure (html.parser), a golden file, and a real headless browser.

The golden file tests/golden/report-gpu-synthetic.html is the report of the recorded CPU
probe with synthetic GPU samples filled in (below), with the volatile fields (creation
time, tool version) fixed. After an intended change to the page, regenerate it with

    ENVCHECK_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_report_html.py -k golden

and review the diff (or open the file in a browser).

The browser test renders with Debian's chromium (skipped cleanly when it is absent):
`--screenshot` for a PNG of the page as a reader sees it (the page has no script at
all, checked above, so this is also how it reads with JavaScript off; chromium's own
`--blink-settings=scriptEnabled=false` stops headless screenshots, so it is not used), and
`--dump-dom` of a *copy* of the page with one inline script appended, which measures the
layout after load and writes what it found into a `data-layout` attribute of <body>; the
dumped DOM is the serialised page after that script ran, so no DevTools protocol is
needed. The report itself has no script; only the test copy does.
"""

from __future__ import annotations

import copy
import dataclasses
import html
import json
import math
import os
import re
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Optional

import pytest
from typer.testing import CliRunner

from envcheck.cli import app
from envcheck.model import Report
from envcheck.report import html as html_report
from envcheck.report import html_charts as charts
from envcheck.rulebook import builtin_registry
from envcheck.service import diagnose
from envcheck.snapshot import Snapshot

HERE = Path(__file__).parent
RECORDED = HERE / "fixtures" / "probe" / "cpu-torch-serial.json"
GOLDEN = HERE / "golden" / "report-gpu-synthetic.html"
CHARTS = ("chart-gpu-util", "chart-gpu-mem", "chart-pcie", "chart-cpu")


def recorded() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(RECORDED.read_text())
    return data


def with_synthetic_gpu(saved: dict[str, Any]) -> dict[str, Any]:
    """SYNTHETIC: the recorded CPU run's timeline with plausible GPU samples filled in
    (busy during compute, starved at 25-45 % end to end, memory rising, PCIe rx bursts),
    so that the GPU charts have something to draw. Not a measurement."""
    data = copy.deepcopy(saved)
    probe = data["facts"]["probe"]
    probe["device"], probe["device_name"] = "cuda", "SYNTHETIC GPU (test data)"
    probe["sampler"]["gpu_index"], probe["sampler"]["gpu_reason"] = 0, None
    for i, point in enumerate(probe["timeline"]):
        phase = point["phase"]
        wave = math.sin(i / 2.0)
        if phase in ("import", "data", "start"):
            util, mem, rx = 0.0, 300 * 2**20, 1e6
        elif phase == "compute":
            util, mem, rx = 96.0 + 3 * wave, 5.5 * 2**30, 2e7
        elif phase.startswith("input"):
            util, mem, rx = 0.0, 5.5 * 2**30, 1e6
        else:  # end_to_end: the model waits for its input
            util, mem, rx = 35.0 + 10 * wave, 5.8 * 2**30, 1.2e9 + 4e8 * wave
        point.update(
            gpu_util=round(util, 1),
            gpu_mem_bytes=int(mem),
            sm_clock_mhz=1980 if util > 0 else 210,
            pcie_rx_bps=round(rx),
            pcie_tx_bps=round(rx / 20),
        )
    data["probe"] = probe
    return data


def report_of(data: dict[str, Any]) -> Report:
    report = diagnose(Snapshot.from_dict(data), builtin_registry())
    # the volatile fields, fixed so that the page is the same on every run
    return dataclasses.replace(report, created="2026-01-01T00:00:00+00:00", tool_version="0.0.0")


class Page(HTMLParser):
    """Just enough of the DOM for the checks: tags with attributes, and text by id."""

    def __init__(self, source: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, Optional[str]]]] = []
        self.stack: list[str] = []
        self.text_of: dict[str, list[str]] = {}
        self.open_ids: list[tuple[int, str]] = []
        self.feed(source)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        found = dict(attrs)
        self.tags.append((tag, found))
        if tag in ("br", "meta", "img", "input", "link", "hr", "wbr"):
            return
        self.stack.append(tag)
        if found.get("id"):
            self.open_ids.append((len(self.stack), str(found["id"])))
            self.text_of[str(found["id"])] = []

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, Optional[str]]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag in self.stack:
            while self.stack and self.stack.pop() != tag:
                pass
        self.open_ids = [(depth, i) for depth, i in self.open_ids if depth <= len(self.stack)]

    def handle_data(self, data: str) -> None:
        for _, ident in self.open_ids:
            self.text_of[ident].append(data)

    def text(self, ident: str) -> str:
        return " ".join("".join(self.text_of.get(ident, [])).split())

    def all(self, tag: str, **attrs: str) -> list[dict[str, Optional[str]]]:
        return [
            a
            for t, a in self.tags
            if t == tag and all(v in (a.get(k) or "").split() for k, v in attrs.items())
        ]


@pytest.fixture(scope="module")
def gpu_page() -> str:
    return html_report.render(report_of(with_synthetic_gpu(recorded())))


@pytest.fixture(scope="module")
def cpu_page() -> str:
    return html_report.render(report_of(recorded()))


def test_the_fix_list_has_every_ranked_finding(cpu_page: str) -> None:
    report = report_of(recorded())
    page = Page(cpu_page)
    items = page.all("li", **{"class": "fix"})
    active = [r for r in report.findings if r.finding.acknowledged is None]
    assert active and len(items) == len(active)
    for ranked in active:
        block = page.text(f"fix-{ranked.rank}")
        f = ranked.finding
        assert block.startswith(f"{ranked.rank}.")
        assert f.id in block and f.severity.value in block
        assert " ".join(f.fix.split()) in block
        assert f"envcheck rules show {f.id}" in block
    first = page.text("fix-1")
    assert "evidence" in first and "tensorflow.org" in first  # the evidence table
    codes = page.all("code", **{"class": "fix"})
    assert len(codes) == len(active)


def test_the_environment_shows_every_area_with_its_mark(cpu_page: str) -> None:
    page = Page(cpu_page)
    areas = [a for a in page.all("section") if (a.get("id") or "").startswith("area-")]
    assert {"area-platform", "area-gpu", "area-packages", "area-probe"} <= {a["id"] for a in areas}
    for area in areas:
        assert re.search(r"\barea-(pass|warn|fail)\b", area.get("class") or "")
    assert "no NVIDIA driver" in page.text("area-gpu")  # text.py's description, reused
    assert "fix 1" in page.text("area-probe")  # the failing check links to its fix


def test_the_probe_section_has_rates_verdict_stall_sweep_and_four_charts(gpu_page: str) -> None:
    page = Page(gpu_page)
    probe = page.text("probe")
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))["probe"]
    rates = recorded["rates"]
    shown = [html_report._fmt_rate(rates[k]) for k in ("compute", "end_to_end")]
    for needed in ("compute ceiling", "input pipeline", "end to end", *shown):
        assert needed in probe
    assert recorded["verdict"].replace("-", " ") in probe
    assert "fetch (reading)" in probe and "prep (decode/augment)" in probe
    assert "Worker sweep" in probe and "recommended" in probe
    svgs = {a.get("id") for a in page.all("svg", **{"class": "chart"})}
    assert set(CHARTS) <= svgs
    assert page.all("polyline")  # lines drawn from the synthetic GPU samples
    assert "no GPU samples" not in gpu_page
    for phase in ("compute", "end to end"):  # phases labelled on the time axis
        assert f">{phase}</text>" in gpu_page
    assert page.all("g", **{"class": "starved"})  # the input-bound periods are marked


def test_a_cpu_only_run_says_no_gpu_samples_instead_of_drawing_nothing(cpu_page: str) -> None:
    page = Page(cpu_page)
    assert set(CHARTS) <= {a.get("id") for a in page.all("svg", **{"class": "chart"})}
    for chart in ("chart-gpu-util", "chart-gpu-mem", "chart-pcie"):
        assert "no GPU samples" in page.text(chart)
    assert "no GPU samples" not in page.text("chart-cpu")
    assert len(page.all("g", **{"class": "cores"})) == 1


def test_self_contained_no_script_no_external_resources(gpu_page: str, cpu_page: str) -> None:
    for source in (gpu_page, cpu_page):
        page = Page(source)
        assert not page.all("script") and "<script" not in source.lower()
        assert not page.all("link") and not page.all("img") and not page.all("iframe")
        for tag, attrs in page.tags:
            for name in ("src", "href", "xlink:href", "action", "data"):
                value = (attrs.get(name) or "").strip().lower()
                if not value:
                    continue
                external = value.startswith(("http:", "https:", "//"))
                if external:  # only documentation links a reader clicks are allowed
                    assert tag == "a" and name == "href", (tag, name, value)
                else:
                    assert value.startswith("#"), (tag, name, value)
        assert "@import" not in source and "url(" not in source


def test_a_long_probe_on_a_big_machine_stays_small() -> None:
    """SYNTHETIC: 5 minutes at 0.1 s on 64 cores; the charts average down to a bounded
    number of points and heat-strip columns instead of drawing every sample."""
    data = with_synthetic_gpu(recorded())
    probe = data["facts"]["probe"]
    template = probe["timeline"][-1]
    probe["timeline"] = [
        {
            **template,
            "t": round(i * 0.1, 1),
            "phase": "sweep" if i > 1500 else "end_to_end",
            "gpu_util": float(i % 100),
            "cpu_util": [float((i + c) % 100) for c in range(64)],
        }
        for i in range(3000)
    ]
    source = html_report.render(report_of(data))
    assert len(source) < 2_500_000
    page = Page(source)
    for line in page.all("polyline"):
        assert len((line.get("points") or "").split()) <= charts.MAX_POINTS
    cells = source.split('<g class="cores">', 1)[1].split("</g>", 1)[0].count("<rect")
    assert 0 < cells <= charts.MAX_COLUMNS * 64


def test_everything_from_the_report_is_escaped() -> None:
    data = recorded()
    data["facts"]["probe"]["notes"] = ['<script>alert("x")</script> & <b>bold</b>']
    data["facts"]["probe"]["timeline"][0]["phase"] = "<img src=x onerror=alert(1)>"
    source = html_report.render(report_of(data))
    assert "<script>" not in source and "<img" not in source and "<b>bold" not in source
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;b&gt;" in source


def test_no_probe_says_not_run() -> None:
    data = recorded()
    data["facts"]["probe"] = None
    data["facts"]["collectors"]["probe"] = {"status": "skipped", "reason": None}
    source = html_report.render(report_of(data))
    assert "not run" in Page(source).text("probe")
    assert '<svg class="chart"' not in source


def test_the_cli_writes_the_page(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    args = ["doctor", "--facts", str(RECORDED), "--format", "html", "-o", str(out)]
    result = CliRunner().invoke(app, [*args, "--exit-zero"])
    assert result.exit_code == 0, result.output
    source = out.read_text(encoding="utf-8")
    assert source.startswith("<!DOCTYPE html>") and "chart-cpu" in source
    assert result.stdout == ""


def test_golden(gpu_page: str) -> None:
    if os.environ.get("ENVCHECK_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(gpu_page, encoding="utf-8")
    assert GOLDEN.exists(), "run with ENVCHECK_UPDATE_GOLDEN=1 once to create it"
    assert gpu_page == GOLDEN.read_text(encoding="utf-8")


# the real browser --------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed (apt-get install chromium)"
)

# Appended to a copy of the page: after load, report the page's layout into the DOM.
# Overflow means: the document is wider than the window, an element's box reaches past
# the right edge of the window, an element's content is wider than its own box (clipped
# or spilling out), or a chart's label sticks out of its <svg> (SVG clips it silently).
# The charts must have a real size on screen.
LAYOUT_PROBE = """<script>
window.addEventListener('load', function () {
  var vw = document.documentElement.clientWidth, problems = [];
  if (document.documentElement.scrollWidth > vw) problems.push('document ' +
      document.documentElement.scrollWidth + ' > ' + vw);
  document.querySelectorAll('body *').forEach(function (el) {
    if (el.closest('svg') && el.tagName.toLowerCase() !== 'svg') return;
    var r = el.getBoundingClientRect();
    var name = el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
        (el.className && el.className.baseVal === undefined ? '.' + el.className : '');
    if (r.width > 0 && r.right > vw + 1) problems.push(name + ' right ' + r.right);
    if (el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1)
      problems.push(name + ' content ' + el.scrollWidth + ' > ' + el.clientWidth);
  });
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    svg.querySelectorAll('text').forEach(function (t) {
      var r = t.getBoundingClientRect();
      if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 ||
          r.bottom > box.bottom + 1) problems.push(svg.id + ' text "' + t.textContent + '"');
    });
  });
  var charts = Array.prototype.map.call(document.querySelectorAll('svg.chart'), function (s) {
    var r = s.getBoundingClientRect();
    return {id: s.id, width: Math.round(r.width), height: Math.round(r.height)};
  });
  var fixes = Array.prototype.filter.call(document.querySelectorAll('li.fix'), function (li) {
    return li.getBoundingClientRect().height > 0;
  }).length;
  document.body.setAttribute('data-layout', JSON.stringify(
      {viewport: vw, problems: problems, charts: charts, fixes: fixes}));
});
</script>"""


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    profile = tmp_path / "profile"
    profile.mkdir(exist_ok=True)
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


def png_size(path: Path) -> tuple[int, int]:
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", head[16:24])
    return width, height


@needs_chromium
def test_chromium_screenshot_of_the_page(tmp_path: Path, gpu_page: str) -> None:
    page = tmp_path / "report.html"
    page.write_text(gpu_page, encoding="utf-8")
    shot = tmp_path / "report.png"
    result = chromium(
        tmp_path,
        f"--screenshot={shot}",
        "--window-size=1280,2400",
        page.as_uri(),
    )
    assert shot.exists(), result.stderr[-2000:]
    width, height = png_size(shot)
    assert (width, height) == (1280, 2400)
    assert shot.stat().st_size > 60_000  # a blank page compresses to a few KiB
    if os.environ.get("ENVCHECK_KEEP_SCREENSHOT"):
        shutil.copy(shot, os.environ["ENVCHECK_KEEP_SCREENSHOT"])


@needs_chromium
@pytest.mark.parametrize("width", [1280, 760])
@pytest.mark.parametrize("which", ["gpu", "cpu"])
def test_chromium_layout_nothing_overflows(
    tmp_path: Path, gpu_page: str, cpu_page: str, width: int, which: str
) -> None:
    source = gpu_page if which == "gpu" else cpu_page
    page = tmp_path / "report-with-layout-probe.html"
    page.write_text(source.replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    result = chromium(
        tmp_path,
        "--dump-dom",
        "--run-all-compositor-stages-before-draw",
        "--virtual-time-budget=5000",
        f"--window-size={width},2400",
        page.as_uri(),
    )
    found = re.search(r"<body[^>]*\sdata-layout=\"([^\"]*)\"", result.stdout)
    assert found, (result.stdout[-500:], result.stderr[-2000:])
    layout = json.loads(html.unescape(found.group(1)))
    assert layout["viewport"] > 0
    assert layout["problems"] == []
    charts = {c["id"]: c for c in layout["charts"]}
    assert set(CHARTS) <= set(charts)
    for chart in charts.values():  # drawn across the page, a real height
        assert chart["width"] > layout["viewport"] * 0.6 and chart["height"] > 50
    active = [r for r in report_of(recorded()).findings if r.finding.acknowledged is None]
    assert layout["fixes"] == len(active)
