"""The plugin reading failures from LiteLLM's failure event alone, as it does on a
LiteLLM before 1.100 (which has no per-attempt hook): for a real LiteLLM proxy to load
beside the plugin, from the proxy's config directory (tests/integrations/
test_litellm_proxy_attempts.py copies this file there), with a config and a spool of its
own — :data:`CONFIG`, beside the plugin's config file, read at the first event."""

from __future__ import annotations

import os
from pathlib import Path

from reporters.integrations.litellm import (
    CONFIG_ENV,
    BureauLogger,
    LiteLLMConfig,
    read_config,
)

CONFIG = "failure-events-only.json"


class FailureEventsOnly(BureauLogger):
    """A class of its own: LiteLLM keeps one logger per class in some of its lists."""

    def __init__(self) -> None:
        super().__init__(attempt_hook=False)
        self._own: LiteLLMConfig | None = None

    @property
    def config(self) -> LiteLLMConfig:
        if self._own is None:
            self._own = read_config(Path(os.environ[CONFIG_ENV]).with_name(CONFIG))
        return self._own


handler = FailureEventsOnly()
