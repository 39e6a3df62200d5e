-- Bad rows (issue 8) for MariaDB/MySQL: the rows of postgres.sql.
-- Where MariaDB cannot hold the PostgreSQL value, the column takes the form
-- such data has in a real MariaDB schema:
--   weight: DOUBLE cannot store NaN (MariaDB refuses it), so the column is
--     the text a legacy application wrote its floats as, 'NaN' included,
--     mapped with type: N like the PostgreSQL double;
--   label: MariaDB converts text columns to the connection's utf8mb4, so
--     invalid UTF-8 reaches a reader only from a binary column: VARBINARY
--     mapped with type: S, like the PostgreSQL bytea;
--   tags: MariaDB has no arrays; a JSON array is the form sets take.
SET NAMES utf8mb4;
DROP TABLE IF EXISTS `parts`;

CREATE TABLE `parts` (
    `id`          int PRIMARY KEY,
    `bin`         varchar(3000) NULL,
    `code`        varchar(2000) NOT NULL,
    `description` longtext NULL,
    `price`       decimal(65,4) NULL,
    `weight`      varchar(32) NULL,
    `label`       varbinary(64) NULL,
    `tags`        json NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

INSERT INTO `parts` (`id`, `bin`, `code`, `description`, `price`, `weight`, `label`, `tags`) VALUES
-- Good rows, some at the limits.
(1,  'A1', 'BOLT-M8', 'Hex bolt M8x40', 0.25, '0.012', 'M8 bolt', '["steel", "zinc"]'),
(2,  'A1', 'NUT-M8', 'Hex nut M8', 0.05, '0.004', 'écrou M8', '["steel"]'),
(4,  'B2', 'WASHER-8', NULL, 0.01, NULL, NULL, NULL),
(6,  'B2', 'GASKET-120', 'Gasket', 12345678901234567890123456789012345678, '1.5', 'gasket', '["rubber"]'),
(8,  REPEAT('b', 2048), 'SHELF-MAX', 'Top shelf', 3.50, '2', NULL, NULL),
(10, 'C3', REPEAT('c', 1019), 'Longest code', 1, '0.5', NULL, NULL),
(12, 'C3', 'MANUAL-1', REPEAT('m', 300000), 9.99, '0.25', 'manual', '["paper"]'),
(14, 'D4', 'SPRING-5', 'Spring', 0.75, '2.5', NULL, '[]'),
(16, 'D4', 'PIN-2', 'Pin', 0, '0.001', 'pin', '["steel", "brass"]'),
-- Bad rows.
(3,  NULL, 'CLIP-1', 'no bin', 0.10, '0.002', NULL, NULL),
(5,  '', 'CLIP-2', 'empty bin', 0.10, '0.002', NULL, NULL),
(7,  REPEAT('b', 2049), 'CLIP-3', 'bin too long', 0.10, '0.002', NULL, NULL),
(9,  'C3', REPEAT('c', 1020), 'code too long', 0.10, '0.002', NULL, NULL),
(11, 'E5', 'CATALOG-1', REPEAT('d', 410000), 0.10, '0.002', NULL, NULL),
(13, 'E5', 'CLIP-4', 'price', 123456789012345678901234567890123456789, '0.002', NULL, NULL),
(15, 'E5', 'CLIP-5', 'weight', 0.10, 'NaN', NULL, NULL),
(17, 'E5', 'CLIP-6', 'label', 0.10, '0.002', X'FF6E6F', NULL),
(18, 'E5', 'CLIP-7', 'tags', 0.10, '0.002', NULL, '["steel", "steel"]');
