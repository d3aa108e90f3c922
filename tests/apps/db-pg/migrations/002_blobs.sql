-- SQLite's spelling; migrations/postgres/002_blobs.sql replaces it there
CREATE TABLE blobs(id INTEGER PRIMARY KEY AUTOINCREMENT, b BLOB);
