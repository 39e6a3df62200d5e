-- Folders own documents whose body (text) and content (bytea) may be
-- 8-16 KB: PostgreSQL stores such values out of line (TOAST), and an
-- update that leaves them unchanged sends no value for them under the
-- default replica identity. The sync fuzzer's "documents" design.
DROP TABLE IF EXISTS documents;
DROP TABLE IF EXISTS folders;

CREATE TABLE folders (
    id   integer PRIMARY KEY,
    name text NOT NULL
);

CREATE TABLE documents (
    id        integer PRIMARY KEY,
    folder_id integer NOT NULL REFERENCES folders (id),
    title     varchar(80) NOT NULL,
    status    varchar(16),
    body      text,
    content   bytea
);
CREATE INDEX documents_folder_id ON documents (folder_id);

INSERT INTO folders (id, name) VALUES
    (1, 'Contracts'),
    (2, 'Invoices');

INSERT INTO documents (id, folder_id, title, status, body, content) VALUES
    (1, 1, 'Lease', 'signed', 'The lessee shall…', '\x25504446'),
    (2, 1, 'NDA', NULL, repeat('confidential ', 1000), decode(repeat('00ff7f80', 2500), 'hex')),
    (3, 2, 'INV-1', 'paid', NULL, NULL);
