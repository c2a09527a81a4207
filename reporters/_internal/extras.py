"""The client's optional parts: which extra brings which package, and what to install
when one is missing.

The client is the ``bureau-reporters`` distribution, built from ``./client`` in a
checkout (``pip install './client[proxy]'``); the whole project, service included, is
``agent-reputation-bureau``, built from the checkout's root (``pip install '.[mcp]'``),
whose own dependencies already include everything of the client's ``proxy`` extra.
Neither is published on a package index, so an install line names the directory.
tests/client/test_install_names.py holds this table to both pyproject.toml files.
"""

from __future__ import annotations

import functools
import importlib

#: The client's extras, and a module of each that tells whether it is installed.
EXTRA_MODULES = {
    "proxy": ("jsonschema", "prometheus_client"),
    "a2a": ("a2a.client", "jwt"),
    "mcp": ("mcp.types",),
    "otlp": ("opentelemetry.proto",),
    "litellm": ("litellm",),
    "erc8004": ("eth_abi", "eth_utils"),
}
#: Top-level module -> the client extra that brings it.
MODULE_EXTRA = {m.split(".")[0]: extra for extra, mods in EXTRA_MODULES.items()
                for m in mods} | {"google": "otlp", "httpx2": "mcp", "eth_hash": "erc8004"}
#: The whole project's extras (the client's ``proxy`` extra is in its own dependencies).
PROJECT_EXTRAS = frozenset(EXTRA_MODULES) - {"proxy"}


@functools.cache
def installed(extra: str) -> bool:
    """Whether every module of the client's ``extra`` can be imported."""
    try:
        for module in EXTRA_MODULES[extra]:
            importlib.import_module(module)
    except ImportError:
        return False
    return True


def install_hint(*extras: str) -> str:
    """How to install the client with ``extras`` (and the whole project with those of
    them it has), in words a user can paste."""
    wanted = sorted(set(extras), key=list(EXTRA_MODULES).index)
    client = f"'./client[{','.join(wanted)}]'" if wanted else "./client"
    project = [e for e in wanted if e in PROJECT_EXTRAS]
    whole = f"'.[{','.join(project)}]'" if project else "."
    return (f"pip install {client} (the bureau-reporters client, from a checkout), or "
            f"pip install {whole} (the whole project, agent-reputation-bureau)")


def extra_of(missing: str) -> str | None:
    """The client extra that brings the module ``missing`` (a dotted name), if any."""
    return MODULE_EXTRA.get(missing.split(".")[0])
