"""``reporters.otlp``: an OTLP/HTTP trace receiver that turns agent-invocation spans into
facts (docs/proxy.md, "The OTLP receiver"). Run it with ``bureau-reporter otlp``; it
needs the ``otlp`` extra (``opentelemetry-proto``) and the ``proxy`` one."""

from reporters.otlp.config import OtlpConfig, from_mapping
from reporters.otlp.receiver import RECEIVER, TRACES_PATH, Receiver

__all__ = ["RECEIVER", "TRACES_PATH", "OtlpConfig", "Receiver", "from_mapping"]
