"""Cross-field SCHEMA paths name the field the rule is about (SPEC §6; issue 20 finding
10). On revision-2 main an attestation with ``ACCEPTED`` and two corrections was refused
``SCHEMA`` with path ``""``: the rule across outcome and corrections named no field.
Every such rule raises :class:`reporters.models.FieldRuleError` naming its field, and
docs/protocol.md lists them all (checked below against the models' source)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from reporters import models, wire
from reporters.models import PayloadInvalid, validate_payload
from tests.support import BureauUnderTest, issued, kid

KEY = kid(wire.generate_key())
CASES: list[tuple[type[models.Payload], dict[str, Any], str]] = [
    (models.AttestationPayload, {"reporter": KEY, "interaction": "i-1", "subject": KEY,
                                 "outcome": "ACCEPTED", "corrections": 2}, "/corrections"),
    (models.AttestationPayload, {"reporter": KEY, "interaction": "i-1", "subject": KEY,
                                 "outcome": "ACCEPTED_AFTER_CORRECTIONS", "corrections": 0},
     "/corrections"),
    (models.ReporterPayload, {"reporter": KEY, "name": "gw", "operator": "Op",
                              "roles": ["facts", "facts"], "issued_at": issued()}, "/roles"),
    (models.AmendmentPayload, {"issued_at": issued(), "name": None}, "/name"),
    (models.KeysPayload, {"bureau": KEY, "admins": [KEY, KEY], "issued_at": issued()},
     "/admins"),
]


@pytest.mark.parametrize(("model", "doc", "path"), CASES,
                         ids=[f"{m.__name__}{p}" for m, _, p in CASES])
def test_a_broken_cross_field_rule_names_its_field(model: type[models.Payload],
                                                   doc: dict[str, Any], path: str) -> None:
    with pytest.raises(PayloadInvalid) as refused:
        validate_payload(model, doc)
    assert refused.value.path == path


async def test_the_issues_attestation_is_schema_at_corrections(
        bureau: BureauUnderTest) -> None:
    status, body = await bureau.submit(wire.generate_key(), "attestation", CASES[0][1])
    assert (status, body["code"], body["path"]) == (422, "SCHEMA", "/corrections"), body


def test_protocol_md_lists_every_cross_field_rule() -> None:
    """Each ``FieldRuleError`` raised in the models is a row of docs/protocol.md's list."""
    source = inspect.getsource(models)
    raised = set(re.findall(r'FieldRuleError\(\s*f?"([a-z_{}]+)"', source))
    assert raised >= {"corrections", "roles"}, raised
    doc = (Path(__file__).parents[2] / "docs" / "protocol.md").read_text()
    section = doc.split("### Cross-field rules", 1)[1].split("\n#", 1)[0]
    for model in {m for m, _, _ in CASES}:
        assert f"`{model.__name__}`" in section or model.__name__ in section, model
    for field in raised - {"{field}"}:
        assert f"`/{field}`" in section, field
