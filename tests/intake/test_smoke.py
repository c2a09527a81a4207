from tests.support import BureauUnderTest, fact_payload, kid
from reporters import wire


async def test_fact_accepted_then_duplicate(bureau: BureauUnderTest) -> None:
    rep = await bureau.reporter()
    agent = wire.generate_key()
    env = wire.sign_payload(rep, "fact", fact_payload("i-1", kid(agent)))
    status, body = await bureau.post(env)
    assert status == 201, body
    assert body["status"] == "accepted" and body["seq"] == 2
    status, again = await bureau.post(env)
    assert status == 200 and again == {**body, "status": "duplicate"}
