-- the notes of bench/db (SQLite's spelling; migrations/postgres/ has PostgreSQL's)
CREATE TABLE notes(id INTEGER PRIMARY KEY, who TEXT, body TEXT);
CREATE INDEX notes_who ON notes(who);
