-- PostgreSQL's spelling of 002
CREATE TABLE blobs(id bigserial PRIMARY KEY, b bytea);
