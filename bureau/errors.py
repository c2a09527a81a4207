"""The one error root of the service and the closed list of reason codes (SPEC §6).

Domain code raises :class:`BureauError` with a :class:`Code`; it never speaks HTTP.
The HTTP layer maps each code to a status in exactly one place
(:mod:`bureau.http.errors`).
"""

from __future__ import annotations

import enum

from reporters.models import json_pointer


class Stage(enum.StrEnum):
    """The pipeline stage a code belongs to; each code belongs to exactly one."""

    PARSE = "parse"
    VERIFY = "verify"
    DECODE = "decode"
    AUTHORIZE = "authorize"
    ADMIT = "admit"
    AUTH = "auth"
    READ = "read"
    SERVICE = "service"


class Code(enum.StrEnum):
    """Every reason the service can give for refusing something. The list is closed."""

    MALFORMED_ENVELOPE = "MALFORMED_ENVELOPE"
    TOO_LARGE = "TOO_LARGE"
    UNSUPPORTED_MEDIA_TYPE = "UNSUPPORTED_MEDIA_TYPE"
    UNKNOWN_PAYLOAD_TYPE = "UNKNOWN_PAYLOAD_TYPE"
    SIGNATURE_COUNT = "SIGNATURE_COUNT"
    BAD_KEY = "BAD_KEY"
    BAD_SIGNATURE = "BAD_SIGNATURE"
    MALFORMED_PAYLOAD = "MALFORMED_PAYLOAD"
    SCHEMA = "SCHEMA"
    NOT_ADMIN = "NOT_ADMIN"
    UNKNOWN_REPORTER = "UNKNOWN_REPORTER"
    MISSING_ROLE = "MISSING_ROLE"
    NOT_ENROLLED = "NOT_ENROLLED"
    ALREADY_ENROLLED = "ALREADY_ENROLLED"
    WITHDRAWN = "WITHDRAWN"
    CLOCK_SKEW = "CLOCK_SKEW"
    CONFLICTING_FACT = "CONFLICTING_FACT"
    UNWITNESSED = "UNWITNESSED"
    SELF_DEALING = "SELF_DEALING"
    DUPLICATE_VERDICT = "DUPLICATE_VERDICT"
    NOT_TIME_AND_MATERIALS = "NOT_TIME_AND_MATERIALS"
    AMOUNT_MISMATCH = "AMOUNT_MISMATCH"
    UNKNOWN_ENTRY = "UNKNOWN_ENTRY"
    NOT_SUBJECT = "NOT_SUBJECT"
    ALREADY_RESOLVED = "ALREADY_RESOLVED"
    STALE_UPDATE = "STALE_UPDATE"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    UNAVAILABLE = "UNAVAILABLE"

    @property
    def stage(self) -> Stage:
        return STAGE_OF[self]


STAGE_OF: dict[Code, Stage] = {
    Code.MALFORMED_ENVELOPE: Stage.PARSE,
    Code.TOO_LARGE: Stage.PARSE,
    Code.UNSUPPORTED_MEDIA_TYPE: Stage.PARSE,
    Code.UNKNOWN_PAYLOAD_TYPE: Stage.PARSE,
    Code.SIGNATURE_COUNT: Stage.VERIFY,
    Code.BAD_KEY: Stage.VERIFY,
    Code.BAD_SIGNATURE: Stage.VERIFY,
    Code.MALFORMED_PAYLOAD: Stage.DECODE,
    Code.SCHEMA: Stage.DECODE,
    Code.NOT_ADMIN: Stage.AUTHORIZE,
    Code.UNKNOWN_REPORTER: Stage.AUTHORIZE,
    Code.MISSING_ROLE: Stage.AUTHORIZE,
    Code.NOT_ENROLLED: Stage.AUTHORIZE,
    Code.ALREADY_ENROLLED: Stage.AUTHORIZE,
    Code.WITHDRAWN: Stage.AUTHORIZE,
    Code.CLOCK_SKEW: Stage.ADMIT,
    Code.CONFLICTING_FACT: Stage.ADMIT,
    Code.UNWITNESSED: Stage.ADMIT,
    Code.SELF_DEALING: Stage.ADMIT,
    Code.DUPLICATE_VERDICT: Stage.ADMIT,
    Code.NOT_TIME_AND_MATERIALS: Stage.ADMIT,
    Code.AMOUNT_MISMATCH: Stage.ADMIT,
    Code.UNKNOWN_ENTRY: Stage.ADMIT,
    Code.NOT_SUBJECT: Stage.ADMIT,
    Code.ALREADY_RESOLVED: Stage.ADMIT,
    Code.STALE_UPDATE: Stage.ADMIT,
    Code.UNAUTHENTICATED: Stage.AUTH,
    Code.FORBIDDEN: Stage.AUTH,
    Code.NOT_FOUND: Stage.READ,
    Code.UNAVAILABLE: Stage.SERVICE,
}


