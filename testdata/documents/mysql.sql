-- The "documents" design of the sync fuzzer for MySQL/MariaDB: body
-- (mediumtext) and content (blob) may be 8-16 KB.
SET NAMES utf8mb4;
DROP TABLE IF EXISTS `documents`;
DROP TABLE IF EXISTS `folders`;

CREATE TABLE `folders` (
    `id`   int PRIMARY KEY,
    `name` varchar(255) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE `documents` (
    `id`        int PRIMARY KEY,
    `folder_id` int NOT NULL,
    `title`     varchar(80) NOT NULL,
    `status`    varchar(16),
    `body`      mediumtext,
    `content`   blob,
    KEY `documents_folder_id` (`folder_id`),
    FOREIGN KEY (`folder_id`) REFERENCES `folders` (`id`)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

INSERT INTO `folders` (`id`, `name`) VALUES
    (1, 'Contracts'),
    (2, 'Invoices');

INSERT INTO `documents` (`id`, `folder_id`, `title`, `status`, `body`, `content`) VALUES
    (1, 1, 'Lease', 'signed', 'The lessee shall…', X'25504446'),
    (2, 1, 'NDA', NULL, REPEAT('confidential ', 1000), UNHEX(REPEAT('00ff7f80', 2500))),
    (3, 2, 'INV-1', 'paid', NULL, NULL);
