"""Internals of the client library. Nothing here is public API: import from
:mod:`reporters` instead."""
