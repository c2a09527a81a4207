"""One error shape on every route, and the one place a reason code becomes a status.

Every error body is ``{"status": "rejected", "code", "path", "detail"}``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from bureau import metrics
from bureau.errors import BureauError, Code, Pushback, Stage
from bureau.http.keys import DB_POOL, SERVICE
from bureau.intake.envelope import NotJSON
from bureau.storage import db

log = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 2

_STATUS_BY_CODE: dict[Code, int] = {
    Code.TOO_LARGE: 413,
    Code.UNSUPPORTED_MEDIA_TYPE: 415,
    Code.UNAUTHENTICATED: 401,
    Code.FORBIDDEN: 403,
    Code.NOT_FOUND: 404,
    Code.UNAVAILABLE: 503,
}


class RequestError(BureauError):
    """A refusal of the request as a whole that needs a status other than its code's
    usual one (a body that is not JSON at all is 400, not 422)."""

    def __init__(self, code: Code, status: int, detail: str, path: str = "") -> None:
        super().__init__(code, path, detail)
        self.status = status


def status_of(err: BureauError) -> int:
    if isinstance(err, RequestError):
        return err.status
    if isinstance(err, NotJSON):
        return 400
    if err.internal:
        return 500
    return _STATUS_BY_CODE.get(err.code, 422)


class PushbackLog:
    """Logs each ``UNAVAILABLE`` answer's reason, at most one line per reason per
    ``interval`` seconds (under overload there are thousands a second), saying how many
    answers the line stands for."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self._last: dict[Pushback, float] = {}
        self._quiet: dict[Pushback, int] = {}

    def note(self, reason: Pushback, detail: str) -> None:
        now = time.monotonic()
        if now - self._last.get(reason, -self.interval) < self.interval:
            self._quiet[reason] = self._quiet.get(reason, 0) + 1
            return
        self._last[reason] = now
        more = self._quiet.pop(reason, 0)
        log.warning("answered UNAVAILABLE (%s): %s%s", reason.value, detail,
                    f" (and {more} more since the last such line)" if more else "")


_PUSHBACK = PushbackLog()


class Outage:
    """The database as the routes see it (SPEC §9 r3): the first answer it could not
    give starts an outage, logged once, and counted in ``bureau_database_outages_total``;
    the next answer that is not an outage's ends it, logged once with how many requests
    were answered ``503`` meanwhile. Never a traceback per request."""

    def __init__(self) -> None:
        self.since: float | None = None
        self.answers = 0
        #: what the driver raised, for the log (set by :func:`unreachable`)
        self.cause: str | None = None
        self._looked = 0.0
        self._looking: asyncio.Future[None] | None = None

    def down(self, detail: str) -> None:
        self.answers += 1
        if self.since is None:
            self.since = time.monotonic()
            metrics.DATABASE_OUTAGES.inc()
            log.warning("database unreachable (%s): every route answers 503 UNAVAILABLE "
                        "until it is back; said once per outage", self.cause or detail)

    def up(self) -> None:
        if self.since is not None:
            log.warning("database reachable again after %.1f s: %d answers were 503 "
                        "UNAVAILABLE meanwhile", time.monotonic() - self.since, self.answers)
            self.since, self.answers = None, 0

    def look(self, pool: db.Pool | None) -> None:
        """During an outage, after an answer that needed no database (``/healthz``, a
        static document): see, at most once a second and off the request's path,
        whether the database is back — an answer that did not ask it says nothing."""
        now = time.monotonic()
        if (self.since is None or pool is None or self._looking is not None
                or now - self._looked < 1.0):
            return
        self._looked = now

        async def look() -> None:
            try:
                if await db.is_reachable(pool):
                    self.up()
            finally:
                self._looking = None

        self._looking = asyncio.ensure_future(look())


OUTAGE = Outage()


def unreachable(exc: BaseException) -> BureauError:
    """The one answer of every route to a database that cannot be reached (what was
    raised goes to the log, once per outage, not to the client)."""
    OUTAGE.cause = str(exc) or type(exc).__name__
    return BureauError(Code.UNAVAILABLE, "", "the database cannot be reached; try again "
                       "later", pushback=Pushback.DATABASE_UNREACHABLE)


def error_response(err: BureauError) -> web.Response:
    status = status_of(err)
    if err.code is Code.UNAVAILABLE:
        reason = err.pushback or Pushback.INTERNAL_ERROR
        metrics.UNAVAILABLE_TOTAL.labels(reason=reason.value).inc()
        if reason is Pushback.DATABASE_UNREACHABLE:
            OUTAGE.down(err.detail)
        else:
            _PUSHBACK.note(reason, err.detail)
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)} if err.code is Code.UNAVAILABLE else {}
    return web.json_response(err.as_body(), status=status, headers=headers)


def _from_http_exception(exc: web.HTTPException) -> BureauError:
    if exc.status == 413:
        return RequestError(Code.TOO_LARGE, 413, "request body too large")
    if exc.status in (404, 405):
        return RequestError(Code.NOT_FOUND, exc.status, "no such route")
    if exc.status == 415:
        return RequestError(Code.UNSUPPORTED_MEDIA_TYPE, 415, exc.reason)
    return RequestError(Code.MALFORMED_ENVELOPE, 400, exc.reason)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def error_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Map every failure to the one error shape, and time every request."""
    start = time.perf_counter()
    try:
        response = await handler(request)
    except BureauError as err:
        if err.code.stage not in (Stage.READ, Stage.AUTH, Stage.SERVICE):
            metrics.REFUSALS_TOTAL.labels(code=err.code.value).inc()
        response = error_response(err)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        response = error_response(_from_http_exception(exc))
    except Exception as exc:
        if db.is_connection_error(exc):  # every route: 503, never a 500 (SPEC §9 r3)
            response = error_response(unreachable(exc))
        else:
            log.exception("unhandled error on %s %s", request.method, request.path)
            response = error_response(BureauError(
                Code.UNAVAILABLE, "", "internal error", pushback=Pushback.INTERNAL_ERROR))
    if response.status < 500:
        service = request.app.get(SERVICE, request.app)
        OUTAGE.look(service.get(DB_POOL))
    route = request.match_info.route.resource
    name = route.canonical if route is not None else "unmatched"
    metrics.REQUEST_SECONDS.labels(route=name, method=request.method,
                                   status=str(response.status)).observe(
        time.perf_counter() - start)
    return response
