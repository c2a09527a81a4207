-- Revision 2 (SPEC §5): only a *favourable* verdict (an attestation ACCEPTED,
-- ACCEPTED_AFTER_CORRECTIONS or DECLINED; a value judgment VALUE_OK) can be
-- self-dealing, so an enrollment or amendment that reveals a link excludes only those.
-- The admission index says which verdicts they are; rows already there are filled in
-- from their entries' payloads. (0007 is taken by the transparency tables.)
ALTER TABLE verdicts ADD COLUMN favourable boolean;

UPDATE verdicts v SET favourable = CASE v.kind
        WHEN 'attestation' THEN p.doc ->> 'outcome' IN
            ('ACCEPTED', 'ACCEPTED_AFTER_CORRECTIONS', 'DECLINED')
        ELSE p.doc ->> 'judgment' = 'VALUE_OK' END
    FROM (SELECT e.seq, convert_from(decode(
                 convert_from(e.entry, 'UTF8')::jsonb -> 'envelope' ->> 'payload', 'base64'),
                 'UTF8')::jsonb AS doc
            FROM entries e JOIN verdicts w ON w.seq = e.seq) AS p
    WHERE p.seq = v.seq;

ALTER TABLE verdicts ALTER COLUMN favourable SET NOT NULL;

