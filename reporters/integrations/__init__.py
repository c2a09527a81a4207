"""Plugins for the gateways people already run, reporting through a durable spool:
:mod:`reporters.integrations.litellm` (extra ``litellm``)."""
