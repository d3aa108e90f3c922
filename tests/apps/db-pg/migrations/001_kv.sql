-- portable: SQLite (luamcp check) and PostgreSQL alike
CREATE TABLE kv(id INTEGER PRIMARY KEY, k TEXT, v TEXT);
CREATE TABLE counter(id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
INSERT INTO counter VALUES (1, 0);
