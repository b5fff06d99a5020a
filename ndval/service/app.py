"""The ASGI application of ``ndval serve``: a read-only JSON API and the page that uses it.

Routes (all ``GET``; every JSON payload carries ``api_version``):

==============================================  ====================================================
``/``                                           the page (``ndval/service/static/index.html``)
``/assets/<name>``                              the page's script and style (a fixed list of names)
``/api/health``                                 version, thresholds in force, limits
``/api/datasets``                               every dataset: id, status, kind, ranks, steps, size;
                                                failed ones with their reason
``/api/datasets/<id>/analysis?phase=&rank=``    the analysis (``phase``: overall / prefill / decode)
``/api/datasets/<before>/compare?with=<after>`` the before/after comparison, verdict thresholds
``/api/datasets/<id>/timeline?rank=&start_us=&end_us=&budget=``  swimlane items (≤ ``budget``)
``/api/datasets/<id>/evidence?metric=&phase=&rank=``  the events behind an evidence row
==============================================  ====================================================

Errors are JSON ``{"api_version", "error", "status"}``: 400 for a bad parameter or a string that is
not a dataset id, 404 for an unknown id, rank or route, 405 for any method but GET/HEAD, 409 for a
dataset that failed to load.
"""

from __future__ import annotations

import math
import threading
from importlib import resources
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import analyzer
from ndval.core import strictjson
from ndval.core.version import ndval_version
from ndval.service import evidence, lanes
from ndval.service.hostguard import LoopbackHostGuard
from ndval.service.registry import PHASE_SCOPES, DatasetError, Registry

API_VERSION = 1
#: item budget of a timeline answer: default and the most a client may ask for.
DEFAULT_BUDGET = 2000
MAX_BUDGET = 20_000
#: the narrowest and widest timeline window a client may ask for, µs.
MIN_WINDOW_US = 1e-3
MAX_WINDOW_US = 1e10
#: the page's files: URL name -> (file under ndval/service/static, media type).
ASSETS: dict[str, tuple[str, str]] = {
    "app.js": ("app.js", "text/javascript; charset=utf-8"),
    "swimlane.js": ("swimlane.js", "text/javascript; charset=utf-8"),
    "app.css": ("app.css", "text/css; charset=utf-8"),
}




