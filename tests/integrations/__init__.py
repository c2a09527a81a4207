"""Tests of the gateway plugins (reporters/integrations) driven by their own software.

LiteLLM reads its model cost map from the package, not from the network, here and in the
LiteLLM proxies these tests start (they inherit the environment)."""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
