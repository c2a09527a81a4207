"""Anchor forms (SPEC §3): the bureau's decode stage and the client library refuse the
same values, `SCHEMA` at `/anchor/value`, because both validate with one model."""

from __future__ import annotations

from typing import Any

import pytest

from bureau.errors import BureauError
from bureau.intake.envelope import decode_payload, parse_envelope
from reporters import BureauClientError, wire
from reporters._internal import payloads
from reporters.models import AmendmentPayload, EnrollmentPayload

KEY = wire.generate_key()

GOOD = [
    ("email", "sam@acme.com"),
    ("email", "Sam.O'Neil+bots@ACME.com"),
    ("email", "!#$%&'*+-/=?^_`{|}~@acme.com"),  # every printable ASCII but "@" and space
    ("email", "sam@bücher.de"),
    ("email", "sam@xn--bcher-kva.de"),
    ("email", "sam@acme.com."),
    ("email", "x@" + "a" * 63 + "." + "b" * 63 + "." + "c" * 63 + "." + "d" * 57),  # 250
    ("domain", "acme.com"),
    ("domain", "ACME.COM"),
    ("domain", "acme.com."),
    ("domain", "localhost"),
    ("domain", "a-b.c-d.example"),
    ("domain", "123.example"),
    ("domain", "bücher.de"),
    ("domain", "ＡＣＭＥ.com"),  # fullwidth: UTS 46 maps it to acme.com
    ("domain", "xn--bcher-kva.de"),
    ("domain", "مثال.إختبار"),
    ("domain", "a" * 63 + ".com"),
    ("domain", ".".join(["a" * 63] * 3 + ["b" * 61])),  # 253
    ("domain", ".".join(["a" * 63] * 3 + ["b" * 61]) + "."),  # 253 and the trailing dot
]

BAD = [
    pytest.param("email", "acme.com", id="email-without-at"),
    pytest.param("email", "@acme.com", id="email-empty-local-part"),
    pytest.param("email", "sam@", id="email-empty-domain"),
    pytest.param("email", "sam smith@acme.com", id="email-space-in-local-part"),
    pytest.param("email", "sam@bob@acme.com", id="email-two-ats"),
    pytest.param("email", "sám@acme.com", id="email-non-ascii-local-part"),
    pytest.param("email", "sam\t@acme.com", id="email-tab-in-local-part"),
    pytest.param("email", "sam\n@acme.com", id="email-newline-before-at"),
    pytest.param("email", "sam@acme.com\n", id="email-trailing-newline"),
    pytest.param("email", "sam@acme_corp.com", id="email-underscore-in-domain"),
    pytest.param("email", "sam@acme..com", id="email-empty-label"),
    pytest.param("email", "s" * 200 + "@" + "a" * 50 + ".com", id="email-over-254"),
    pytest.param("domain", "sam@acme.com", id="domain-with-at"),
    pytest.param("domain", "", id="domain-empty"),
    pytest.param("domain", ".", id="domain-only-a-dot"),
    pytest.param("domain", "acme.com..", id="domain-two-trailing-dots"),
    pytest.param("domain", ".acme.com", id="domain-leading-dot"),
    pytest.param("domain", "acme..com", id="domain-empty-label"),
    pytest.param("domain", "acme corp.com", id="domain-space"),
    pytest.param("domain", "acme_corp.com", id="domain-underscore"),
    pytest.param("domain", "-acme.com", id="domain-leading-hyphen"),
    pytest.param("domain", "acme-.com", id="domain-trailing-hyphen"),
    pytest.param("domain", "ab--cd.com", id="domain-hyphens-3-and-4"),
    pytest.param("domain", "xn--abc.com", id="domain-bad-punycode"),
    pytest.param("domain", "a\u200db.com", id="domain-joiner-out-of-context"),
    pytest.param("domain", "https://acme.com", id="domain-a-url"),
    pytest.param("domain", "acme.com/path", id="domain-with-a-path"),
    pytest.param("domain", "acme.com:443", id="domain-with-a-port"),
    pytest.param("domain", "a" * 64 + ".com", id="domain-label-over-63"),
    pytest.param("domain", ".".join(["a" * 63] * 3 + ["b" * 62]), id="domain-over-253"),
    pytest.param("domain", "acme.com\x00", id="domain-nul"),
    pytest.param("domain", "acme.com\n", id="domain-trailing-newline"),
]


def _enrollment(kind: str, value: str) -> dict[str, Any]:
    return {"name": "an agent", "anchor": {"kind": kind, "value": value},
            "operator": "Acme", "promises": []}


def _bureau_decodes(name: str, payload: dict[str, Any]) -> None:
    """Stage 3 of intake, on a signed envelope of ``payload``."""
    decode_payload(parse_envelope(wire.sign_payload(KEY, name, payload)))


@pytest.mark.parametrize(("kind", "value"), GOOD)
def test_anchor_forms_both_sides_accept(kind: str, value: str) -> None:
    _bureau_decodes("enrollment", _enrollment(kind, value))
    payloads.build(EnrollmentPayload, _enrollment(kind, value))
    amendment = {"issued_at": "2026-11-30T00:00:00Z", "anchor": {"kind": kind, "value": value}}
    _bureau_decodes("amendment", amendment)
    payloads.build(AmendmentPayload, amendment)


@pytest.mark.parametrize(("kind", "value"), BAD)
def test_anchor_forms_both_sides_refuse_at_anchor_value(kind: str, value: str) -> None:
    with pytest.raises(BureauError) as bureau:
        _bureau_decodes("enrollment", _enrollment(kind, value))
    assert (bureau.value.code, bureau.value.path) == ("SCHEMA", "/anchor/value")
    with pytest.raises(BureauClientError) as client:
        payloads.build(EnrollmentPayload, _enrollment(kind, value))
    assert (client.value.code, client.value.path) == ("SCHEMA", "/anchor/value")
    with pytest.raises(BureauError) as amended:
        _bureau_decodes("amendment", {"issued_at": "2026-11-30T00:00:00Z",
                                      "anchor": {"kind": kind, "value": value}})
    assert (amended.value.code, amended.value.path) == ("SCHEMA", "/anchor/value")


def test_the_refusal_detail_never_echoes_the_value() -> None:
    """The value may hold anything; the detail is the bureau's own words."""
    with pytest.raises(BureauError) as err:
        _bureau_decodes("enrollment", _enrollment("domain", "xn--\u0080evil.com"))
    assert "evil" not in err.value.detail and "\x80" not in err.value.detail


def test_an_unknown_kind_is_refused_at_the_kind() -> None:
    with pytest.raises(BureauError) as err:
        _bureau_decodes("enrollment", _enrollment("url", "https://acme.com"))
    assert (err.value.code, err.value.path) == ("SCHEMA", "/anchor/kind")
