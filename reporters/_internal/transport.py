"""HTTP to the bureau: one aiohttp session, and the mapping of answers to results or
errors. Every answer that is not a success becomes a :class:`BureauClientError`:

* ``503``, any other ``5xx``, connection failures and timeouts: :class:`Unavailable`
  (``retry_after`` from the ``Retry-After`` header when there is one);
* every ``4xx``: :class:`Rejected`, with the code, path and detail of the bureau's one
  error shape ``{"status": "rejected", "code", "path", "detail"}`` (SPEC §5).

Every answer is read within the timeout, body included, and no larger than its kind
can be (:func:`reporters._internal.capped.read_capped`): a larger one is
``Unavailable`` (``PROTOCOL``), having cost at most the cap.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any

import aiohttp
import nacl.signing

from reporters import httpsig, strictjson
from reporters._internal.capped import TooLarge, read_capped
from reporters._internal.errors import BureauClientError, Rejected, Unavailable

JSON = "application/json"
NDJSON = "application/x-ndjson"

#: An intake result (one line of a batch answer is about 200 bytes).
RESULT_CAP = 64 * 1024
RESULT_LINE_CAP = 1024
#: A signed read's answer by default (an explanation lists every interaction).
READ_CAP = 64 * 1024 * 1024
#: One entry or refusal of a file page: an envelope is at most 64 KiB (SPEC §3), and
#: its JSON as served may grow in escaping.
FILE_ITEM_CAP = 128 * 1024

#: a request under way: ``async with`` it for the answer
_Exchange = AbstractAsyncContextManager[aiohttp.ClientResponse]


def file_page_cap(limit: int) -> int:
    """The largest page of ``limit`` entries and as many refusals."""
    return 64 * 1024 + 2 * max(limit, 1) * FILE_ITEM_CAP


@dataclass(frozen=True)
class Answer:
    """One HTTP answer, read in full."""

    status: int
    body: bytes
    retry_after: float | None


def parse_retry_after(value: str | None, now: dt.datetime | None = None) -> float | None:
    """``Retry-After`` as seconds: delta-seconds or an HTTP date; ``None`` if absent or
    unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return max(0.0, (when - (now or dt.datetime.now(dt.UTC))).total_seconds())


def _json_object(body: bytes) -> dict[str, Any] | None:
    try:
        doc = strictjson.loads(body)
    except strictjson.StrictJSONError:
        return None
    return doc if isinstance(doc, dict) else None


def error_of(answer: Answer) -> BureauClientError:
    """The error an unsuccessful answer stands for."""
    doc = _json_object(answer.body) or {}
    code = doc.get("code")
    path = doc.get("path")
    detail = doc.get("detail")
    code = code if isinstance(code, str) else ("UNAVAILABLE" if answer.status >= 500
                                               else "PROTOCOL")
    path = path if isinstance(path, str) else ""
    detail = detail if isinstance(detail, str) else f"HTTP {answer.status}"
    if answer.status >= 500:
        return Unavailable(code, path, detail, answer.status, answer.retry_after)
    return Rejected(code, path, detail, answer.status)


def result_of(doc: Mapping[str, Any], status: int | None = None) -> dict[str, Any]:
    """Check one intake result's shape (accepted/duplicate with id and seq, or rejected
    with a code). Anything else is :class:`Unavailable` with code ``PROTOCOL``: an answer
    we cannot read tells us no more than a lost connection, and re-sending is safe."""
    kind = doc.get("status")
    if kind in ("accepted", "duplicate"):
        if isinstance(doc.get("id"), str) and isinstance(doc.get("seq"), int):
            return dict(doc)
    elif kind == "rejected" and isinstance(doc.get("code"), str):
        return dict(doc)
    raise Unavailable("PROTOCOL", "", f"unexpected intake result: {dict(doc)!r}", status)


