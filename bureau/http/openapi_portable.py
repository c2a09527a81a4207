"""The OpenAPI operations of the reads anyone can serve and the proofs anyone can carry
(SPEC §9.1 r4): tiles, proof bundles, cards."""

from __future__ import annotations

from typing import Any

from bureau.http.openapi_parts import Json, epoch_param, errors, json_body, key_param
from bureau.http.params import TILE


def portable_operations() -> dict[tuple[str, str], Json]:
    public: list[dict[str, Any]] = []
    refreshed = ("Its log proof is against the published head the most witnesses "
                 "cosigned: it can change as cosignatures arrive (Cache-Control: a minute).")
    return {
        ("GET", "/tile/{tile}"): {
            "operationId": "tile",
            "summary": "The tree as C2SP tlog-tiles: tile/<L>/<N>[.p/<W>] (hashes) and "
                       "tile/entries/<N>[.p/<W>] (each leaf's 32-byte entry id)",
            "description": "Full tiles are immutable (a year); partial tiles a minute. "
                           "Only tiles the latest published tree head covers.",
            "security": public, "parameters": [
                {"name": "tile", "in": "path", "required": True,
                 "description": "<L>/<N>[.p/<W>] or entries/<N>[.p/<W>], N in groups of "
                                "three digits (x001/x234/067), slashes unescaped; the "
                                f"route takes {TILE} and answers 404 to anything else",
                 "schema": {"type": "string", "pattern": "^[0-9a-z./]{1,110}$"}}],
            "responses": {"200": {"description": "the tile", "content": {
                "application/octet-stream": {"schema": {"type": "string",
                                                        "format": "binary"}}}},
                **errors(404, 422, 503)}},
        ("GET", "/v1/agents/{agent}/proof"): {
            "operationId": "agent_proof",
            "summary": "The proof bundle of the agent's report: verifies with no network",
            "description": refreshed, "security": public,
            "parameters": [key_param("agent"), epoch_param()],
            "responses": {"200": json_body("the bundle", "ProofBundle"),
                          **errors(404, 422, 503)}},
        ("GET", "/v1/agents/{agent}/card"): {
            "operationId": "agent_card",
            "summary": "The compact reputation card of the agent's report (≤ 4,000 bytes)",
            "description": refreshed, "security": public,
            "parameters": [key_param("agent"), epoch_param()],
            "responses": {"200": json_body("the card", "Card"), **errors(404, 422, 503)}},
    }
