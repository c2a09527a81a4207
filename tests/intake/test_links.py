"""The self-dealing comparison (SPEC §5), as a pure module: operators and anchors
normalised, e-mails equal, domains by registrable domain over the public suffix list
(private section included), a public suffix only equal to itself."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from bureau.intake.links import (
    AnchorKind,
    anchor_key,
    anchors_linked,
    is_favourable,
    operator_key,
    registrable_domain,
)

Anchor = tuple[AnchorKind, str]

# --------------------------------------------------------------------------- operators

SAME_OPERATOR = [
    pytest.param("ACME Corp", "acme corp", id="case"),
    pytest.param("Straße GmbH", "STRASSE gmbh", id="case-folded-not-lowered"),
    pytest.param("ＡＣＭＥ Ｃｏｒｐ", "acme corp", id="nfkc-fullwidth"),
    pytest.param("ｱｸﾒ", "アクメ", id="nfkc-halfwidth-katakana"),
    pytest.param("Acme ™", "acme tm", id="nfkc-compatibility-sign"),
    pytest.param("Ac\u200bme Corp", "acme corp", id="zero-width-space"),
    pytest.param("Ac\u200dme\u200c Corp", "acme corp", id="zero-width-joiners"),
    pytest.param("Ac\u00adme Corp", "acme corp", id="soft-hyphen"),
    pytest.param("\ufeffAcme\u2060 Corp", "acme corp", id="bom-and-word-joiner"),
    pytest.param("Acme\u200e Corp\u202e", "acme corp", id="bidi-marks"),
    pytest.param("  Acme \t\u00a0 Corp  ", "acme corp", id="inner-and-outer-space"),
    pytest.param("Acme\u3000Corp", "acme corp", id="ideographic-space"),
    pytest.param("Acme\u1680\u2028Corp", "acme corp", id="ogham-and-line-separator"),
    pytest.param("Acme\u202fCorp\u205f", "acme corp", id="narrow-and-math-space"),
    pytest.param("Cafe\u0301", "Café", id="nfkc-composes"),
]

DIFFERENT_OPERATOR = [
    pytest.param("Acme Corp", "AcmeCorp", id="a-space-is-not-nothing"),
    pytest.param("Acme Corp", "Acme-Corp", id="hyphen"),
    pytest.param("Acme", "Acme\u034f", id="combining-grapheme-joiner-is-Mn-not-Cf"),
    pytest.param("Acme", "Аcme", id="cyrillic-a-is-not-latin-a"),
]


@pytest.mark.parametrize(("a", "b"), SAME_OPERATOR)
def test_operators_that_normalise_alike_are_one_operator(a: str, b: str) -> None:
    assert operator_key(a) == operator_key(b)


@pytest.mark.parametrize(("a", "b"), DIFFERENT_OPERATOR)
def test_operators_that_differ_after_normalising_are_two(a: str, b: str) -> None:
    assert operator_key(a) != operator_key(b)


def test_the_normal_form_of_an_operator_written_out() -> None:
    assert operator_key("\u2003ＡＣＭＥ\u200b  Labs\u00a0\u3000Ltd. ") == "acme labs ltd."


# --------------------------------------------------------------------------- anchors


def linked(a: Anchor, b: Anchor) -> bool:
    """Both orders must agree: the relation is symmetric."""
    forward = anchors_linked(anchor_key(*a), anchor_key(*b))
    assert anchors_linked(anchor_key(*b), anchor_key(*a)) == forward
    return forward


LINKED = [
    pytest.param(("email", "Sam@Acme.COM"), ("email", "sam@acme.com"), id="email-case"),
    pytest.param(("email", "SAM@acme.com"), ("email", "sam@acme.com"),
                 id="email-local-part-case-folded-too"),
    pytest.param(("email", "sam@bücher.de"), ("email", "sam@xn--bcher-kva.de"),
                 id="email-u-label-vs-a-label"),
    pytest.param(("email", "sam@acme.com."), ("email", "sam@acme.com"),
                 id="email-trailing-dot"),
    pytest.param(("domain", "ACME.com"), ("domain", "acme.com"), id="domain-case"),
    pytest.param(("domain", "ａｃｍｅ.com"), ("domain", "acme.com"), id="domain-fullwidth"),
    pytest.param(("domain", "bücher.de"), ("domain", "xn--bcher-kva.de"),
                 id="domain-u-label-vs-a-label"),
    pytest.param(("domain", "BÜCHER.de"), ("domain", "Xn--Bcher-Kva.DE"),
                 id="domain-u-label-vs-a-label-any-case"),
    pytest.param(("domain", "acme.com."), ("domain", "acme.com"), id="domain-trailing-dot"),
    pytest.param(("domain", "exa\u200bmple.com"), ("domain", "example.com"),
                 id="domain-zero-width-space-ignored-by-uts46"),
    pytest.param(("domain", "ci.acme.com"), ("domain", "acme.com"),
                 id="subdomain-and-its-registrable-domain"),
    pytest.param(("domain", "ci.acme.com"), ("domain", "www.eu.acme.com"),
                 id="two-subdomains-of-one-registrable-domain"),
    pytest.param(("domain", "a.example.co.uk"), ("domain", "example.co.uk"),
                 id="under-a-two-label-suffix"),
    pytest.param(("email", "ops@mail.acme.com"), ("domain", "acme.com"),
                 id="email-in-a-subdomain-and-the-domain"),
    pytest.param(("email", "ops@acme.com"), ("domain", "ci.acme.com"),
                 id="email-and-a-subdomain"),
    pytest.param(("email", "ops@bücher.de"), ("domain", "shop.xn--bcher-kva.de"),
                 id="email-u-label-and-a-label-subdomain"),
    pytest.param(("domain", "a.b.github.io"), ("domain", "b.github.io"),
                 id="under-one-private-suffix-owner"),
    pytest.param(("domain", "co.uk"), ("domain", "CO.UK."), id="public-suffix-equal-itself"),
    pytest.param(("domain", "faß.de"), ("domain", "xn--fa-hia.de"),
                 id="non-transitional-sharp-s-keeps-its-a-label"),
]

NOT_LINKED = [
    pytest.param(("email", "sam@acme.com"), ("email", "kim@acme.com"),
                 id="two-different-emails-on-one-domain"),
    pytest.param(("email", "sam@acme.com"), ("email", "sam@ci.acme.com"),
                 id="two-emails-under-one-registrable-domain"),
    pytest.param(("email", "sam@acme.com"), ("email", "sam@acme.org"), id="same-local-part"),
    pytest.param(("domain", "acme.com"), ("domain", "acme.org"), id="two-domains"),
    pytest.param(("domain", "a.github.io"), ("domain", "b.github.io"),
                 id="private-section-suffix-github-io"),
    pytest.param(("email", "ops@a.github.io"), ("domain", "b.github.io"),
                 id="email-and-domain-under-a-private-suffix"),
    pytest.param(("domain", "a.co.uk"), ("domain", "b.co.uk"), id="two-under-co-uk"),
    pytest.param(("domain", "co.uk"), ("domain", "example.co.uk"),
                 id="public-suffix-not-linked-to-names-under-it"),
    pytest.param(("domain", "github.io"), ("domain", "a.github.io"),
                 id="private-public-suffix-not-linked-to-names-under-it"),
    pytest.param(("domain", "com"), ("email", "ops@acme.com"),
                 id="a-tld-is-not-every-email-under-it"),
    pytest.param(("domain", "faß.de"), ("domain", "fass.de"),
                 id="non-transitional-sharp-s-is-not-ss"),
]


@pytest.mark.parametrize(("a", "b"), LINKED)
def test_anchors_linked(a: Anchor, b: Anchor) -> None:
    assert linked(a, b)


@pytest.mark.parametrize(("a", "b"), NOT_LINKED)
def test_anchors_not_linked(a: Anchor, b: Anchor) -> None:
    assert not linked(a, b)


def test_normal_forms_written_out() -> None:
    email = anchor_key("email", "Sam.O'Neil+bots@BÜCHER.de.")
    assert (email.value, email.domain, email.registrable) == (
        "sam.o'neil+bots@xn--bcher-kva.de", "xn--bcher-kva.de", "xn--bcher-kva.de")
    domain = anchor_key("domain", "Shop.Example.CO.UK.")
    assert (domain.value, domain.registrable) == ("shop.example.co.uk", "example.co.uk")
    assert anchor_key("domain", "github.io").registrable is None


@pytest.mark.parametrize(("domain", "registrable"), [
    ("example.com", "example.com"),
    ("a.b.example.com", "example.com"),
    ("example.co.uk", "example.co.uk"),
    ("a.github.io", "a.github.io"),
    ("x.a.github.io", "a.github.io"),
    ("github.io", None),
    ("co.uk", None),
    ("com", None),
    ("foo.example", "foo.example"),  # no rule: the implicit "*" makes "example" a suffix
    ("xn--fiqs8s", None),  # 中国: IDN suffixes are in the list as A-labels too
    ("a.xn--fiqs8s", "a.xn--fiqs8s"),
    ("www.ck", "www.ck"),  # "*.ck" with the exception "!www.ck"
    ("a.b.ck", "a.b.ck"),
])
def test_registrable_domains_by_the_bundled_list(domain: str, registrable: str | None) -> None:
    assert registrable_domain(domain) == registrable


@pytest.mark.slow
def test_the_list_is_the_bundled_one_read_without_a_network() -> None:
    """A fresh interpreter with sockets disabled loads the list and answers from its
    private section: nothing is fetched at run time."""
    code = textwrap.dedent("""
        import socket
        def refuse(*args, **kwargs):
            raise OSError("no network in this test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from bureau.intake.links import registrable_domain
        assert registrable_domain("a.github.io") == "a.github.io"
        assert registrable_domain("github.io") is None
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=False, timeout=120)
    assert (out.returncode, out.stdout.strip()) == (0, "ok"), out.stderr


def test_the_bundled_list_is_recent_and_has_its_private_section() -> None:
    import publicsuffixlist

    with open(publicsuffixlist.PSLFILE, encoding="utf-8") as fh:
        text = fh.read()
    assert "===BEGIN PRIVATE DOMAINS===" in text
    version = next(line for line in text.splitlines() if line.startswith("// VERSION: "))
    assert version.removeprefix("// VERSION: ")[:10] >= "2026-10-01", version


# --------------------------------------------------------------------------- favourable


@pytest.mark.parametrize(("kind", "verdict", "favourable"), [
    ("attestation", "ACCEPTED", True),
    ("attestation", "ACCEPTED_AFTER_CORRECTIONS", True),
    ("attestation", "DECLINED", True),
    ("attestation", "FAILED_ADMITTED", False),
    ("attestation", "FAILED_DISCOVERED", False),
    ("value-judgment", "VALUE_OK", True),
    ("value-judgment", "VALUE_POOR", False),
])
def test_which_verdicts_are_favourable(kind: str, verdict: str, favourable: bool) -> None:
    assert is_favourable(kind, verdict) is favourable
