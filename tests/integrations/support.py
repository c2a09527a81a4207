"""Helpers for the LiteLLM plugin's tests: a model provider on loopback that speaks the
OpenAI API (its answers built with the openai library's own types), the plugin installed
in LiteLLM's callbacks, and the facts in the workers' spools."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from reporters._internal.spool import DB_FILE
from tests.otlp.support import spooled_facts
from tests.support import until

MESSAGES: Any = [{"role": "user", "content": "What is 6 x 7?"}]


def completion(model: str) -> dict[str, Any]:
    """A chat completion as the openai library's own types write it."""
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletion, ChatCompletionMessage
    from openai.types.chat.chat_completion import Choice

    return ChatCompletion(
        id="chatcmpl-local", object="chat.completion", created=int(time.time()), model=model,
        choices=[Choice(index=0, finish_reason="stop",
                        message=ChatCompletionMessage(role="assistant", content="42"))],
        usage=CompletionUsage(prompt_tokens=7, completion_tokens=1, total_tokens=8),
    ).model_dump(mode="json", exclude_none=True)


def chunk(model: str, content: str) -> bytes:
    """One event of a streamed chat completion (``data: <chunk>``), the chunk as the
    openai library's own types write it."""
    from openai.types.chat import ChatCompletionChunk
    from openai.types.chat.chat_completion_chunk import Choice, ChoiceDelta

    data = ChatCompletionChunk(
        id="chatcmpl-local", object="chat.completion.chunk", created=int(time.time()),
        model=model, choices=[Choice(index=0, delta=ChoiceDelta(role="assistant",
                                                                content=content))])
    return b"data: " + data.model_dump_json(exclude_none=True).encode() + b"\n\n"


@dataclass
class Hit:
    """One request the provider had: its model, when it came and when the provider had
    answered it (or, for a stream, began writing its first chunk), epoch seconds: the
    earliest the caller can have had the answer."""

    model: str
    came: float
    answered: float = 0.0


async def _stream(request: web.Request, model: str, hit: Hit) -> web.StreamResponse:
    """A streamed answer, "4" then "2"; ``breaks-mid-stream`` drops the connection after
    its first chunk, as a provider that fails mid-answer does; ``stalls-mid-stream``
    writes nothing more until ``app[RESUME]`` is set (by the test, or as the server
    stops): its caller hangs up first."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    # taken before the write: the caller cannot have the chunk before it is written, and
    # once written it may have it before this coroutine runs again (under load, ms later)
    hit.answered = time.time()
    await response.write(chunk(model, "4"))
    if model == "breaks-mid-stream":
        assert request.transport is not None
        request.transport.abort()
        return response
    if model == "stalls-mid-stream":
        await request.app[RESUME].wait()
    await response.write(chunk(model, "2"))
    await response.write(b"data: [DONE]\n\n")
    return response


def _error(status: int) -> web.Response:
    return web.json_response({"error": {"message": f"the provider says {status}",
                                        "type": "provider_error", "code": str(status)}},
                             status=status)


async def _chat(request: web.Request) -> web.StreamResponse:
    """``/v1/chat/completions`` by model name: ``status-NNN`` answers that status with
    an OpenAI error body, ``flaky`` answers 503 and 200 by turns (503 first), ``hang``
    never answers, any other model answers "42" (streamed when asked: :func:`_stream`).
    Each request is a :class:`Hit` in ``app[HITS]``."""
    body = await request.json()
    model = str(body["model"])
    hits = request.app[HITS]
    hit = Hit(model, time.time())
    hits.append(hit)
    if body.get("stream") and not model.startswith("status-"):
        return await _stream(request, model, hit)
    if model == "hang":  # until the server stops (the caller has long given up)
        await request.app[STOPPING].wait()
        raise web.HTTPServiceUnavailable()
    if model.startswith("status-"):
        response = _error(int(model.removeprefix("status-")))
    elif model == "flaky" and sum(h.model == model for h in hits) % 2:
        response = _error(503)
    else:
        response = web.json_response(completion(model))
    hit.answered = time.time()
    return response


STOPPING = web.AppKey("stopping", asyncio.Event)
RESUME = web.AppKey("resume", asyncio.Event)  # the stalled streams go on
HITS = web.AppKey("hits", list[Hit])


async def _stopping(app: web.Application) -> None:
    app[RESUME].set()
    app[STOPPING].set()


def provider_app() -> web.Application:
    """A model provider speaking the OpenAI chat API, under ``/v1``."""
    app = web.Application()
    app[STOPPING], app[RESUME] = asyncio.Event(), asyncio.Event()
    app[HITS] = []
    app.on_shutdown.append(_stopping)
    app.router.add_post("/v1/chat/completions", _chat)
    return app


def worker_facts(spool_dir: Path) -> list[dict[str, Any]]:
    """Every fact waiting in the workers' spools under ``spool_dir`` (``worker-0``, …)."""
    return [fact for slot in sorted(spool_dir.glob("worker-*"))
            for fact in spooled_facts(slot)]


def held_attempts(spool_dir: Path) -> list[dict[str, Any]]:
    """Every failed attempt the workers hold under ``spool_dir`` until its request
    settles, as the plugin wrote it (``deployment``: the agent's key id)."""
    held = []
    for slot in sorted(spool_dir.glob("worker-*")):
        if not (slot / DB_FILE).exists():
            continue
        db = sqlite3.connect(f"file:{slot / DB_FILE}?mode=ro", uri=True)
        try:
            held += [json.loads(record) for (record,) in db.execute("SELECT record FROM held")]
        except sqlite3.OperationalError:  # being created: its tables are not there yet
            pass
        finally:
            db.close()
    return held


@asynccontextmanager
async def in_callbacks(logger: Any) -> AsyncIterator[Any]:
    """``logger`` in LiteLLM's callbacks, as a proxy's config installs it; taken out of
    LiteLLM's own lists afterwards (it keeps one logger per type there, so the next
    test's would otherwise never be called)."""
    import litellm

    before = list(litellm.callbacks)
    litellm.callbacks = [*before, logger]
    try:
        yield logger
    finally:
        litellm.callbacks = before
        litellm.logging_callback_manager.remove_callback_from_all_lists(logger)


async def reported(check: Callable[[], Any], what: str = "the plugin to report") -> None:
    """Wait on progress: LiteLLM runs some hooks in the background."""
    await until(what, check, timeout=60, every=0.02)