class Transport:
    """The bureau at ``base_url`` (changeable: the next request goes to the new URL)."""

    def __init__(self, base_url: str, *, timeout: float = 30.0,
                 session: aiohttp.ClientSession | None = None) -> None:
        self.base_url = base_url
        self._seconds = timeout
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._session = session
        self._owns_session = session is None
        self._closed = False

    @property
    def base_url(self) -> str:
        return self._base_url

    @base_url.setter
    def base_url(self, value: str) -> None:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"the bureau's URL must be http(s)://..., not {value!r}")
        self._base_url = value.rstrip("/")

    def _session_now(self) -> aiohttp.ClientSession:
        if self._closed:
            raise BureauClientError("CLOSED", "", "this client has been closed")
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        return self._session

    async def close(self) -> None:
        self._closed = True
        if self._session is not None and self._owns_session:
            await self._session.close()
        self._session = None

    async def _post(self, path: str, body: bytes, content_type: str, cap: int) -> Answer:
        url = self.base_url + path

        def post(session: aiohttp.ClientSession) -> _Exchange:
            return session.request("POST", url, data=body,
                                   headers={"Content-Type": content_type},
                                   timeout=self._timeout)

        return await self._exchange(post, cap)

    async def _signed_get(self, key: nacl.signing.SigningKey, path: str, cap: int) -> Answer:
        url = self.base_url + path
        return await self._exchange(lambda session: httpsig.signed_get(session, key, url), cap)

    async def _exchange(self, start: Callable[[aiohttp.ClientSession], _Exchange],
                        cap: int) -> Answer:
        """One request and its answer, read whole (at most ``cap`` bytes) within the
        timeout; what fails on the way is :class:`Unavailable`."""
        session = self._session_now()
        try:
            async with asyncio.timeout(self._seconds):  # the whole exchange, body and all
                async with start(session) as resp:
                    data = await read_capped(resp, cap)
                    return Answer(resp.status, data,
                                  parse_retry_after(resp.headers.get("Retry-After")))
        except TooLarge as exc:
            raise Unavailable("PROTOCOL", "", f"the bureau's answer is {exc}") from None
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise Unavailable("UNAVAILABLE", "", f"{type(exc).__name__}: {exc}") from exc

    async def post_envelope(self, line: bytes) -> dict[str, Any]:
        """``POST /v1/evidence``; the accepted/duplicate result, or raises."""
        answer = await self._post("/v1/evidence", line, JSON, RESULT_CAP)
        if answer.status not in (200, 201):
            raise error_of(answer)
        doc = _json_object(answer.body)
        if doc is None:
            raise Unavailable("PROTOCOL", "", "the bureau's answer is not JSON", answer.status)
        return result_of(doc, answer.status)

    async def post_batch(self, lines: Sequence[bytes]) -> list[dict[str, Any]]:
        """``POST /v1/evidence/batch``; one result per line, in input order, or raises."""
        body = b"".join(line + b"\n" for line in lines)
        answer = await self._post("/v1/evidence/batch", body, NDJSON,
                                  RESULT_CAP + RESULT_LINE_CAP * len(lines))
        if answer.status != 200:
            raise error_of(answer)
        results: list[dict[str, Any] | None] = [None] * len(lines)
        for raw in answer.body.splitlines():
            if not raw.strip():
                continue
            doc = _json_object(raw)
            index = doc.get("index") if doc is not None else None
            if doc is None or not isinstance(index, int) or not 0 <= index < len(lines):
                raise Unavailable("PROTOCOL", "", "unreadable batch result line", 200)
            results[index] = result_of(doc, 200)
        if any(r is None for r in results):
            raise Unavailable("PROTOCOL", "", "the batch answer lacks results for some lines",
                              200)
        return [r for r in results if r is not None]

    async def signed_get_json(self, key: nacl.signing.SigningKey, path: str, *,
                              cap: int = READ_CAP) -> Any:
        """An RFC 9421-signed ``GET`` of ``path`` (already encoded); its JSON body,
        at most ``cap`` bytes."""
        answer = await self._signed_get(key, path, cap)
        if answer.status != 200:
            raise error_of(answer)
        try:
            return strictjson.loads(answer.body, max_depth=64)
        except strictjson.StrictJSONError as exc:
            raise BureauClientError("PROTOCOL", "", f"the bureau's answer is not JSON ({exc})",
                                    answer.status) from None
