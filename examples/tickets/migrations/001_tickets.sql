-- migrations/001_tickets.sql: tickets and their comments. Applied once when the
-- app loads (luamcp keeps which in luamcp_migrations); a later change goes in
-- 002_….sql, never here.
CREATE TABLE tickets(
  id INTEGER PRIMARY KEY,
  owner TEXT NOT NULL,                 -- ctx.auth.key: the caller's issuer and subject
  title TEXT NOT NULL,
  state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed')),
  opened_at INTEGER NOT NULL,          -- os.time()
  closed_at INTEGER
);
-- "my open tickets, newest first" reads one range of this index
CREATE INDEX tickets_owner_state ON tickets(owner, state, opened_at);

CREATE TABLE comments(
  id INTEGER PRIMARY KEY,
  ticket INTEGER NOT NULL REFERENCES tickets(id) ON DELETE CASCADE,
  author TEXT NOT NULL,
  body TEXT NOT NULL,
  at INTEGER NOT NULL
);
CREATE INDEX comments_ticket ON comments(ticket, id);
