"""Real OpenTelemetry instrumentation exporting to the receiver, end to end on loopback:
pydantic-ai's own instrumentation of an agent run (a test model, no network), and
``opentelemetry-instrumentation-openai-v2`` around the ``openai`` client calling a local
OpenAI-compatible server (tests/integrations/support.py: the openai library's own types). Spans go
out through the SDK's BatchSpanProcessor and OTLP/HTTP exporter, as in a deployment.
Each call is counted, and the facts that landed are held to what happened (issue 32)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tests.client.helpers import DEAD_URL
from tests.integrations.support import provider_app
from tests.otlp.support import RunningReceiver, running_receiver, spooled_facts
from tests.proxy.support import new_agent
from tests.support import missing, serving

AGENT = new_agent()
NAMES = {"agent_names": {"Math Tutor": AGENT}}


@asynccontextmanager
async def exporting(tmp: Path) -> AsyncIterator[tuple[RunningReceiver, TracerProvider]]:
    """A receiver, and a tracer provider exporting to it the way a deployment does (a
    batch processor, the SDK's OTLP/HTTP exporter in protobuf)."""
    async with running_receiver(tmp, DEAD_URL, drain_seconds=0, **NAMES) as r:
        provider = TracerProvider()
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=r.url,
                                                                        timeout=10)))
        try:
            yield r, provider
        finally:
            await asyncio.to_thread(provider.shutdown)


async def exported(provider: TracerProvider) -> None:
    """Every span ended so far is exported and answered (the exporter is synchronous:
    it runs off the loop the receiver answers on)."""
    assert await asyncio.to_thread(provider.force_flush, 30_000)


# --------------------------------------------------------------------------- pydantic-ai

async def test_pydantic_ai_runs_that_succeed_and_raise(tmp_path: Path) -> None:
    try:
        from pydantic_ai import Agent
        from pydantic_ai.models.function import AgentInfo, FunctionModel
        from pydantic_ai.models.instrumented import InstrumentationSettings
        from pydantic_ai.models.test import TestModel
    except ImportError:
        missing("pydantic-ai-slim is not installed (the test extra; .ci/run installs it)")

    def broken_model(messages: list[Any], info: AgentInfo) -> Any:
        raise ValueError("the model's answer could not be used")

    def agent(model: Any, settings: InstrumentationSettings) -> Any:
        try:  # pydantic-ai 2: instrumentation is a capability; 1: the instrument argument
            from pydantic_ai.capabilities import Instrumentation
        except ImportError:
            return Agent(model, name="Math Tutor", instrument=settings)
        return Agent(model, name="Math Tutor",
                     capabilities=[Instrumentation(settings=settings)])

    async with exporting(tmp_path) as (r, provider):
        settings = InstrumentationSettings(tracer_provider=provider)
        good = agent(TestModel(custom_output_text="42"), settings)
        bad = agent(FunctionModel(broken_model), settings)
        assert (await good.run("What is 6 x 7?")).output == "42"
        with pytest.raises(ValueError, match="could not be used"):
            await bad.run("What is 6 x 7?")
        await exported(provider)
        ignored = await r.metric("bureau_otlp_spans_total", result="ignored")
    facts = spooled_facts(tmp_path / "spool")
    # two runs, two facts: the run span; the model requests' chat spans are not agents'
    assert [(f["subject"], f["answered"], f["claimed"]) for f in facts] == [
        (AGENT, True, None), (AGENT, True, "FAILURE")]
    assert all(isinstance(f["latency_ms"], int) for f in facts)
    assert ignored == 2


# --------------------------------------------------------------------------- openai-v2

@contextmanager
def openai_instrumented(provider: TracerProvider) -> Iterator[None]:
    try:
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    except ImportError as exc:
        missing(f"opentelemetry-instrumentation-openai-v2 cannot be imported ({exc}; the "
                "test extra; .ci/run installs it)")
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()


async def test_an_llm_client_alone_reports_nothing_and_an_agent_span_around_it_does(
        tmp_path: Path) -> None:
    """docs/proxy.md, "An LLM client alone reports nothing": the chat spans of the
    openai-v2 instrumentation are no agent's; the agent span the docs show makes one fact
    per call — answered, answered with an error status, or not answered at all."""
    import openai

    async with serving(provider_app()) as model_url, exporting(tmp_path) as (r, provider):
        with openai_instrumented(provider):
            up = openai.AsyncOpenAI(base_url=model_url + "/v1", api_key="x", max_retries=0)
            down = openai.AsyncOpenAI(base_url=DEAD_URL + "/v1", api_key="x", max_retries=0)
            messages: Any = [{"role": "user", "content": "What is 6 x 7?"}]
            alone = await up.chat.completions.create(model="gpt-local", messages=messages)
            assert alone.choices[0].message.content == "42"
            tracer = provider.get_tracer("a-gateway")
            for client, model in ((up, "gpt-local"), (up, "status-500"), (down, "gpt-local")):
                # the docs' recipe, as written there (the error is the caller's business)
                with contextlib.suppress(openai.APIError), tracer.start_as_current_span(
                        "invoke_agent Math Tutor", kind=trace.SpanKind.CLIENT,
                        attributes={"gen_ai.operation.name": "invoke_agent",
                                    "gen_ai.agent.name": "Math Tutor"}) as span:
                    try:
                        await client.chat.completions.create(model=model, messages=messages)
                    except openai.APIStatusError as exc:  # it answered, with an error
                        span.set_attribute("http.response.status_code", exc.status_code)
                        raise
        await up.close()
        await down.close()
        await exported(provider)
        ignored = await r.metric("bureau_otlp_spans_total", result="ignored")
    facts = spooled_facts(tmp_path / "spool")
    # four calls: the one no agent span wraps is no fact; each wrapped one is one
    assert [(f["answered"], f["claimed"], f["latency_ms"] is None) for f in facts] == [
        (True, None, False), (True, None, False), (False, None, True)]
    assert ignored == 4  # the chat spans
