"""Scores against the truth (issue 23, docs/scoring.md "Choosing the parameters"): a
population of known true quality, honest callers and the attack catalogue's adversaries,
played through a live in-process bureau (HTTP on loopback, the embedded PostgreSQL) at
each ground-truth coverage; every known policy, the two anchors and the sampling
ceiling measured on the same ledgers.

    .venv/bin/python bench/accuracy_bench.py [--seeds 3] [--coverages 0,0.02,...]
        [--save FILE | --load FILE] [--policy-file doc.json]
"""

from __future__ import annotations

import argparse
import logging
import sys

from bureau.simulate.accuracy.run import add_arguments, main

if __name__ == "__main__":
    for name in ("bureau", "reporters", "aiohttp.access"):
        logging.getLogger(name).setLevel(logging.WARNING)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(parser)
    sys.exit(main(parser.parse_args()))
