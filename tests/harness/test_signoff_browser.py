"""signoff.html in headless Chromium (tests/browser.py; skipped with the reason when no browser is
installed — ``make browser`` fetches it): no sideways scroll at 1400 px, no console errors, the
plots render. The cases are synthetic."""

from __future__ import annotations

import pytest

from .conftest import synthetic_case

#: ids as long as the published measurements' (megatron_ci__gpt3_mcore_te_tp2_pp2_..._max_allocated): no break
LONG = "a_very_long_unbroken_identifier_" * 3


def test_signoff_html_fits_1400px_and_renders(pytester: pytest.Pytester, cases, page) -> None:
    waiver = ("waiver: {reason: synthetic known failure with a long reason for the layout check, owner: qa, "
              "expires: 2099-01-01, issue: https://example.invalid/" + LONG + "}\n")
    cases(f"recorded/{LONG[:60]}.case.yaml", synthetic_case(f"synthetic_{LONG}", lo=0.99, hi=1.01, extra=waiver))
    cases("recorded/ok.case.yaml", synthetic_case(f"ok_{LONG}"))
    assert pytester.runpytest("validation_cases", "--signoff", "reports/signoff.md").ret == 0
    html = pytester.path / "reports" / "signoff.html"
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(html.as_uri())
    widths = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"signoff.html scrolls sideways at 1400 px: {widths}"
    images = page.evaluate("[...document.images].map(i => i.complete && i.naturalWidth > 0)")
    assert images and all(images), "a plot did not render"
    assert "WAIVED" in page.inner_text("body")
    assert page.problems == []


#: layout checks of a sign-off page at 1,400 px: (tables wider than the viewport, cells a word overflows,
#: cells whose style breaks words, in-page links without a target, section headings, TOC links)
LAYOUT_JS = """() => {
  const vw = document.documentElement.clientWidth;
  const wide = [...document.querySelectorAll('table')].filter(t => t.getBoundingClientRect().right > vw + 1)
    .map(t => t.querySelector('th') ? t.querySelector('th').innerText : '?');
  const cells = [...document.querySelectorAll('td, th')];
  const overflow = cells.filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.innerText.slice(0, 60));
  const breaking = cells.filter(c => { const s = getComputedStyle(c);
    return s.overflowWrap === 'anywhere' || s.wordBreak === 'break-all'; }).length;
  const links = [...document.querySelectorAll('a[href^="#"]')];
  const dangling = links.filter(a => !document.getElementById(decodeURIComponent(a.hash.slice(1))))
    .map(a => a.getAttribute('href'));
  return {wide, overflow, breaking, dangling, sections: document.querySelectorAll('h2[id]').length,
          toc: document.querySelectorAll('nav.toc a').length};
}"""


def check_layout(page, path) -> dict:
    """Open ``path`` at 1,400 px and return the layout findings (every list empty when the page is readable)."""
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(path.as_uri())
    return page.evaluate(LAYOUT_JS)


def test_signoff_tables_readable_at_1400px_and_toc_links_resolve(pytester: pytest.Pytester, cases, page) -> None:
    waiver = ("waiver: {reason: synthetic known failure, owner: qa, expires: 2099-01-01, issue: QA-" + LONG + "}\n")
    cases("recorded/waived.case.yaml", synthetic_case(f"waived_{LONG}", lo=0.99, hi=1.01, extra=waiver))
    cases("recorded/ok.case.yaml", synthetic_case(f"ok_{LONG}"))
    assert pytester.runpytest("validation_cases", "--signoff", "reports/signoff.md").ret == 0
    found = check_layout(page, pytester.path / "reports" / "signoff.html")
    assert found["wide"] == [] and found["overflow"] == [] and found["breaking"] == 0, found
    assert found["dangling"] == [] and found["toc"] == found["sections"] == 16, found
    lead = page.inner_text("p.lead")
    # recorded numbers are context: the waived synthetic case leaves P1 not evaluable, and the headline says so
    assert "Gate PASS" in lead and "1 waived," in lead and "10 not evaluable (P1, INT-01" in lead, lead
    assert page.problems == []
