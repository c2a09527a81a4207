"""``reporters.prober``: ``bureau-reporter probe``, a prober that needs no probe library
(docs/probing.md). It sends agents tasks from :mod:`reporters.probing` as ordinary calls
(A2A ``message/send``, or plain HTTP by a request template), checks the answers and
reports ``probe`` entries, with the fact of each call, through a durable spool."""

from reporters.prober.config import ProbeConfig, Request, Response, Route, from_mapping
from reporters.prober.runner import Prober

__all__ = ["ProbeConfig", "Prober", "Request", "Response", "Route", "from_mapping"]
