-- Data for the plan tests (cmd/dynafold/plan_test.go): each table feeds
-- one check of `dynafold plan`. Loaded into PostgreSQL.
DROP TABLE IF EXISTS docs, notes, orders, events, customers, vendors, order_lines, parts;

-- limits.yaml: an item over 400 KB and a 1,100-byte sort key.
CREATE TABLE docs (id integer PRIMARY KEY, body text NOT NULL);
INSERT INTO docs VALUES (1, 'short'), (2, repeat('x', 410000));
CREATE TABLE notes (id integer PRIMARY KEY, title varchar(1200) NOT NULL);
INSERT INTO notes VALUES (1, 'hello'), (2, repeat('n', 1100));

-- lsi.yaml: customer 1's item collection outgrows a lowered LSI limit.
CREATE TABLE orders (id integer PRIMARY KEY, customer_id integer NOT NULL, note varchar(400) NOT NULL);
INSERT INTO orders SELECT g, 1, repeat('o', 300) FROM generate_series(1, 10) AS g;
INSERT INTO orders VALUES (11, 2, 'one order');

-- skew.yaml: one status holds most events, and so most of GSI1.
CREATE TABLE events (id integer PRIMARY KEY, status varchar(20) NOT NULL);
INSERT INTO events SELECT g, 'open' FROM generate_series(1, 30) AS g;
INSERT INTO events VALUES (31, 'closed'), (32, 'closed'), (33, 'closed'), (34, 'new'), (35, 'new');

-- collide.yaml: customers and vendors share ids and map to one key form.
CREATE TABLE customers (id integer PRIMARY KEY, name varchar(40) NOT NULL);
INSERT INTO customers VALUES (1, 'Ann'), (2, 'Bob');
CREATE TABLE vendors (id integer PRIMARY KEY, name varchar(40) NOT NULL);
INSERT INTO vendors VALUES (2, 'Acme'), (3, 'Initech');

-- nonunique.yaml: the key leaves out line_no of the primary key.
CREATE TABLE order_lines (order_id integer, line_no integer, sku varchar(20) NOT NULL, PRIMARY KEY (order_id, line_no));
INSERT INTO order_lines VALUES (1, 1, 'A'), (1, 2, 'B'), (2, 1, 'C');

-- wcu.yaml: item sizes on both sides of 1 KB, a sparse GSI and an
-- INCLUDE projection, for write units computed by hand.
CREATE TABLE parts (id integer PRIMARY KEY, payload text NOT NULL, category varchar(10));
INSERT INTO parts VALUES (1, repeat('p', 10), 'a'), (2, repeat('p', 1000), 'a'), (3, repeat('p', 2000), NULL), (4, repeat('p', 5000), 'b');
