"""``bureau simulate --accuracy`` and ``bench/accuracy_bench.py`` (issue 23): scores
measured against the truth. :mod:`.population` — agents of known quality, callers and
adversaries, a seeded plan; :mod:`.play` — the plan through a live bureau;
:mod:`.measure` — τ, error, intervals, weight shares, the anchors and the ceiling;
:mod:`.run` — the sweep over seeds, coverages and mixes, and its tables."""
