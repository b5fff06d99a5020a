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
