"""The static mirror (SPEC §9.1 r4; docs/operations.md, "A static mirror"): every
public read written as files under the paths of :mod:`reporters.layout`, atomically,
full tiles never rewritten, resumable after a kill: ``files`` (the directory and its
writes), ``tiles``, ``documents`` (each epoch's and each agent's reads, the pages,
``/v1/bureau``), ``sync`` (one pass, and the task of ``bureau serve --mirror``)."""
