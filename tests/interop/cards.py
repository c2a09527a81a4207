"""Agent cards as the A2A SDK writes them (its protobuf types, serialised as it serves
them), and an HTTPS server on loopback to serve them from, with a self-signed
certificate made here (``bureau-check links --cafile`` trusts it)."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
import json
import ssl
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from a2a.types.a2a_pb2 import AgentCapabilities, AgentCard, AgentCardSignature, AgentExtension
from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from google.protobuf import json_format, struct_pb2  # type: ignore[import-untyped]

from tests import support


def sdk_card(extensions: Sequence[Mapping[str, Any]] = (),
             signature_kids: Sequence[str] = ()) -> dict[str, Any]:
    """A card built with a2a-sdk's types, as JSON."""
    exts = []
    for ext in extensions:
        params = struct_pb2.Struct()
        params.update(dict(ext.get("params", {})))
        exts.append(AgentExtension(uri=ext["uri"], description=ext.get("description", ""),
                                   required=bool(ext.get("required", False)), params=params))
    sigs = [AgentCardSignature(
        protected=base64.urlsafe_b64encode(json.dumps({"alg": "EdDSA", "kid": kid}).encode())
        .decode().rstrip("="), signature="c2ln") for kid in signature_kids]
    card = AgentCard(name="weather", description="forecasts", version="1.0.0",
                     capabilities=AgentCapabilities(extensions=exts), signatures=sigs)
    doc: dict[str, Any] = json_format.MessageToDict(card)
    return doc


def self_signed(tmp: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context for 127.0.0.1 and the certificate file a client trusts."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp / "cert.pem", tmp / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context, cert_file


@asynccontextmanager
async def serving(documents: dict[str, Any], context: ssl.SSLContext | None = None
                  ) -> AsyncIterator[str]:
    """Serve ``documents`` (path → JSON) on loopback; yields the base URL. ``documents``
    may be filled after the server starts (the URL goes into the documents' links)."""
    async def handle(request: web.Request) -> web.Response:
        doc = documents.get(request.path)
        if doc is None:
            return web.json_response({"error": "Server not found"}, status=404)
        return web.json_response(doc)

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    async with support.serving(app, ssl_context=context) as url:
        yield url
