-- Every PostgreSQL type dynafold converts, with NULLs, unicode, large
-- decimals and timestamps in other zones; the golden files under
-- source/testdata/ hold what each becomes in DynamoDB.
DROP TABLE IF EXISTS type_samples;
DROP TYPE IF EXISTS mood;
CREATE TYPE mood AS ENUM ('happy', 'sad');
CREATE TABLE type_samples (
    id            integer PRIMARY KEY,
    c_smallint    smallint,
    c_int         integer,
    c_bigint      bigint,
    c_numeric     numeric,
    c_decimal     numeric(12, 4),
    c_real        real,
    c_double      double precision,
    c_bool        boolean,
    c_text        text,
    c_varchar     varchar(40),
    c_char        char(6),
    c_enum        mood,
    c_uuid        uuid,
    c_bytea       bytea,
    c_json        json,
    c_jsonb       jsonb,
    c_int_array   integer[],
    c_text_array  text[],
    c_date        date,
    c_timestamp   timestamp(3),
    c_timestamptz timestamptz,
    c_interval    interval
);
INSERT INTO type_samples VALUES
(1, 12, 123456, 9007199254740993, 12.50, 1234.5000, 1.5, 0.1, true,
 'Jeff''s Plumbing', 'varchar', 'ab', 'happy', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
 '\x00ff10', '{"b": [1, 2.50, "x"], "a": {"n": null, "t": true}}', '{"k": 12345678901234567890}',
 '{1,2,3}', '{"a","b c",NULL}', '2024-02-29', '2024-03-05 14:07:12.345', '2024-03-05 14:07:12.345+05:30', '1 day 02:03:04'),
(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
(3, -32768, -2147483648, -9223372036854775808, 12345678901234567890123456789012345678, -0.0001, -3.4e38, 1e-300, false,
 'Zoë Müller 東京 🚲', '', '東京', 'sad', '00000000-0000-0000-0000-000000000000',
 '', '[]', '{}',
 '{}', '{}', '1970-01-01', '1999-12-31 23:59:59.999', '2000-01-01 00:00:00-08', '-1 mon'),
(4, 32767, 2147483647, 9223372036854775807, 1234567890123456789012345678901234567.8, 99999999.9999, 'Infinity', 'NaN', true,
 'tab	and
newline', 'x', 'x', 'happy', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
 '\xdeadbeef', '"just a string"', '[1, "two", {"three": 3}]',
 '{-1,0}', '{"ünï"}', '9999-12-31', '2038-01-19 03:14:07.999', '2038-01-19 03:14:08+00', '0'),
(5, 0, 0, 0, 123456789012345678901234567890123456789, 0, 0, 0, false,
 'number too long', '', '', 'sad', '11111111-1111-1111-1111-111111111111',
 '\x', 'null', 'null', NULL, NULL, NULL, NULL, NULL, NULL),
(6, 1, 1, 1, 'NaN', 1, 1, 1, true, 'NaN numeric', '', '', 'happy', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
