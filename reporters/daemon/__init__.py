"""``reporters.daemon``: the kit every long-running reporter is built with — the proxy
(``reporters.proxy``), the OTLP receiver (``reporters.otlp``) and the prober
(``reporters.prober``); and the head deadline of ``bureau serve``'s port.

* :mod:`~reporters.daemon.config` — a configuration file read, flags laid over it, the
  fields every reporter needs, checked the same way everywhere (:class:`ConfigError`
  names the field);
* :mod:`~reporters.daemon.ops` — the ops listener (``/healthz``, ``/readyz``,
  ``/metrics``), the address a runner bound, the signals that stop a daemon;
* :mod:`~reporters.daemon.deadlines` — head and body deadlines for an aiohttp listener
  (:class:`DeadlineRunner`), the keep-alive held to the head deadline;
* :mod:`~reporters.daemon.ids` — interaction ids unique per daemon across restarts.

None of them imports a daemon: the daemons import them (tests/structure/test_layers.py).
"""
