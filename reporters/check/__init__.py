"""``bureau-check``: verify what a bureau publishes, from anywhere, with nothing but its
public routes and (for an agent's own file) the agent's key — no database, no service
code. In the manner of ``rekor-cli verify`` and Sigstore's monitors:

* :mod:`~reporters.check.bureau` — the bureau's routes, each answer read capped and within
  the timeout, and which keys are trusted (the key history ``/v1/bureau`` serves, holding
  the pinned key if one is pinned; the output says which);
* :mod:`~reporters.check.checks` — each check, step by step: a report, an entry's
  inclusion, consistency between two checkpoints, an agent's file against its report;
* :mod:`~reporters.check.monitor` — follow ``/checkpoint`` and keep the last verified
  head in a state file;
* :mod:`~reporters.check.text` — a bureau's text printed as one printable line;
* :mod:`~reporters.check.cli` — the command. docs/transparency.md documents it.
"""
