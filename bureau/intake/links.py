"""Are two agents linked — one operator, or one anchor (SPEC §5, self-dealing)?

Pure: no I/O, no clock. The public suffix list is the one the ``publicsuffixlist``
package ships (read from its own directory, never fetched), private section included.

Normalisation, exactly as the protocol states it:

* an **operator** is NFKC-normalised, stripped of every character of category Cf (zero
  width spaces and joiners, soft hyphens, bidi marks), case-folded, its runs of white
  space (the Unicode White_Space property) made one space, and trimmed;
* an **e-mail** anchor is case-folded whole and its domain part mapped to ASCII by IDNA;
  a **domain** anchor is mapped to ASCII by IDNA (UTS 46 non-transitional processing
  with CheckHyphens, CheckBidi, CheckJoiners and UseSTD3ASCIIRules:
  :func:`reporters.models.domain_to_ascii`, the function the decode stage used to accept
  it); the trailing dot is dropped.

Two e-mails are linked only when equal (two people at one company are not one party).
Two domains, or an e-mail's domain and a domain, are linked when their *registrable*
domains are equal: ``a.example.co.uk`` and ``example.co.uk`` are one party, and so are
``ci.acme.com`` and ``ops@acme.com``, but ``a.github.io`` and ``b.github.io`` are not
(``github.io`` is in the list's private section). A domain that is itself a public
suffix has no registrable domain and is linked only to an equal domain.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from typing import Literal, Protocol

from publicsuffixlist import PSLFILE, PublicSuffixList

from reporters.models import domain_to_ascii

#: The verdicts that are favourable to their subject: only these can be self-dealing.
#: An unfavourable verdict (FAILED_ADMITTED, FAILED_DISCOVERED, VALUE_POOR) is against
#: the interest of a linked evaluator, and refusing or excluding it would let a subject
#: erase evidence against itself by claiming a link.
FAVOURABLE_ATTESTATIONS = frozenset({"ACCEPTED", "ACCEPTED_AFTER_CORRECTIONS", "DECLINED"})
FAVOURABLE_JUDGMENTS = frozenset({"VALUE_OK"})

#: The Unicode White_Space property (PropList.txt), written out: Python's str.isspace
#: and re's \s differ from it (they take U+001C..U+001F, which White_Space does not).
_WHITE_SPACE_RUN = re.compile(
    "[\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")

AnchorKind = Literal["email", "domain"]


def is_favourable(kind: str, verdict: str) -> bool:
    """Is this attestation outcome or value judgment favourable to its subject?
    ``kind`` is the entry kind: ``attestation`` or ``value-judgment``."""
    if kind == "attestation":
        return verdict in FAVOURABLE_ATTESTATIONS
    return verdict in FAVOURABLE_JUDGMENTS


@functools.lru_cache(maxsize=65536)
def operator_key(operator: str) -> str:
    """The operator as compared: NFKC, without Cf characters, case-folded, each run of
    white space one space, trimmed."""
    text = unicodedata.normalize("NFKC", operator)
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    return _WHITE_SPACE_RUN.sub(" ", text.casefold()).strip(" ")


@dataclass(frozen=True, slots=True)
class AnchorKey:
    """An anchor as compared: ``value`` is the normalised e-mail or ASCII domain, and
    ``registrable`` the registrable domain of that domain (of the e-mail's domain part),
    or None when it is itself a public suffix."""

    kind: AnchorKind
    value: str
    domain: str
    registrable: str | None


def _load_suffixes() -> PublicSuffixList:
    """The bundled list, with its private section, its rules mapped to ASCII by the same
    IDNA processing the anchors go through (so a rule and an anchor always meet in one
    form). ``accept_unknown``: a name under no rule has the implicit ``*`` rule, as the
    list's own algorithm says."""
    with open(PSLFILE, encoding="utf-8") as fh:
        rules = [_ascii_rule(line) for line in fh]
    return PublicSuffixList([r for r in rules if r], accept_unknown=True,
                            accept_encoded_idn=False)


def _ascii_rule(line: str) -> str:
    """One line of the list as a rule in ASCII ("" for comments and blank lines)."""
    rule = line.strip().split(" ")[0]
    if not rule or rule.startswith("//"):
        return ""
    if rule.isascii():
        return rule.lower()
    exception = "!" if rule.startswith("!") else ""
    labels = rule.removeprefix("!").split(".")
    return exception + ".".join(x if x == "*" else domain_to_ascii(x) for x in labels)


#: Loaded once, when the module is imported (about 50 ms): never under the ledger lock.
_SUFFIXES = _load_suffixes()


def registrable_domain(ascii_domain: str) -> str | None:
    """The registrable domain (public suffix plus one label) of an ASCII domain name,
    None when the name is itself a public suffix."""
    return _SUFFIXES.privatesuffix(ascii_domain)


@functools.lru_cache(maxsize=65536)
def anchor_key(kind: AnchorKind, value: str) -> AnchorKey:
    """The anchor as compared. Every anchor the bureau admits has passed the decode
    stage's form check (:func:`reporters.models.check_anchor`); one that somehow has no
    ASCII form is compared as its case-folded text, linked only to an equal one."""
    try:
        if kind == "email":
            local, _, domain = value.casefold().rpartition("@")
            domain = domain_to_ascii(domain)
            return AnchorKey("email", f"{local}@{domain}", domain, registrable_domain(domain))
        domain = domain_to_ascii(value)
        return AnchorKey("domain", domain, domain, registrable_domain(domain))
    except ValueError:
        text = value.casefold()
        return AnchorKey(kind, text, text, None)


def anchors_linked(a: AnchorKey, b: AnchorKey) -> bool:
    """Two e-mails: equal. Otherwise (two domains, or an e-mail and a domain): equal
    registrable domains, or — for a domain that is a public suffix — equal domains."""
    if a.kind == "email" and b.kind == "email":
        return a.value == b.value
    if a.registrable is None or b.registrable is None:
        return a.domain == b.domain
    return a.registrable == b.registrable


class Party(Protocol):
    """What self-dealing compares of an agent (an enrolled agent's record is one): its
    key, its operator, its anchor as enrolled (``anchor_kind`` ``email``, else a
    domain)."""

    @property
    def key(self) -> str: ...
    @property
    def operator(self) -> str: ...
    @property
    def anchor_kind(self) -> str: ...
    @property
    def anchor_value(self) -> str: ...


def _anchor(party: Party) -> AnchorKey:
    return anchor_key("email" if party.anchor_kind == "email" else "domain",
                      party.anchor_value)


def linked(a: Party, b: Party) -> bool:
    """Are these two parties linked: one key, one operator, or one anchor?"""
    if a.key == b.key or operator_key(a.operator) == operator_key(b.operator):
        return True
    return anchors_linked(_anchor(a), _anchor(b))
