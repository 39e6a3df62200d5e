-- Data for the plan tests (cmd/dynafold/plan_test.go), for MySQL/MariaDB.
SET NAMES utf8mb4;
DROP TABLE IF EXISTS docs, notes, orders, events, customers, vendors, order_lines, parts;

CREATE TABLE docs (id int PRIMARY KEY, body mediumtext NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO docs VALUES (1, 'short'), (2, REPEAT('x', 410000));
CREATE TABLE notes (id int PRIMARY KEY, title varchar(1200) NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO notes VALUES (1, 'hello'), (2, REPEAT('n', 1100));

CREATE TABLE orders (id int PRIMARY KEY, customer_id int NOT NULL, note varchar(400) NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO orders VALUES (1, 1, REPEAT('o', 300)), (2, 1, REPEAT('o', 300)), (3, 1, REPEAT('o', 300)), (4, 1, REPEAT('o', 300)),
    (5, 1, REPEAT('o', 300)), (6, 1, REPEAT('o', 300)), (7, 1, REPEAT('o', 300)), (8, 1, REPEAT('o', 300)),
    (9, 1, REPEAT('o', 300)), (10, 1, REPEAT('o', 300)), (11, 2, 'one order');

CREATE TABLE events (id int PRIMARY KEY, status varchar(20) NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO events VALUES (1, 'open'), (2, 'open'), (3, 'open'), (4, 'open'), (5, 'open'), (6, 'open'), (7, 'open'), (8, 'open'),
    (9, 'open'), (10, 'open'), (11, 'open'), (12, 'open'), (13, 'open'), (14, 'open'), (15, 'open'), (16, 'open'),
    (17, 'open'), (18, 'open'), (19, 'open'), (20, 'open'), (21, 'open'), (22, 'open'), (23, 'open'), (24, 'open'),
    (25, 'open'), (26, 'open'), (27, 'open'), (28, 'open'), (29, 'open'), (30, 'open'),
    (31, 'closed'), (32, 'closed'), (33, 'closed'), (34, 'new'), (35, 'new');

CREATE TABLE customers (id int PRIMARY KEY, name varchar(40) NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO customers VALUES (1, 'Ann'), (2, 'Bob');
CREATE TABLE vendors (id int PRIMARY KEY, name varchar(40) NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO vendors VALUES (2, 'Acme'), (3, 'Initech');

CREATE TABLE order_lines (order_id int, line_no int, sku varchar(20) NOT NULL, PRIMARY KEY (order_id, line_no)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO order_lines VALUES (1, 1, 'A'), (1, 2, 'B'), (2, 1, 'C');

CREATE TABLE parts (id int PRIMARY KEY, payload text NOT NULL, category varchar(10) NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
INSERT INTO parts VALUES (1, REPEAT('p', 10), 'a'), (2, REPEAT('p', 1000), 'a'), (3, REPEAT('p', 2000), NULL), (4, REPEAT('p', 5000), 'b');
