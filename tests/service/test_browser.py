"""The page of ``ndval serve`` in headless Chromium (real profiles; skips without a browser or the data).

Each view is screenshotted into ``reports/screenshots/serve-*.png`` (and attached to Allure).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ndval.service.registry import Registry
from tests.browser import save_screenshot
from tests.service.conftest import CONTROL, LEVEL1, TEST

pytestmark = pytest.mark.needs_data

#: the Level1 rank0 Step 50 numbers of ../shared/data/profiles/README.md, as the page formats them.
README_LEVEL1 = ("8,873.756", "105,991.878", "101,963.203", "25,744.05")


@pytest.fixture(scope="module")
def registry(profiles_dir: Path) -> Registry:
    paths = [profiles_dir / p for p in (LEVEL1, CONTROL, TEST)]
    for p in paths:
        if not p.exists():
            pytest.skip(f"profile sample {p} not available")
    reg = Registry(paths)
    reg.load_all()
    return reg


@pytest.fixture
def server(registry: Registry, live_server):
    return live_server(registry)


def open_overview(page, server) -> None:
    page.goto(server.url + "/")
    page.wait_for_selector("[data-testid=verdict]", timeout=60_000)


def test_overview_shows_the_communication_verdict_with_the_readme_numbers(page, server) -> None:
    open_overview(page, server)
    kinds = page.locator("[data-testid=verdict-kind]").all_text_contents()
    assert kinds and all(k.startswith("communication") for k in kinds)
    text = page.locator("#view-overview").inner_text()
    for number in README_LEVEL1:
        assert number in text, number
    rows = page.locator("#view-overview tr.ev-row")
    api = page.request.get(server.url + "/api/datasets/msinsight-level1/analysis").json()
    n_rows = sum(len(c["evidence"]) for r in api["analysis"]["ranks"]
                 for c in r["scopes"]["overall"]["verdict"]["candidates"])
    assert rows.count() == n_rows > 0  # every evidence row, in full
    assert "Root causes" in text and "Recommendations" in text and "combined gain" in text
    assert page.locator("[data-testid=warnings] li").count() == len(api["analysis"]["warnings"])
    save_screenshot(page, "serve-overview")
    assert page.problems == []


def test_phase_scope_switch_reruns_the_analysis(page, server) -> None:
    open_overview(page, server)
    assert page.locator("[data-testid=shown-scope]").first.inner_text() == "overall"
    with page.expect_response(re.compile(r"/analysis\?phase=prefill")) as resp:
        page.select_option("[data-testid=phase]", "prefill")
    assert resp.value.ok
    page.wait_for_function("() => document.querySelector('[data-testid=shown-scope]').textContent === 'prefill'")
    assert "phase=prefill" in page.locator("[data-testid=request]").inner_text()
    assert "phase override: prefill" in page.locator("[data-testid=verdict]").first.inner_text()
    save_screenshot(page, "serve-overview-prefill")
    assert page.problems == []


def test_compare_view_says_not_comparable_with_hardware_and_world_size(page, server) -> None:
    open_overview(page, server)
    page.click("button.tab[data-view=compare]")
    page.select_option("[data-testid=cmp-before]", "control")
    page.select_option("[data-testid=cmp-after]", "test")
    page.click("[data-testid=cmp-run]")
    banner = page.wait_for_selector("[data-testid=comparability]", timeout=120_000)
    assert banner.inner_text() == "not comparable"
    reasons = page.locator("[data-testid=comparability-reasons]").inner_text()
    assert "different hardware: NVIDIA A100-PG509-200 vs Tesla V100-SXM2-16GB" in reasons
    assert "different world size: 8 vs 2" in reasons
    out = page.locator("#cmp-out").inner_text()
    assert "max(1 %, expected_gain_pct × 0.5)" in out  # the verdict threshold rule, per recommendation
    save_screenshot(page, "serve-compare")
    assert page.problems == []


def status(page) -> dict[str, float]:
    el = page.locator("[data-testid=sl-status]")
    return {k: float(el.get_attribute(f"data-{k}")) for k in ("items", "budget", "events", "start", "end", "merged")}


def test_swimlane_budget_zoom_to_one_ms_and_evidence_jump(page, server) -> None:
    open_overview(page, server)
    page.click("button.tab[data-view=swimlane]")
    page.wait_for_selector("[data-testid=sl-status][data-items]", timeout=60_000)
    full = status(page)
    assert full["items"] <= full["budget"] and full["events"] == 4384 and full["merged"] > 0
    assert page.locator("[data-testid=sl-status]").get_attribute("data-complete") == "true"  # nothing sampled
    lanes = page.request.get(server.url + "/api/datasets/msinsight-level1/timeline?rank=0&budget=1").json()["lanes"]
    assert any(ln["side"] == "host" for ln in lanes) and any(ln["side"] == "device" for ln in lanes)
    save_screenshot(page, "serve-swimlane")
    # zoom in to 1 ms around the allreduce start: real events, none merged
    start = 56_000.0
    page.fill("[data-testid=sl-start]", str(start))
    page.fill("[data-testid=sl-end]", str(start + 1000.0))
    with page.expect_response(re.compile(r"/timeline\?.*start_us=56000")):
        page.click("[data-testid=sl-go]")
    page.wait_for_function("() => document.querySelector('[data-testid=sl-status]').dataset.start === '56000'")
    ms = status(page)
    assert ms["end"] - ms["start"] == 1000.0 and ms["merged"] == 0 and 0 < ms["items"] == ms["events"] <= ms["budget"]
    save_screenshot(page, "serve-swimlane-1ms")
    # wheel zoom fetches a new window at the budget
    box = page.locator("[data-testid=sl-canvas]").bounding_box()
    with page.expect_response(re.compile(r"/timeline\?")):
        page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 40)
        page.mouse.wheel(0, 300)
    page.wait_for_function("() => Number(document.querySelector('[data-testid=sl-status]').dataset.end)"
                           " - Number(document.querySelector('[data-testid=sl-status]').dataset.start) > 1000")
    assert status(page)["items"] <= status(page)["budget"]
    # click on an evidence row: the swimlane jumps to its events
    page.click("button.tab[data-view=overview]")
    with page.expect_response(re.compile(r"/evidence\?metric=comm_pct_of_device")):
        page.locator("tr.ev-row[data-metric=comm_pct_of_device]").first.click()
    page.wait_for_function("() => document.querySelector('[data-testid=sl-focus]').dataset.metric === 'comm_pct_of_device'")
    page.wait_for_function("() => Number(document.querySelector('[data-testid=sl-status]').dataset.end) -"
                           " Number(document.querySelector('[data-testid=sl-status]').dataset.start) > 70000")
    assert "communication event(s)" in page.locator("[data-testid=sl-focus]").inner_text()
    save_screenshot(page, "serve-swimlane-evidence")
    assert page.problems == []


def test_datasets_and_about_views(page, server) -> None:
    open_overview(page, server)
    page.click("button.tab[data-view=datasets]")
    table = page.locator("#view-datasets").inner_text()
    assert "msinsight-level1" in table and "control" in table and "ready" in table
    save_screenshot(page, "serve-datasets")
    page.click("button.tab[data-view=about]")
    about = page.locator("#view-about").inner_text()
    assert "hostOnlyGate" in about and "budget_max" in about and "API v1" in about
    save_screenshot(page, "serve-about")
    assert page.problems == []


def test_scores_legend_phase_notice_and_tooltip_reset(page, server) -> None:
    """The page says why the verdict is not the top bar, says when a phase has no data, has a swimlane legend
    and event labels, and clears the tooltip when the dataset changes."""
    open_overview(page, server)
    api = page.request.get(server.url + "/api/datasets/msinsight-level1/analysis").json()
    verdict = api["analysis"]["ranks"][0]["scopes"]["overall"]["verdict"]
    top = max(verdict["candidates"], key=lambda c: c["score"])
    chosen = next(c for c in verdict["candidates"] if c["kind"] == verdict["kind"])
    note = page.locator("[data-testid=score-note]")
    assert top["score"] > chosen["score"]  # Level1: host scores higher than the communication verdict
    assert note.count() >= 1 and "not the highest bar" in note.first.inner_text()
    assert chosen["label"] in note.first.inner_text() and top["label"] in note.first.inner_text()
    with page.expect_response(re.compile(r"/analysis\?phase=decode")) as resp:
        page.select_option("[data-testid=phase]", "decode")
    scopes = resp.value.json()["analysis"]["ranks"][0]["scopes"]
    page.wait_for_selector("[data-testid=verdict]")
    notice = page.locator("[data-testid=phase-notice]")
    # Level1 is one training window: read as decode, the decode scope is that whole window, and the page says so
    assert scopes["decode"]["windows_us"] == scopes["overall"]["windows_us"]
    notice.first.wait_for(timeout=30_000)
    assert "the decode scope of rank 0 is the whole window" in notice.first.inner_text()
    page.select_option("[data-testid=phase]", "overall")
    page.click("button.tab[data-view=swimlane]")
    page.wait_for_selector("[data-testid=sl-status][data-items]", timeout=60_000)
    legend = page.locator("[data-testid=sl-legend] .legend-item[data-category]")
    assert legend.count() >= 2 and "merged" in page.locator("[data-testid=sl-legend]").inner_text()
    box = page.locator("[data-testid=sl-canvas]").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.6, box["y"] + 26 + 11)
    page.wait_for_function("() => document.querySelector('[data-testid=sl-tip]').textContent.length > 0")
    other = next(d["id"] for d in page.request.get(server.url + "/api/datasets").json()["datasets"]
                 if d["id"] != "msinsight-level1" and d["status"] == "ready")
    page.select_option("[data-testid=dataset]", other)
    assert page.locator("[data-testid=sl-tip]").text_content() == ""
    save_screenshot(page, "serve-swimlane-legend")
    assert page.problems == []
