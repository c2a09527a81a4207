"""Other people's programs the tiles and mirror tests run: the Go checksum database's
``sumdb/tlog`` (a Go program of ours, tests/tiles/gotlog, built against Debian's
``golang-golang-x-mod-dev``) and a static web server (Debian's nginx, or Python's
``http.server`` where nginx is missing). Each test that needs one skips, saying what is
missing, where it is not installed (`.ci/run` installs them)."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from tests.support import missing, until

GO_SOURCE = Path(__file__).resolve().parent / "gotlog" / "main.go"
#: where Debian's golang-golang-x-mod-dev puts golang.org/x/mod (a GOPATH)
DEBIAN_GOPATH = Path("/usr/share/gocode")
NGINX_CONF = Path(__file__).resolve().parents[2] / "ops" / "nginx" / "mirror.conf"


def build_gotlog(into: Path) -> Path:
    """The Go program, built offline against the Debian packages (GOPATH mode: no module
    download); skips when Go or golang.org/x/mod is not installed."""
    go = shutil.which("go")
    if go is None:
        missing("Go is not installed (Debian: apt-get install golang-go)")
    if not (DEBIAN_GOPATH / "src/golang.org/x/mod/sumdb/tlog").is_dir():
        missing("golang.org/x/mod is not installed (Debian: apt-get install "
                "golang-golang-x-mod-dev)")
    binary = into / "gotlog"
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": str(DEBIAN_GOPATH),
           "GOFLAGS": "", "GOCACHE": str(into / "gocache"), "GOPROXY": "off",
           "CGO_ENABLED": "0"}
    done = subprocess.run([go, "build", "-o", str(binary), str(GO_SOURCE)], env=env,
                          cwd=into, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return binary


@dataclass
class Ran:
    status: int
    out: str


async def run(*argv: str, timeout: float = 300) -> Ran:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode())


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class StaticServer:
    url: str
    kind: str  # "nginx" or "http.server"
    access_log: Path | None = None

    def requests(self) -> list[str]:
        """The request paths served so far (nginx's access log)."""
        if self.access_log is None or not self.access_log.exists():
            return []
        return [line.split('"')[1].split(" ")[1]
                for line in self.access_log.read_text().splitlines() if '"' in line]


def nginx_config(root: Path, port: int, work: Path) -> str:
    """ops/nginx/mirror.conf (the one docs/operations.md shows) as a whole nginx.conf
    for an unprivileged test instance: the mirror at ``root`` on 127.0.0.1:``port``."""
    site = NGINX_CONF.read_text().replace("/srv/bureau-mirror", str(root)).replace(
        "listen 80;", f"listen 127.0.0.1:{port};").replace(
        "server_name mirror.example;", "server_name localhost;")
    # as root (CI), nginx's workers would run as nobody, who cannot enter pytest's
    # private temporary directories
    user = "user root;\n" if os.geteuid() == 0 else ""
    return f"""daemon off;
{user}worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
events {{ worker_connections 256; }}
http {{
    access_log {work}/access.log;
    client_body_temp_path {work}/body;
    proxy_temp_path {work}/proxy;
    fastcgi_temp_path {work}/fastcgi;
    uwsgi_temp_path {work}/uwsgi;
    scgi_temp_path {work}/scgi;
    include /etc/nginx/mime.types;
{site}
}}
"""


@asynccontextmanager
async def static_server(root: Path, work: Path, *, prefer: str = "nginx"
                        ) -> AsyncIterator[StaticServer]:
    """``root`` served by Debian's nginx with ops/nginx/mirror.conf (or, without nginx,
    or with ``prefer="http.server"``, by ``python -m http.server``), stopped after."""
    port = _free_port()
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists()
                                      else None)
    work.mkdir(parents=True, exist_ok=True)
    if prefer == "nginx" and nginx is not None:
        conf = work / "nginx.conf"
        conf.write_text(nginx_config(root, port, work))
        argv = [nginx, "-c", str(conf), "-p", str(work)]
        kind, log = "nginx", work / "access.log"
    else:
        argv = [sys.executable, "-m", "http.server", "--bind", "127.0.0.1",
                "--directory", str(root), str(port)]
        kind, log = "http.server", None
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            async def up() -> bool:
                if proc.returncode is not None:
                    raise AssertionError(f"{kind} exited with status {proc.returncode}")
                try:
                    async with session.get(url + "/checkpoint") as resp:
                        return resp.status in (200, 404)
                except aiohttp.ClientError:
                    return False

            await until(f"{kind} to answer", up, timeout=30)
        yield StaticServer(url, kind, log)
    finally:
        if proc.returncode is None:
            proc.terminate()
            await asyncio.wait_for(proc.wait(), 30)
