-- The portfolio example with change tracking, for incremental runs: every
-- table has updated_at, databases a soft-delete column, and portfolios
-- nest their contacts. Most rows changed long ago; one row per table holds
-- the newest value (the watermark the first run records), an hour later.
DROP TABLE IF EXISTS contacts;
DROP TABLE IF EXISTS databases;
DROP TABLE IF EXISTS servers;
DROP TABLE IF EXISTS portfolios;

CREATE TABLE portfolios (
    id         integer PRIMARY KEY,
    name       text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE servers (
    id           varchar(64) PRIMARY KEY,
    portfolio_id integer NOT NULL REFERENCES portfolios (id),
    hostname     text NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE databases (
    id         varchar(64) PRIMARY KEY,
    server_id  varchar(64) NOT NULL REFERENCES servers (id),
    engine     text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    deleted_at timestamptz
);

CREATE TABLE contacts (
    portfolio_id integer NOT NULL REFERENCES portfolios (id),
    email        varchar(128) NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (portfolio_id, email)
);

INSERT INTO portfolios (id, name, updated_at) VALUES
    (1, 'Jeff''s Plumbing', '2025-01-01 00:00:00+00'),
    (2, 'Bob''s TVs',       '2025-01-01 00:00:00+00'),
    (3, 'Ann''s Bakery',    '2025-01-01 01:00:00+00');

INSERT INTO servers (id, portfolio_id, hostname, updated_at) VALUES
    ('s1a', 1, 'jeff-site',     '2025-01-01 00:00:00+00'),
    ('s1b', 1, 'jeff-internal', '2025-01-01 00:00:00+00'),
    ('s2a', 2, 'bob-site',      '2025-01-01 00:00:00+00'),
    ('s3a', 3, 'ann-site',      '2025-01-01 01:00:00+00');

INSERT INTO databases (id, server_id, engine, updated_at) VALUES
    ('d1', 's1a', 'postgres', '2025-01-01 01:00:00+00'),
    ('d2', 's1a', 'mysql',    '2025-01-01 00:00:00+00'),
    ('d3', 's1b', 'postgres', '2025-01-01 00:00:00+00'),
    ('d4', 's2a', 'mysql',    '2025-01-01 00:00:00+00'),
    ('d5', 's2a', 'postgres', '2025-01-01 00:00:00+00'),
    ('d6', 's3a', 'mysql',    '2025-01-01 00:00:00+00'),
    ('d7', 's3a', 'postgres', '2025-01-01 00:00:00+00');

INSERT INTO contacts (portfolio_id, email, updated_at) VALUES
    (1, 'a@jeff.example', '2025-01-01 00:00:00+00'),
    (2, 'b@bob.example',  '2025-01-01 01:00:00+00');
