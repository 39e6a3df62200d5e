-- The portfolio example of the reference design (003), for MySQL/MariaDB.
SET NAMES utf8mb4;
DROP TABLE IF EXISTS `databases`;
DROP TABLE IF EXISTS `servers`;
DROP TABLE IF EXISTS `portfolios`;

CREATE TABLE `portfolios` (
    `id`   int PRIMARY KEY,
    `name` varchar(255) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `servers` (
    `id`           varchar(64) PRIMARY KEY,
    `portfolio_id` int NOT NULL,
    KEY `servers_portfolio_id` (`portfolio_id`),
    FOREIGN KEY (`portfolio_id`) REFERENCES `portfolios` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `databases` (
    `id`        varchar(64) PRIMARY KEY,
    `server_id` varchar(64) NOT NULL,
    KEY `databases_server_id` (`server_id`),
    FOREIGN KEY (`server_id`) REFERENCES `servers` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

INSERT INTO `portfolios` (`id`, `name`) VALUES
    (1, 'Jeff''s Plumbing'),
    (2, 'Bob''s TVs');

INSERT INTO `servers` (`id`, `portfolio_id`) VALUES
    ('JeffSiteServer', 1),
    ('JeffInternalServer', 1),
    ('BobSiteServer', 2),
    ('BobInternalServer', 2);

INSERT INTO `databases` (`id`, `server_id`) VALUES
    ('JeffSiteDB', 'JeffSiteServer'),
    ('JeffInternalDB', 'JeffInternalServer'),
    ('BobSiteDB', 'BobSiteServer'),
    ('BobInternalDB', 'BobInternalServer');
