"""``bureau admin`` end to end against a live bureau (issue 24, row 2): every admin
payload signed with the admin key file and posted, the bureau's answer printed, a refusal
exit 1 with its reason code; and ``bureau-reporter keygen``/``keyid`` with the client
library alone."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import asyncpg
import pytest

from bureau.scoring.policy import KNOWN_POLICIES, policy_hash
from reporters import wire
from reporters.models import PAYLOAD_MODELS
from tests.cli.test_commands import bureau_cli_async
from tests.copy import assert_plain
from tests.intake.world import live_parties
from tests.processes import free_port
from tests.support import BureauUnderTest, fact_payload, kid

pytestmark = pytest.mark.slow


def _admin_env(bureau: BureauUnderTest, tmp_path: Path) -> dict[str, str]:
    """The admin's key where ``bureau admin`` looks by default, and the bureau's URL."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "admin.key").write_text(wire.key_to_pem(bureau.admin))
    return {"PATH": "/usr/bin:/bin", "BUREAU_HOME": str(home), "BUREAU_URL": bureau.url}


async def admin(bureau: BureauUnderTest, tmp_path: Path,
                *args: str) -> subprocess.CompletedProcess[str]:
    return await bureau_cli_async("admin", *args, env=_admin_env(bureau, tmp_path))


def reporter_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reporters.proxy.cli", *args],
                          capture_output=True, text=True, timeout=60)


async def _kinds(bureau: BureauUnderTest) -> list[str]:
    conn = await asyncpg.connect(bureau.database_url)
    try:
        return [r["kind"] for r in await conn.fetch("SELECT kind FROM entries ORDER BY seq")]
    finally:
        await conn.close()


async def test_register_reporter_from_its_key_file_then_its_facts_are_taken(
        bureau: BureauUnderTest, tmp_path: Path) -> None:
    made = reporter_cli("keygen", str(tmp_path / "gw.key"))
    assert made.returncode == 0, made.stderr
    gw = made.stdout.strip()
    assert reporter_cli("keyid", str(tmp_path / "gw.key")).stdout.strip() == gw
    again = reporter_cli("keygen", str(tmp_path / "gw.key"))
    assert again.returncode == 1 and "exists; not overwriting" in again.stderr
    done = await admin(bureau, tmp_path, "register-reporter", str(tmp_path / "gw.key"),
                       "--name", "gateway one", "--operator", "Example", "--roles",
                       "facts,probes")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "accepted"
    key = wire.key_from_pem((tmp_path / "gw.key").read_text())
    agent = kid(wire.generate_key())
    await bureau.accepted(key, "fact", fact_payload("cli-admin-1", agent))  # a reporter now

    distrusted = await admin(bureau, tmp_path, "distrust", gw, "--name", "gateway one",
                             "--operator", "Example", "--from", "now")
    assert distrusted.returncode == 0, distrusted.stderr
    lifted = await admin(bureau, tmp_path, "distrust", gw, "--name", "gateway one",
                         "--operator", "Example", "--lift")
    assert lifted.returncode == 0, lifted.stderr
    assert (await _kinds(bureau)).count("reporter") == 3


async def test_resolve_seal_and_policy(bureau: BureauUnderTest, tmp_path: Path) -> None:
    parties = await live_parties(bureau)
    done = await admin(bureau, tmp_path, "resolve", parties.dispute_entry, "--decision",
                       "EXCLUDED", "--reason", "the gateway misread the call")
    assert done.returncode == 0, done.stderr
    assert "resolution" in await _kinds(bureau)
    sealed = await admin(bureau, tmp_path, "seal")
    assert sealed.returncode == 0, sealed.stderr
    chosen = await admin(bureau, tmp_path, "policy", "v1")  # from the next epoch
    assert chosen.returncode == 0, chosen.stderr
    stale = await admin(bureau, tmp_path, "policy", policy_hash(KNOWN_POLICIES["v2"]),
                        "--from-epoch", "0")
    assert stale.returncode == 1
    assert json.loads(stale.stdout)["code"] == "STALE_UPDATE"
    assert "refused (422): STALE_UPDATE at '/from_epoch'" in stale.stderr
    assert_plain(done.stdout + sealed.stdout + chosen.stdout + stale.stdout + stale.stderr)
    unknown = await admin(bureau, tmp_path, "policy", "v9")
    assert unknown.returncode == 2 and "a policy this bureau knows" in unknown.stderr


