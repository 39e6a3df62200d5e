-- The portfolio example of the reference design (003): portfolios own
-- servers, servers own databases. Loaded into PostgreSQL by tests and by
-- `make demo`.
DROP TABLE IF EXISTS databases;
DROP TABLE IF EXISTS servers;
DROP TABLE IF EXISTS portfolios;

CREATE TABLE portfolios (
    id   integer PRIMARY KEY,
    name text NOT NULL
);

CREATE TABLE servers (
    id           varchar(64) PRIMARY KEY,
    portfolio_id integer NOT NULL REFERENCES portfolios (id)
);
CREATE INDEX servers_portfolio_id ON servers (portfolio_id);

CREATE TABLE databases (
    id        varchar(64) PRIMARY KEY,
    server_id varchar(64) NOT NULL REFERENCES servers (id)
);
CREATE INDEX databases_server_id ON databases (server_id);

INSERT INTO portfolios (id, name) VALUES
    (1, 'Jeff''s Plumbing'),
    (2, 'Bob''s TVs');

INSERT INTO servers (id, portfolio_id) VALUES
    ('JeffSiteServer', 1),
    ('JeffInternalServer', 1),
    ('BobSiteServer', 2),
    ('BobInternalServer', 2);

INSERT INTO databases (id, server_id) VALUES
    ('JeffSiteDB', 'JeffSiteServer'),
    ('JeffInternalDB', 'JeffInternalServer'),
    ('BobSiteDB', 'BobSiteServer'),
    ('BobInternalDB', 'BobInternalServer');
