"""``bureau simulate`` (docs/simulation.md): argument parsing and the command itself,
kept here so that bureau/cli/parser.py only names it."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path

from bureau.scoring.policy import DEFAULT_POLICY_NAME, KNOWN_POLICIES
from bureau.simulate.driver import Options, Target, simulate
from bureau.simulate.progress import Progress
from bureau.simulate.render import as_json, findings, render
from reporters import BureauClientError, load_key


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", help="a running bureau (default: start one in this process, "
                   "on the embedded database in a temporary BUREAU_HOME)")
    p.add_argument("--admin-key", help="with --url: an admin key file of that bureau "
                   "(default: $BUREAU_HOME/admin.key)")
    p.add_argument("--agents", type=int, default=8, help="agents behind the proxy (≥ 4)")
    p.add_argument("--interactions", type=int, default=400,
                   help="sessions in all, spread over the epochs")
    p.add_argument("--epochs", type=int, default=3, help="epochs to run and seal")
    p.add_argument("--seed", type=int, default=1, help="fixes every random choice")
    p.add_argument("--pool", type=int, default=1000,
                   help="the evaluators' pool of each epoch, in units (0: none)")
    p.add_argument("--epoch-seconds", type=int, default=3,
                   help="epoch length of the in-process bureau")
    p.add_argument("--adversarial", action="store_true",
                   help="play every attack of the adversarial suite instead, and print per "
                   "attack baseline -> attacked, the change, its goal and whether it held")
    p.add_argument("--accuracy", action="store_true",
                   help="measure every policy's scores against the agents' true quality "
                   "at each ground-truth coverage instead (bench/accuracy_bench.py); "
                   "--seed N runs seeds 1..N")
    p.add_argument("--policy", action="append", choices=sorted(KNOWN_POLICIES),
                   help="the in-process bureau's scoring policy (repeat for several; "
                   f"default: {DEFAULT_POLICY_NAME}, and with --adversarial every policy "
                   "the bureau knows, one bureau each)")
    p.add_argument("--json", action="store_true",
                   help="print the results as one JSON document instead of tables: every "
                   "agent's report payload, the evaluators' records and the findings (with "
                   "--adversarial: per policy, per attack)")
    p.set_defaults(func=run)


def _policies(args: argparse.Namespace) -> list[str]:
    if args.url and args.policy:
        raise ValueError("--policy is for the in-process bureau: a running bureau scores "
                         "with its own ledger's policy")
    if args.policy:
        return list(dict.fromkeys(args.policy))
    return sorted(KNOWN_POLICIES) if args.adversarial else [DEFAULT_POLICY_NAME]


async def _adversarial(args: argparse.Namespace) -> int:
    from bureau.simulate.adversarial import play, play_policies, render_runs, runs_json

    policies = _policies(args)
    if args.url:
        home = Path(os.environ.get("BUREAU_HOME", ".bureau"))
        admin = load_key(args.admin_key or home / "admin.key")
        runs = [await play(Target(args.url.rstrip("/"), admin))]
    else:
        runs = await play_policies(policies, args.epoch_seconds)
    print(json.dumps(runs_json(runs), indent=2) if args.json else render_runs(runs))
    # The goals are set for the default policy; other policies are shown beside it.
    judged = [r for r in runs if r.policy == DEFAULT_POLICY_NAME] or runs
    return 0 if all(row.held for r in judged for row in r.rows) else 1


def _accuracy(args: argparse.Namespace) -> int:
    from bureau.simulate.accuracy.run import add_arguments, main

    if args.url:
        raise ValueError("--accuracy starts a bureau of its own (it needs fresh ledgers)")
    defaults = argparse.ArgumentParser()
    add_arguments(defaults)
    options = defaults.parse_args([])
    options.seeds = args.seed
    options.agents = max(args.agents, 24)
    if args.policy:
        options.bureau_policy = args.policy[0]
    return main(options)


async def _main(args: argparse.Namespace) -> int:
    if args.adversarial:
        return await _adversarial(args)
    policies = _policies(args)
    if len(policies) > 1:
        raise ValueError("the simulation runs one policy at a time (--adversarial runs "
                         "several)")
    options = Options(agents=args.agents, interactions=args.interactions,
                      epochs=args.epochs, seed=args.seed, pool=args.pool)
    progress = Progress()
    try:
        if args.url:
            home = Path(os.environ.get("BUREAU_HOME", ".bureau"))
            admin = load_key(args.admin_key or home / "admin.key")
            result = await simulate(options, Target(args.url.rstrip("/"), admin), progress)
        else:
            from bureau.simulate.local import local_bureau

            async with local_bureau(args.epoch_seconds, policies[0]) as target:
                result = await simulate(options, target, progress)
    finally:
        progress.finish()
    print(json.dumps(as_json(result), indent=2) if args.json else render(result))
    return 0 if all(findings(result).values()) else 1


def run(args: argparse.Namespace) -> int:
    # The bureau's and the proxy's own logs would tear the progress bar.
    for name in ("bureau", "reporters", "aiohttp.access"):
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        if args.accuracy:
            return _accuracy(args)
        return asyncio.run(_main(args))
    except (ValueError, OSError, TimeoutError, BureauClientError) as exc:
        print(f"bureau simulate: {exc}", file=sys.stderr)
        return 2