async def test_pool(bureau: BureauUnderTest, tmp_path: Path) -> None:
    seconds = bureau.config.epoch_seconds
    before = int(time.time()) // seconds + 1
    printed = await admin(bureau, tmp_path, "pool", "1000", "--print")  # the next epoch
    after = int(time.time()) // seconds + 1
    assert printed.returncode == 0, printed.stderr
    envelope = json.loads(printed.stdout)
    assert envelope["payloadType"] == wire.payload_type("pool")
    payload = json.loads(wire.b64decode_canonical(envelope["payload"]))
    assert set(payload) == {"units", "from_epoch", "issued_at"}
    assert payload["units"] == 1000
    assert before <= payload["from_epoch"] <= after
    opened = await admin(bureau, tmp_path, "pool", "1000")
    assert opened.returncode == 0, opened.stderr
    assert json.loads(opened.stdout)["status"] == "accepted"
    assert (await _kinds(bureau))[-1] == "pool"
    stale = await admin(bureau, tmp_path, "pool", "5", "--from-epoch", "0")
    assert stale.returncode == 1
    assert json.loads(stale.stdout)["code"] == "STALE_UPDATE"
    assert "refused (422): STALE_UPDATE at '/from_epoch'" in stale.stderr
    huge = await admin(bureau, tmp_path, "pool", str(10**15 + 1))
    assert huge.returncode == 2 and "0 to 10^15" in huge.stderr


async def test_keys_payload_is_revision_3s(bureau: BureauUnderTest, tmp_path: Path) -> None:
    new_signing = tmp_path / "signing-2.key"
    new_signing.write_text(wire.key_to_pem(wire.generate_key()))
    other_admin = kid(wire.generate_key())
    args = ("keys", "--bureau", str(new_signing), "--admins",
            f"{tmp_path / 'home' / 'admin.key'},{other_admin}")
    printed = await admin(bureau, tmp_path, *args, "--print")
    assert printed.returncode == 0, printed.stderr
    envelope = json.loads(printed.stdout)
    assert envelope["payloadType"] == wire.payload_type("keys")
    assert envelope["signatures"][0]["keyid"] == kid(bureau.admin)
    payload = json.loads(wire.b64decode_canonical(envelope["payload"]))
    assert set(payload) == {"bureau", "admins", "issued_at"}
    assert payload["bureau"] == wire.signing_key_id(wire.key_from_pem(new_signing.read_text()))
    assert payload["admins"] == [kid(bureau.admin), other_admin]
    posted = await admin(bureau, tmp_path, *args)
    if "keys" in PAYLOAD_MODELS:  # the bureau takes revision 3's key rotation
        assert posted.returncode == 0, posted.stderr
        assert (await _kinds(bureau))[-1] == "keys"
    else:  # not yet on this branch: refused as a type the bureau does not know
        assert posted.returncode == 1
        assert json.loads(posted.stdout)["code"] == "UNKNOWN_PAYLOAD_TYPE"


async def test_unusable_arguments_and_an_unreachable_bureau(bureau: BureauUnderTest,
                                                            tmp_path: Path) -> None:
    bad = await admin(bureau, tmp_path, "register-reporter", "nobody", "--name", "x",
                      "--operator", "y")
    assert bad.returncode == 2 and "neither a key id" in bad.stderr
    roles = await admin(bureau, tmp_path, "register-reporter", kid(wire.generate_key()),
                        "--name", "x", "--operator", "y", "--roles", "facts,admin")
    assert roles.returncode == 2 and "--roles" in roles.stderr
    down = await admin(bureau, tmp_path, "seal", "--url", f"http://127.0.0.1:{free_port()}")
    assert down.returncode == 2 and "cannot reach" in down.stderr
    assert "Traceback" not in down.stderr + bad.stderr + roles.stderr


def test_key_tools_need_only_the_client_library(tmp_path: Path) -> None:
    """``bureau-reporter keygen``/``keyid`` import nothing of the service (a client-only
    install has no ``bureau`` package)."""
    code = ("import sys; from reporters.proxy import cli; "
            f"rc = cli.main(['keygen', {str(tmp_path / 'k.key')!r}]); "
            "assert not [m for m in sys.modules if m == 'bureau' or m.startswith('bureau.')]; "
            "sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == wire.signing_key_id(
        wire.key_from_pem((tmp_path / "k.key").read_text()))
