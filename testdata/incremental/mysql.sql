-- The portfolio example with change tracking, for MySQL/MariaDB (see
-- postgres.sql): DATETIME(6) change columns maintained by ON UPDATE
-- CURRENT_TIMESTAMP(6), and a DATETIME (whole seconds) on portfolios.
SET NAMES utf8mb4;
DROP TABLE IF EXISTS `contacts`;
DROP TABLE IF EXISTS `databases`;
DROP TABLE IF EXISTS `servers`;
DROP TABLE IF EXISTS `portfolios`;

CREATE TABLE `portfolios` (
    `id`         int PRIMARY KEY,
    `name`       varchar(255) NOT NULL,
    `updated_at` datetime NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `servers` (
    `id`           varchar(64) PRIMARY KEY,
    `portfolio_id` int NOT NULL,
    `hostname`     varchar(255) NOT NULL,
    `updated_at`   datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
    FOREIGN KEY (`portfolio_id`) REFERENCES `portfolios` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `databases` (
    `id`         varchar(64) PRIMARY KEY,
    `server_id`  varchar(64) NOT NULL,
    `engine`     varchar(64) NOT NULL,
    `updated_at` datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
    `deleted_at` datetime(6) NULL,
    FOREIGN KEY (`server_id`) REFERENCES `servers` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `contacts` (
    `portfolio_id` int NOT NULL,
    `email`        varchar(128) NOT NULL,
    `updated_at`   datetime(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),
    PRIMARY KEY (`portfolio_id`, `email`),
    FOREIGN KEY (`portfolio_id`) REFERENCES `portfolios` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

INSERT INTO `portfolios` (`id`, `name`, `updated_at`) VALUES
    (1, 'Jeff''s Plumbing', '2025-01-01 00:00:00'),
    (2, 'Bob''s TVs',       '2025-01-01 00:00:00'),
    (3, 'Ann''s Bakery',    '2025-01-01 01:00:00');

INSERT INTO `servers` (`id`, `portfolio_id`, `hostname`, `updated_at`) VALUES
    ('s1a', 1, 'jeff-site',     '2025-01-01 00:00:00'),
    ('s1b', 1, 'jeff-internal', '2025-01-01 00:00:00'),
    ('s2a', 2, 'bob-site',      '2025-01-01 00:00:00'),
    ('s3a', 3, 'ann-site',      '2025-01-01 01:00:00');

INSERT INTO `databases` (`id`, `server_id`, `engine`, `updated_at`) VALUES
    ('d1', 's1a', 'postgres', '2025-01-01 01:00:00'),
    ('d2', 's1a', 'mysql',    '2025-01-01 00:00:00'),
    ('d3', 's1b', 'postgres', '2025-01-01 00:00:00'),
    ('d4', 's2a', 'mysql',    '2025-01-01 00:00:00'),
    ('d5', 's2a', 'postgres', '2025-01-01 00:00:00'),
    ('d6', 's3a', 'mysql',    '2025-01-01 00:00:00'),
    ('d7', 's3a', 'postgres', '2025-01-01 00:00:00');

INSERT INTO `contacts` (`portfolio_id`, `email`, `updated_at`) VALUES
    (1, 'a@jeff.example', '2025-01-01 00:00:00'),
    (2, 'b@bob.example',  '2025-01-01 01:00:00');
