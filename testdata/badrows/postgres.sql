-- Bad rows (issue 8) for PostgreSQL: a legacy parts catalog in which nine
-- rows cannot become DynamoDB items, one defect each, between good rows
-- that sit exactly at DynamoDB's limits. cmd/dynafold/badrows_test.go
-- migrates it with testdata/badrows/mapping.yaml under every on_error
-- policy; mysql.sql holds the same rows for MariaDB.
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;

DROP TABLE IF EXISTS parts;

CREATE TABLE parts (
    id          int PRIMARY KEY,
    bin         text,             -- the item's partition key
    code        text NOT NULL,    -- the sort key: PART#<code>
    description text,
    price       numeric,
    weight      double precision, -- stored with type: N
    label       bytea,            -- UTF-8 text kept as bytes, stored with type: S
    tags        text[]            -- stored with type: SS
);

INSERT INTO parts (id, bin, code, description, price, weight, label, tags) VALUES
-- Good rows, some at the limits: a 2048-byte partition key, a 1024-byte
-- sort key, 38 significant digits, a 300 KB item, NULLs and an empty set
-- (attributes left out).
(1,  'A1', 'BOLT-M8', 'Hex bolt M8x40', 0.25, 0.012, convert_to('M8 bolt', 'UTF8'), '{steel,zinc}'),
(2,  'A1', 'NUT-M8', 'Hex nut M8', 0.05, 0.004, convert_to('écrou M8', 'UTF8'), '{steel}'),
(4,  'B2', 'WASHER-8', NULL, 0.01, NULL, NULL, NULL),
(6,  'B2', 'GASKET-120', 'Gasket', 12345678901234567890123456789012345678, 1.5, convert_to('gasket', 'UTF8'), '{rubber}'),
(8,  repeat('b', 2048), 'SHELF-MAX', 'Top shelf', 3.50, 2, NULL, NULL),
(10, 'C3', repeat('c', 1019), 'Longest code', 1, 0.5, NULL, NULL),
(12, 'C3', 'MANUAL-1', repeat('m', 300000), 9.99, 0.25, convert_to('manual', 'UTF8'), '{paper}'),
(14, 'D4', 'SPRING-5', 'Spring', 0.75, 2.5, NULL, '{}'),
(16, 'D4', 'PIN-2', 'Pin', 0, 0.001, convert_to('pin', 'UTF8'), '{steel,brass}'),
-- Bad rows.
(3,  NULL, 'CLIP-1', 'no bin', 0.10, 0.002, NULL, NULL),                                   -- NULL partition key
(5,  '', 'CLIP-2', 'empty bin', 0.10, 0.002, NULL, NULL),                                  -- empty partition key
(7,  repeat('b', 2049), 'CLIP-3', 'bin too long', 0.10, 0.002, NULL, NULL),                -- partition key of 2049 bytes
(9,  'C3', repeat('c', 1020), 'code too long', 0.10, 0.002, NULL, NULL),                   -- sort key of 1025 bytes
(11, 'E5', 'CATALOG-1', repeat('d', 410000), 0.10, 0.002, NULL, NULL),                     -- item over 400 KB
(13, 'E5', 'CLIP-4', 'price', 123456789012345678901234567890123456789, 0.002, NULL, NULL), -- 39 significant digits
(15, 'E5', 'CLIP-5', 'weight', 0.10, 'NaN', NULL, NULL),                                   -- NaN
(17, 'E5', 'CLIP-6', 'label', 0.10, 0.002, '\xff6e6f'::bytea, NULL),                       -- not UTF-8
(18, 'E5', 'CLIP-7', 'tags', 0.10, 0.002, NULL, '{steel,steel}');                          -- a set with a duplicate
