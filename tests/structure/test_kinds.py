"""The kinds table (bureau/kinds.py) is complete and agrees with everything that reads
it: the payload models, the admission rules, the index writers, the report views."""

from __future__ import annotations

from bureau import kinds
from bureau.intake import index, rules
from bureau.kinds import BY_MODEL, KINDS, SUBMITTED, Signer
from bureau.storage.derived import INDEX_TABLES
from reporters.models import PAYLOAD_MODELS


def test_every_payload_model_is_one_submitted_kind() -> None:
    assert set(SUBMITTED) == set(PAYLOAD_MODELS)
    for name, kind in SUBMITTED.items():
        assert kind.model is PAYLOAD_MODELS[name]
        assert BY_MODEL[kind.model] is kind
        assert kind.signer is not Signer.BUREAU
    assert len({k.name for k in KINDS}) == len(KINDS), "entry kinds are distinct"


def test_bureau_kinds_are_never_submitted() -> None:
    for kind in KINDS:
        assert (kind.payload is None) == (kind.signer is Signer.BUREAU), kind.name


def test_roles_belong_to_reporter_kinds_only() -> None:
    for kind in KINDS:
        assert (kind.role is not None) == (kind.signer is Signer.REPORTER), kind.name


def test_a_payload_that_names_a_subject_is_about_it() -> None:
    for kind in SUBMITTED.values():
        if "subject" in kind.model.model_fields:
            assert kind.subject is kinds._payload_subject, kind.name
        elif kind.subject is not None:
            assert kind.subject is kinds._signer_subject, kind.name
            assert kind.signer in (Signer.AGENT, Signer.ENROLLING), kind.name


def test_every_index_a_kind_names_has_a_writer() -> None:
    for kind in SUBMITTED.values():
        if kind.index is not None:
            assert kind.index in index._WRITERS, kind.name
    named = {k.index for k in KINDS if k.index is not None}
    assert named - {"seals"} == set(INDEX_TABLES)
    for kind in KINDS:
        assert (kind.index == "agents") == (kind.agent is not None), kind.name
        assert (kind.index == "verdicts") == (kind.verdict is not None), kind.name


def test_every_admission_rule_belongs_to_a_submitted_kind() -> None:
    assert set(rules._RULES) <= set(BY_MODEL)


def test_the_views_read_exactly_the_kinds_with_a_decoder() -> None:
    assert set(kinds.EVIDENCE_KINDS) == {"fact", "probe", "attestation", "value-judgment",
                                         "exclusion", "enrollment", "amendment", "reporter"}
    assert kinds.SEAL_REQUEST.name == "seal-request" and kinds.SEAL_REQUEST.payload == "seal"