class Pushback(enum.StrEnum):
    """Why the service answered ``UNAVAILABLE``: one named reason each, in the log and in
    the ``reason`` label of ``bureau_unavailable_total`` (the body says only the code)."""

    #: the committer's queue holds ``max_pending`` envelopes already
    QUEUE_FULL = "queue_full"
    #: requests past their body read and not yet answered hold ``max_pending`` envelopes
    INTAKE_FULL = "intake_full"
    #: PostgreSQL did not answer (nothing was written)
    DATABASE_UNREACHABLE = "database_unreachable"
    #: the process is stopping; what was queued was not written
    SHUTTING_DOWN = "shutting_down"
    #: this process's signing key is no longer the one in force (a ``keys`` entry
    #: rotated it): ``/readyz`` until it is restarted with the new key file
    KEY_NOT_IN_FORCE = "key_not_in_force"
    #: a sealed epoch's reports are being built and the agent asked for has none in an
    #: earlier epoch: it may have one once they are (``GET /v1/agents/{a}/report``)
    REPORTS_BUILDING = "reports_building"
    #: a bug: answered 500, not 503
    INTERNAL_ERROR = "internal_error"


class BureauError(Exception):
    """A refusal: one code from the closed list, a JSON Pointer, and a human detail.
    An ``UNAVAILABLE`` one also names its :class:`Pushback` reason (``pushback``)."""

    def __init__(self, code: Code, path: str = "", detail: str = "", *,
                 internal: bool = False, pushback: Pushback | None = None) -> None:
        super().__init__(f"{code}: {detail} at {path!r}")
        self.code = code
        self.path = path
        self.detail = detail or code.value
        #: why the service could not take it (UNAVAILABLE only)
        self.pushback = pushback
        #: the server is broken (a bug, not the database being away): HTTP 500
        self.internal = internal or pushback is Pushback.INTERNAL_ERROR

    def as_body(self) -> dict[str, str]:
        return {"status": "rejected", "code": self.code.value, "path": self.path,
                "detail": self.detail}

    def __reduce__(self) -> tuple[object, ...]:
        # Exceptions pickle as ``cls(*args)``, and ``args`` here is the message: without
        # this a refusal could not cross to another process (the sequencer's socket,
        # a report worker's pipe). It crosses as the plain error, its fields intact.
        return (_restore_error, (self.code.value, self.path, self.detail, self.internal,
                                 None if self.pushback is None else self.pushback.value))


def _restore_error(code: str, path: str, detail: str, internal: bool,
                   pushback: str | None) -> BureauError:
    return BureauError(Code(code), path, detail, internal=internal,
                       pushback=None if pushback is None else Pushback(pushback))


class InternalError(BureauError):
    """The bureau found itself broken — a ledger that does not verify, a report worker
    that died — rather than refusing someone's input. It reads as its detail; should
    one ever reach HTTP it is answered 500 (``internal_error``)."""

    def __init__(self, detail: str) -> None:
        super().__init__(Code.UNAVAILABLE, "", detail, pushback=Pushback.INTERNAL_ERROR)

    def __str__(self) -> str:
        return self.detail


def pointer(*parts: str | int) -> str:
    """A ``path``: a JSON Pointer (RFC 6901) from path parts, each segment escaped as
    SPEC §3 r2 says (``reporters.models.json_pointer``): a name the caller chose — an
    unknown key, a query parameter — reaches a body or the refusals table only as
    printable ASCII, at most 128 characters a segment."""
    return json_pointer(*parts)
