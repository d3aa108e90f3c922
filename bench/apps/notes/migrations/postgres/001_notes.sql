-- PostgreSQL's spelling of 001: ids from a sequence
CREATE TABLE notes(id bigserial PRIMARY KEY, who text, body text);
CREATE INDEX notes_who ON notes(who);
