"""Helpers for the LiteLLM plugin's tests: a model provider on loopback that speaks the
OpenAI API (its answers built with the openai library's own types), the plugin installed
in LiteLLM's callbacks, and the facts in the workers' spools."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web

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


async def _stream(request: web.Request, model: str) -> web.StreamResponse:
    """A streamed answer, "4" then "2"; ``breaks-mid-stream`` drops the connection after
    its first chunk, as a provider that fails mid-answer does."""
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(chunk(model, "4"))
    if model == "breaks-mid-stream":
        assert request.transport is not None
        request.transport.abort()
        return response
    await response.write(chunk(model, "2"))
    await response.write(b"data: [DONE]\n\n")
    return response


async def _chat(request: web.Request) -> web.StreamResponse:
    """``/v1/chat/completions`` by model name: ``status-NNN`` answers that status with
    an OpenAI error body, ``hang`` never answers, any other model answers "42" (streamed
    when asked: :func:`_stream`)."""
    body = await request.json()
    model = str(body["model"])
    if body.get("stream") and not model.startswith("status-"):
        return await _stream(request, model)
    if model.startswith("status-"):
        status = int(model.removeprefix("status-"))
        return web.json_response({"error": {"message": f"the provider says {status}",
                                            "type": "provider_error", "code": str(status)}},
                                 status=status)
    if model == "hang":  # until the server stops (the caller has long given up)
        await request.app[STOPPING].wait()
        raise web.HTTPServiceUnavailable()
    return web.json_response(completion(model))


STOPPING = web.AppKey("stopping", asyncio.Event)


async def _stopping(app: web.Application) -> None:
    app[STOPPING].set()


def provider_app() -> web.Application:
    """A model provider speaking the OpenAI chat API, under ``/v1``."""
    app = web.Application()
    app[STOPPING] = asyncio.Event()
    app.on_shutdown.append(_stopping)
    app.router.add_post("/v1/chat/completions", _chat)
    return app


def worker_facts(spool_dir: Path) -> list[dict[str, Any]]:
    """Every fact waiting in the workers' spools under ``spool_dir`` (``worker-0``, …)."""
    return [fact for slot in sorted(spool_dir.glob("worker-*"))
            for fact in spooled_facts(slot)]


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