def _finite(obj: Any) -> Any:
    """``obj`` with NaN/±inf floats replaced by None (JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def json_response(payload: dict[str, Any], status: int = 200) -> Response:
    """``payload`` with ``api_version`` first, as strict JSON."""
    body = strictjson.dumps({"api_version": API_VERSION, **payload}, default=str)
    return Response(body, status_code=status, media_type="application/json",
                    headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"})


def error_response(status: int, message: str) -> Response:
    """The JSON error of every refusal."""
    return json_response({"error": message, "status": status}, status)


# ------------------------------------------------------------------------------------------- parameters
def _param(request: Request, name: str, default: str | None = None) -> str | None:
    value = request.query_params.get(name, default)
    return None if value is None or value == "" else value


def _int(request: Request, name: str, default: int | None, lo: int, hi: int) -> int | None:
    raw = _param(request, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise DatasetError(400, f"parameter {name!r} must be an integer, got {raw!r}") from None
    if not lo <= value <= hi:
        raise DatasetError(400, f"parameter {name!r} must lie in [{lo}, {hi}], got {value}")
    return value


def _float(request: Request, name: str, default: float) -> float:
    raw = _param(request, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise DatasetError(400, f"parameter {name!r} must be a number (µs), got {raw!r}") from None
    if not math.isfinite(value):
        raise DatasetError(400, f"parameter {name!r} must be finite, got {raw!r}")
    return value


def _phase(request: Request) -> str:
    phase = _param(request, "phase", "overall") or "overall"
    if phase not in PHASE_SCOPES:
        raise DatasetError(400, f"parameter 'phase' must be one of {', '.join(PHASE_SCOPES)}, got {phase!r}")
    return phase


def _rank_filter(payload: dict[str, Any], rank: int | None) -> dict[str, Any]:
    """The analysis payload with ``ranks`` reduced to ``rank`` (404 when absent)."""
    if rank is None:
        return payload
    kept = [r for r in payload["ranks"] if r["rank"] == rank]
    if not kept:
        raise DatasetError(404, f"rank {rank} not in the analysis (ranks: {[r['rank'] for r in payload['ranks']]})")
    return {**payload, "ranks": kept}


# --------------------------------------------------------------------------------------------- handlers
class Api:
    """The handlers, bound to one :class:`Registry` (plus the comparison cache)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._compared: dict[tuple[str, str], dict[str, Any]] = {}
        self._lock = threading.Lock()

    def health(self, request: Request) -> Response:
        th = self.registry.thresholds
        return json_response({
            "status": "ok", "version": ndval_version(),
            "thresholds": {"origin": th.origin, "digest": self.registry.digest, "items": th.to_dict()},
            "limits": {"budget_default": DEFAULT_BUDGET, "budget_max": MAX_BUDGET, "window_min_us": MIN_WINDOW_US,
                       "window_max_us": MAX_WINDOW_US, "phases": list(PHASE_SCOPES),
                       "datasets": len(self.registry.entries), "methods": ["GET", "HEAD"]},
        })

    def datasets(self, request: Request) -> Response:
        return json_response({"datasets": [e.describe() for e in self.registry.entries.values()]})

    def analysis(self, request: Request) -> Response:
        entry = self.registry.get(request.path_params["id"])
        phase = _phase(request)
        rank = _int(request, "rank", None, -1, 1 << 30)
        an = entry.analysis(phase, self.registry.thresholds, self.registry.digest)
        payload = _rank_filter(an.to_dict(), rank)
        return json_response({"dataset": entry.id, "phase": phase, "rank": rank, "analysis": _finite(payload)})

    def compare(self, request: Request) -> Response:
        before = self.registry.get(request.path_params["id"])
        other = _param(request, "with")
        if other is None:
            raise DatasetError(400, "parameter 'with' (the id of the after dataset) is required")
        after = self.registry.get(other)
        key = (before.id, after.id)
        with self._lock:
            if key not in self._compared:
                th, digest = self.registry.thresholds, self.registry.digest
                sides = [(e.ready_dataset(), e.analysis("overall", th, digest)) for e in (before, after)]
                self._compared[key] = _finite(analyzer.compare(sides[0], sides[1]).to_dict())
            comparison = self._compared[key]
        rows = comparison.get("recommendations", [])
        return json_response({
            "before": before.id, "after": after.id, "thresholds_origin": self.registry.thresholds.origin,
            "verdict_thresholds": [{"id": r.get("id"), "threshold_pct": r.get("threshold_pct"),
                                    "threshold_rule": r.get("threshold_rule")} for r in rows],
            "comparison": comparison,
        })

    def timeline(self, request: Request) -> Response:
        entry = self.registry.get(request.path_params["id"])
        rl = entry.rank_lanes(_int(request, "rank", None, -1, 1 << 30))
        lo, hi = rl.span_us
        start = _float(request, "start_us", lo)
        end = _float(request, "end_us", hi if hi > lo else lo + 1.0)
        if not MIN_WINDOW_US <= end - start <= MAX_WINDOW_US:
            raise DatasetError(400, f"window end_us - start_us must lie in [{MIN_WINDOW_US:g}, {MAX_WINDOW_US:g}] µs, "
                                    f"got {end - start:g}")
        budget = _int(request, "budget", DEFAULT_BUDGET, 1, MAX_BUDGET)
        assert budget is not None
        answer = lanes.query(rl, start, end, budget)
        return json_response({"dataset": entry.id, "rank": rl.rank, "base_ts_us": rl.base_ts_us,
                              "span_us": list(rl.span_us), "window_us": [start, end],
                              "capture": entry.capture_fidelity(rl.rank),
                              "lanes": [ln.describe() for ln in rl.lanes], **answer})

    def evidence(self, request: Request) -> Response:
        entry = self.registry.get(request.path_params["id"])
        metric = _param(request, "metric")
        if metric is None or len(metric) > 100:
            raise DatasetError(400, "parameter 'metric' (an indicator id of an evidence row) is required")
        phase = _phase(request)
        rank = _int(request, "rank", None, -1, 1 << 30)
        rl = entry.rank_lanes(rank)
        an = entry.analysis(phase, self.registry.thresholds, self.registry.digest).to_dict()
        ra = next(r for r in an["ranks"] if r["rank"] == rl.rank)
        scope = ra["scopes"].get(phase) or ra["scopes"]["overall"]
        windows = [(float(a), float(b)) for a, b in scope["windows_us"]]
        return json_response({"dataset": entry.id, "rank": rl.rank, "phase": phase, "scope_windows_us": windows,
                              **evidence.locate(rl, metric, windows)})


