"""The forms an anchor may take (SPEC §3): an e-mail address or a domain name.

Checked here so that the client refuses what the bureau refuses. The bureau compares
anchors (``bureau.intake.links``) in the ASCII form that :func:`domain_to_ascii` gives,
so a value that has no such form is refused at decode instead of being compared by some
weaker rule later. :class:`reporters.models.Anchor` applies :func:`check_anchor`.
"""

from __future__ import annotations

import re

import idna

#: an e-mail anchor: at most this many characters in all
MAX_EMAIL = 254
#: a domain anchor (and an ASCII domain name): at most this many characters, not
#: counting one trailing dot
MAX_DOMAIN = 253
#: the local part of an e-mail anchor: printable ASCII without space or "@"
_LOCAL_PART_RE = re.compile(r"[\x21-\x3f\x41-\x7e]+")
#: one label of an ASCII host name: letters, digits, hyphens, not at either end
_LDH_LABEL_RE = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")


def domain_to_ascii(value: str) -> str:
    """The ASCII host name (lowercase A-labels, without the trailing dot) that IDNA
    maps ``value`` to: UTS 46 non-transitional processing with CheckHyphens, CheckBidi,
    CheckJoiners and UseSTD3ASCIIRules (``idna``), at most 253 characters.
    ``ValueError`` when it has none, whatever the reason."""
    if len(value.removesuffix(".")) > MAX_DOMAIN:
        raise ValueError(f"a domain name is at most {MAX_DOMAIN} characters")
    try:
        # idna.encode applies UTS 46 mapping, then IDNA 2008 validity per label: the
        # hyphen rules, the Bidi rule, the joiner contexts and the STD3 ASCII rules.
        ascii_name = idna.encode(value, uts46=True, std3_rules=True,
                                 transitional=False).decode("ascii")
    except (UnicodeError, ValueError):  # idna.IDNAError and its kin are UnicodeErrors
        raise ValueError("not a domain name that IDNA (UTS 46) maps to a host name") from None
    ascii_name = ascii_name.removesuffix(".")
    labels = ascii_name.split(".")
    if len(ascii_name) > MAX_DOMAIN or not all(_LDH_LABEL_RE.fullmatch(x) for x in labels):
        raise ValueError("not a host name of letters, digits and hyphens in dot-separated "
                         f"labels of at most 63 characters, {MAX_DOMAIN} in all")
    return ascii_name


def check_anchor(kind: str, value: str) -> None:
    """``ValueError`` unless ``value`` is an anchor of this ``kind``: ``email`` is
    ``local@domain``, at most 254 characters, the local part printable ASCII without
    spaces or ``@``; ``domain`` is a host name (or an internationalised name that IDNA
    maps to one), at most 253 characters and one optional trailing dot."""
    if kind == "domain":
        domain_to_ascii(value)
        return
    local, at, domain = value.rpartition("@")
    if not at or len(value) > MAX_EMAIL:
        raise ValueError(f"an e-mail anchor is local@domain, at most {MAX_EMAIL} characters")
    if not _LOCAL_PART_RE.fullmatch(local):
        raise ValueError("the local part of an e-mail anchor is printable ASCII without "
                         "spaces or '@'")
    domain_to_ascii(domain)
