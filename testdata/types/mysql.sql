-- Every MySQL/MariaDB type dynafold converts, with NULLs, unicode, large
-- decimals and timestamps; the golden files under source/testdata/ hold
-- what each becomes in DynamoDB. Sessions run in UTC (time_zone '+00:00').
SET NAMES utf8mb4;
SET time_zone = '+00:00';
DROP TABLE IF EXISTS type_samples;
CREATE TABLE type_samples (
    id          int PRIMARY KEY,
    c_tinyint   tinyint,
    c_bool      tinyint(1),
    c_smallint  smallint,
    c_int       int,
    c_bigint    bigint,
    c_ubigint   bigint unsigned,
    c_decimal   decimal(12, 4),
    c_decimal38 decimal(38, 0),
    c_decimal40 decimal(40, 0),
    c_float     float,
    c_double    double,
    c_varchar   varchar(40),
    c_char      char(6),
    c_text      text,
    c_enum      enum('happy', 'sad'),
    c_set       set('a', 'b', 'c'),
    c_binary    varbinary(16),
    c_blob      blob,
    c_json      json,
    c_date      date,
    c_datetime  datetime(3),
    c_timestamp timestamp(3) NULL DEFAULT NULL,
    c_year      year,
    c_time      time
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO type_samples VALUES
(1, 12, 1, 1234, 123456, 9007199254740993, 18446744073709551615, 1234.5000, 12345678901234567890123456789012345678, 1,
 1.5, 0.1, 'Jeff''s Plumbing', 'ab', 'text', 'happy', 'a,c', X'00FF10', X'DEADBEEF',
 '{"b": [1, 2.50, "x"], "a": {"n": null, "t": true}}', '2024-02-29', '2024-03-05 14:07:12.345', '2024-03-05 08:37:12.345', 2024, '26:03:04'),
(2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
(3, -128, 0, -32768, -2147483648, -9223372036854775808, 0, -0.0001, -99999999999999999999999999999999999999, 0,
 -3.4e38, 1e-300, 'Zoë Müller 東京 🚲', '東京', '', 'sad', '', X'', X'',
 '[]', '1970-01-01', '1999-12-31 23:59:59.999', '2000-01-01 08:00:00', 1901, '-838:59:59'),
(4, 127, 1, 32767, 2147483647, 9223372036854775807, 9223372036854775808, 99999999.9999, 99999999999999999999999999999999999999, 1234567890123456789012345678901234567890,
 0, 0, 'tab\tand\nnewline', 'x', 'x', 'happy', 'b', X'FF', X'00',
 '"just a string"', '9999-12-31', '2038-01-19 03:14:07.999', '2038-01-19 03:14:07', 2155, '00:00:00');
