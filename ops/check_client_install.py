"""The client alone, installed as a user would (issue 32, "Install names that work").

Makes a fresh virtual environment, installs ``./client`` in it with its smallest
documented extra — none: ``pip install ./client`` (reporters/README.md, "Installing") —
and runs there, as a user would:

* ``bureau-reporter --help`` and every subcommand's ``--help``;
* ``keygen`` and ``keyid`` (they need no extra);
* ``proxy``, ``probe`` and ``otlp``, which need extras this install lacks: each must stop
  with exit status 2 and a line naming the extra to install, never a traceback.

``.ci/run`` runs it. Exit status 0 when all of that holds; 1 otherwise, saying what did
not; 3 when pip could not reach a package index (said, not failed: CI's own install
steps report the registry's absence the same way).

    python ops/check_client_install.py [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUBCOMMANDS = ("proxy", "resend", "probe", "otlp", "keygen", "keyid")
#: subcommand -> the extras its missing-extra line must name, and the arguments that
#: make it start far enough to need them
NEEDS_EXTRA = {"proxy": ("'./client[proxy]'", ["--key", "gw.key", "--bureau",
                                                "http://127.0.0.1:9", "--spool", "spool"]),
               "probe": ("'./client[proxy]'", ["--config", "empty.json"]),
               "otlp": ("'./client[proxy,otlp]'", ["--config", "empty.json"])}
NETWORK_TROUBLE = ("Could not find a version", "No matching distribution",
                   "Failed to establish a new connection", "Temporary failure in name",
                   "Network is unreachable")


def install(where: Path) -> Path:
    """A new venv with ``pip install <a copy of client/>``; its bin directory."""
    source = where / "src"
    shutil.copytree(ROOT / "client", source / "client")
    shutil.copytree(ROOT / "reporters", source / "reporters",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    venv.create(where / "venv", with_pip=True)
    bin_dir = where / "venv" / "bin"
    done = subprocess.run([str(bin_dir / "python"), "-m", "pip", "install", "-q",
                           "--disable-pip-version-check", str(source / "client")],
                          capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        out = done.stdout + done.stderr
        if any(s in out for s in NETWORK_TROUBLE):
            print(f"check_client_install: pip cannot reach a package index:\n{out[-600:]}")
            sys.exit(3)
        sys.exit(f"check_client_install: pip install ./client failed:\n{out}")
    return bin_dir


def run(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(bin_dir / "bureau-reporter"), *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)


def check(bin_dir: Path, cwd: Path) -> list[str]:
    """What does not work as documented; empty when everything does."""
    wrong = []
    for args in ([], *([c] for c in SUBCOMMANDS)):
        done = run(bin_dir, cwd, *args, "--help")
        if done.returncode != 0 or "usage: bureau-reporter" not in done.stdout:
            wrong.append(f"bureau-reporter {' '.join(args)} --help: exit {done.returncode}"
                         f"\n{done.stderr}")
    made = run(bin_dir, cwd, "keygen", "gw.key")
    again = run(bin_dir, cwd, "keyid", "gw.key")
    if made.returncode != 0 or not made.stdout.startswith("ed25519:"):
        wrong.append(f"keygen: exit {made.returncode}\n{made.stderr}")
    elif (again.returncode, again.stdout) != (0, made.stdout):
        wrong.append(f"keyid: exit {again.returncode}, {again.stdout!r}\n{again.stderr}")
    (cwd / "empty.json").write_text("{}")
    for command, (hint, args) in NEEDS_EXTRA.items():
        done = run(bin_dir, cwd, command, *args)
        if done.returncode != 2 or f"pip install {hint}" not in done.stderr or \
                "Traceback" in done.stderr:
            wrong.append(f"{command} without its extra: exit {done.returncode}, expected 2 "
                         f"and a line naming {hint}\n{done.stderr}")
    return wrong


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="build the venv here and keep it")
    args = parser.parse_args()
    where = args.keep or Path(tempfile.mkdtemp(prefix="client-install-"))
    where.mkdir(parents=True, exist_ok=True)
    try:
        bin_dir = install(where)
        work = where / "work"
        work.mkdir(exist_ok=True)
        wrong = check(bin_dir, work)
    finally:
        if args.keep is None:
            shutil.rmtree(where, ignore_errors=True)
    if wrong:
        print("check_client_install: the client alone does not work as documented:")
        print("\n".join(wrong))
        return 1
    print(f"check_client_install: pip install ./client: bureau-reporter --help, "
          f"{len(SUBCOMMANDS)} subcommands' --help, keygen and keyid work; proxy, probe "
          f"and otlp name their extras")
    return 0


if __name__ == "__main__":
    sys.exit(main())
