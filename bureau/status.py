"""``bureau status``: where a bureau stands, at a glance (issue 24) — its ledger and
size, the latest sealed epoch and when the next seal is due, the policy, the key, the
witnesses and their last cosignature, the replicas, the leaders, and the spools where
they are known. From the ledger here, or from a running bureau (``--url``, public
routes only: what a reader can know).

:func:`local` and :func:`remote` gather one JSON document; :func:`render` writes it for
a person. Nothing here writes anything.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from bureau import ledger_line
from bureau.config import Config
from bureau.report_text import epoch_start, epoch_text
from bureau.scoring.policy import policy_name_of
from bureau.storage import db, locks, overview
from bureau.storage import heads as head_rows
from bureau.transparency.publisher import PUBLISHER_LOCK
from bureau.views.seal import BUILDER_LOCK
from reporters._internal.wording import count
from reporters.check.bureau import Bureau

#: the bureau's leader roles: the advisory lock each holds (bureau.background.Leadership)
LEADER_LOCKS = {"reports": BUILDER_LOCK, "tree heads": PUBLISHER_LOCK}

#: the gauges of a spool's depth on the ops listener of a proxy, a prober, an OTLP
#: receiver, and on a LiteLLM proxy's /metrics (the plugin's): the bureau never sees a
#: reporter's disk, so a spool is known only where ``--spool`` names its listener
SPOOL_GAUGES = ("bureau_proxy_spool_pending", "bureau_probe_spool_pending",
                "bureau_otlp_spool_pending", "bureau_litellm_spool_pending")


def spool_depth(exposition: str) -> int | None:
    """The spool depth a ``/metrics`` text gives: the sum of its spool gauges' samples
    (a LiteLLM proxy's workers each have their own spool), None when it has none."""
    samples = [s.value for family in text_string_to_metric_families(exposition)
               for s in family.samples if s.name in SPOOL_GAUGES]
    return int(sum(samples)) if samples else None


async def spools(urls: list[str]) -> list[dict[str, Any]]:
    """The spool depth each ops listener's ``/metrics`` gives (None: unreachable)."""
    out: list[dict[str, Any]] = []
    async with aiohttp.ClientSession() as session:
        for url in urls:
            depth: int | None = None
            error = None
            try:
                async with session.get(url.rstrip("/") + "/metrics",
                                       timeout=aiohttp.ClientTimeout(total=10)) as resp:
                    text = await resp.text()
                depth = spool_depth(text)
                if depth is None:
                    error = "no spool gauge in its /metrics"
            except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                error = f"unreachable: {exc or type(exc).__name__}"
            except ValueError as exc:  # not the Prometheus text format
                error = f"its /metrics cannot be read: {exc}"
            out.append({"url": url, "pending": depth, "error": error})
    return out


def _time(t: dt.datetime | float | None) -> str | None:
    if t is None:
        return None
    if isinstance(t, float | int):
        t = dt.datetime.fromtimestamp(t, dt.UTC)
    return t.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def seal_plan(now: dt.datetime, epoch_seconds: int, next_busy: int | None) -> dict[str, Any]:
    """When the next seal is due (pure: the clock is the caller's). ``next_busy`` is the
    oldest epoch with an entry (other than a seal) after the latest seal: an epoch is
    sealed once it is over *and* something was recorded in it, so a quiet bureau has
    none due."""
    if next_busy is None:
        return {"epoch": None, "due": None, "overdue": False,
                "why": "nothing recorded since the latest seal: the next entry starts one"}
    overdue = next_busy < int(now.timestamp()) // epoch_seconds
    return {"epoch": next_busy, "due": _time(epoch_start(next_busy + 1, epoch_seconds)),
            "overdue": overdue,
            "why": "its epoch is over; the settler seals it within seconds of running"
            if overdue else "when its epoch ends"}


async def local(conn: db.Connection, config: Config,
                now: dt.datetime | None = None) -> dict[str, Any]:
    """The status of the ledger on ``conn`` (a primary: replicas and leaders are its)."""
    from bureau.evidence.policies import current_policy
    from bureau.intake import genesis

    now = now or dt.datetime.now(dt.UTC)
    place = ledger_line.where(config)
    summary = await ledger_line.summary(conn, place)
    settings = await genesis.read(conn) if summary.epoch_seconds is not None else None
    doc: dict[str, Any] = {"source": f"ledger at {place}", "entries": summary.entries,
                           "database_bytes": await overview.database_bytes(conn)}
    if settings is None:
        return doc | {"epoch_seconds": None, "latest_sealed": None, "next_seal": None}
    seconds = settings.epoch_seconds
    backlog = await overview.backlog(conn)
    digest = await current_policy(conn, now, seconds)
    doc.update(epoch_seconds=seconds, origin=settings.origin,
               last_entry_at=_time(backlog.last_at),
               latest_sealed=_sealed(summary.sealed, seconds, backlog.sealed_at),
               next_seal=seal_plan(now, seconds, backlog.next_busy),
               policy={"hash": digest, "name": policy_name_of(digest)},
               key=getattr(settings, "key", None) or _signing_key_id(config),
               witnesses=await _witnesses(conn, config),
               replicas=await _replicas(conn, config), leaders=await _leaders(conn))
    return doc


def _sealed(epoch: int | None, seconds: int, sealed_at: dt.datetime | None
            ) -> dict[str, Any] | None:
    if epoch is None:
        return None
    return {"epoch": epoch, "from": _time(epoch_start(epoch, seconds)),
            "to": _time(epoch_start(epoch + 1, seconds)), "sealed_at": _time(sealed_at)}


def _signing_key_id(config: Config) -> str | None:
    from bureau import keyfiles
    from reporters import wire

    path = config.signing_key_path or config.home / "signing.key"
    return wire.signing_key_id(keyfiles.read_key(path)) if path.is_file() else None


async def _witnesses(conn: db.Connection, config: Config) -> list[dict[str, Any]]:
    latest = await head_rows.latest_cosigned(conn)
    out = []
    for w in config.witnesses:
        c = latest.get(w.verifier.vkey)
        out.append({"name": w.verifier.name, "url": w.url,
                    "last_cosigned_size": c.size if c else None,
                    "last_cosigned_at": _time(c.received_at) if c else None})
    return out


async def _replicas(conn: db.Connection, config: Config) -> dict[str, Any]:
    rows = await overview.replicas(conn)
    return {"reads_from": ledger_line.where(Config(home=config.home,
                                                   database_url=config.read_database_url))
            if config.read_database_url else None,
            "streaming": [r._asdict() for r in rows]}


async def _leaders(conn: db.Connection) -> dict[str, Any]:
    """Who holds each leader's advisory lock."""
    out: dict[str, Any] = {}
    for role, lock in LEADER_LOCKS.items():
        held = await locks.holder(conn, lock)
        out[role] = None if held is None else {
            "pid": held.pid, "address": held.address or "local socket",
            "since": _time(held.since)}
    return out


async def remote(url: str, now: dt.datetime | None = None) -> dict[str, Any]:
    """What the public routes of the bureau at ``url`` say of where it stands."""
    now = now or dt.datetime.now(dt.UTC)
    async with aiohttp.ClientSession() as session:
        bureau = Bureau(url, session)
        info: dict[str, Any] = await bureau.get_object("/v1/bureau", "bureau")
        latest = await bureau.get("/v1/checkpoints/latest", "checkpoint", missing_ok=True)
        note = await bureau.get_text("/checkpoint", "note")
    seconds = int(info["epoch_seconds"])
    sealed = None
    if latest is not None:
        import binascii

        checkpoint = json.loads(binascii.a2b_base64(json.loads(latest)["payload"]))
        sealed = checkpoint["epoch"]
    lines = note.split("\n")
    size = int(lines[1]) if len(lines) > 1 and lines[1].isdigit() else None
    cosigners = sorted({line.split(" ")[1] for line in lines[lines.index("") + 1:]
                        if line.startswith("— ")} - {info.get("origin")}) if "" in lines else []
    return {"source": f"bureau at {bureau.url}", "entries": size, "database_bytes": None,
            "epoch_seconds": seconds, "origin": info.get("origin"), "last_entry_at": None,
            "latest_sealed": _sealed(sealed, seconds, None),
            "next_seal": {"epoch": int(now.timestamp()) // seconds,
                          "due": _time(epoch_start(int(now.timestamp()) // seconds + 1,
                                                   seconds)),
                          "overdue": False, "why": "when this epoch ends, if anything is "
                          "recorded in it: a reader cannot see that"},
            "policy": {"hash": info.get("policy"), "name": policy_name_of(
                str(info.get("policy")))},
            "key": info.get("key"),
            "witnesses": [{"name": n, "url": None, "last_cosigned_size": size,
                           "last_cosigned_at": None} for n in cosigners],
            "replicas": None, "leaders": None}


def render(doc: dict[str, Any], now: dt.datetime | None = None) -> str:
    """The status for a person, one thing a line."""
    now = now or dt.datetime.now(dt.UTC)
    seconds = doc.get("epoch_seconds")
    size = f", {doc['database_bytes'] / 1e6:.1f} MB" if doc.get("database_bytes") else ""
    out = [f"{doc['source']}, {count(doc['entries'] or 0, 'entry')}{size}"]
    if seconds is None:
        out.append("no genesis entry yet: the first `bureau serve` writes it")
        return "\n".join(out)
    out.append(f"epochs     {seconds} s")
    sealed = doc["latest_sealed"]
    if sealed is None:
        out.append("sealed     nothing yet")
    else:
        line = f"sealed     {epoch_text(sealed['epoch'], seconds)}, to {sealed['to']}"
        if sealed.get("sealed_at"):
            line += f", sealed at {sealed['sealed_at']}"
        out.append(line)
    plan = doc["next_seal"]
    if plan["epoch"] is None:
        since = doc.get("last_entry_at")
        out.append("next seal  none due: " + plan["why"]
                   + (f" (no activity since {since})" if since else ""))
    else:
        out.append(f"next seal  {epoch_text(plan['epoch'], seconds)}, "
                   f"{'OVERDUE since' if plan['overdue'] else 'due at'} {plan['due']} "
                   f"({plan['why']})")
    policy = doc["policy"]
    out.append(f"policy     {policy['name'] or 'unknown'} ({policy['hash']})")
    out.append(f"key        {doc['key']}")
    out.extend(_others(doc))
    return "\n".join(out)


def _others(doc: dict[str, Any]) -> list[str]:
    """The lines of what stands beside the ledger: witnesses, replicas, leaders, spools."""
    out: list[str] = []
    if not doc["witnesses"]:
        out.append("witnesses  none (BUREAU_WITNESSES)")
    for w in doc["witnesses"]:
        last = ("no cosignature yet" if w["last_cosigned_size"] is None else
                f"last cosigned tree size {w['last_cosigned_size']}"
                + (f" at {w['last_cosigned_at']}" if w["last_cosigned_at"] else ""))
        out.append(f"witness    {w['name']}{' ' + w['url'] if w['url'] else ''}: {last}")
    replicas = doc["replicas"]
    if replicas is None:
        out.append("replicas   not known from outside (run bureau status where the ledger is)")
    else:
        reads = replicas["reads_from"] or "none: reads go to the primary"
        out.append(f"replicas   reads from {reads}; "
                   f"{count(len(replicas['streaming']), 'standby', 'standbys')} streaming")
        for r in replicas["streaming"]:
            lag = r["replay_lag_seconds"]
            out.append(f"           {r['name'] or r['address']}: {r['state']}"
                       + (f", replay lag {lag:.3f} s" if lag is not None else ""))
    leaders = doc["leaders"]
    if leaders is None:
        out.append("leaders    not known from outside")
    else:
        for role, who in leaders.items():
            out.append(f"leader     {role}: " + ("none (no bureau running)" if who is None
                       else f"pid {who['pid']} ({who['address']}), since {who['since']}"))
    if not doc.get("spools"):
        out.append("spools     not known here (bureau status --spool OPS_URL, each proxy's "
                   "or prober's ops listener)")
    for sp in doc.get("spools") or []:
        out.append(f"spool      {sp['url']}: " + (sp["error"] or
                   f"{count(sp['pending'], 'envelope')} waiting for the bureau"))
    return out