def _static(name: str) -> bytes:
    return resources.files("ndval.service").joinpath("static", name).read_bytes()


def page(request: Request) -> Response:
    """The page (no build step: plain HTML, CSS and JavaScript shipped in the package)."""
    return Response(_static("index.html"), media_type="text/html; charset=utf-8",
                    headers={"Content-Security-Policy": "default-src 'self'; img-src 'self' data:",
                             "X-Content-Type-Options": "nosniff"})


def asset(request: Request) -> Response:
    """One of :data:`ASSETS` by name (anything else is 404: no path from the URL reaches the disk)."""
    name = request.path_params["name"]
    if name not in ASSETS:
        raise DatasetError(404, f"no asset {name!r}")
    file, media = ASSETS[name]
    return Response(_static(file), media_type=media, headers={"X-Content-Type-Options": "nosniff"})


def _guard(handler: Any) -> Any:
    """Run ``handler`` in the thread pool (a dataset loading never blocks the other requests) and turn
    refusals into JSON errors."""

    async def endpoint(request: Request) -> Response:
        try:
            return await run_in_threadpool(handler, request)
        except DatasetError as exc:
            return error_response(exc.status, exc.message)

    return endpoint


async def _http_error(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 500)
    detail = getattr(exc, "detail", "") or "error"
    if status == 404:
        detail = f"no route {request.url.path!r}"
    return error_response(status, str(detail))


async def _server_error(request: Request, exc: Exception) -> Response:
    return error_response(500, f"internal error: {type(exc).__name__}: {exc}")


def create_app(registry: Registry, allowed_hosts: list[str] | None = None) -> Starlette:
    """The application over ``registry``; ``allowed_hosts`` (e.g. the loopback names) refuses requests whose
    Host header names anything else than those names or a loopback IP literal (DNS-rebinding guard,
    :mod:`ndval.service.hostguard`)."""
    api = Api(registry)
    get = ["GET"]
    routes = [
        Route("/", _guard(page), methods=get),
        Route("/assets/{name}", _guard(asset), methods=get),
        Route("/api/health", _guard(api.health), methods=get),
        Route("/api/datasets", _guard(api.datasets), methods=get),
        Route("/api/datasets/{id}/analysis", _guard(api.analysis), methods=get),
        Route("/api/datasets/{id}/compare", _guard(api.compare), methods=get),
        Route("/api/datasets/{id}/timeline", _guard(api.timeline), methods=get),
        Route("/api/datasets/{id}/evidence", _guard(api.evidence), methods=get),
    ]
    middleware = [Middleware(LoopbackHostGuard, names=allowed_hosts)] if allowed_hosts else []
    app = Starlette(routes=routes, middleware=middleware,
                    exception_handlers={HTTPException: _http_error, Exception: _server_error})
    app.state.registry = registry
    return app
