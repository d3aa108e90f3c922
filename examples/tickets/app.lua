-- The tickets example: a small team app on the app's own database (mcp.db).
-- Each caller opens, lists and closes their own tickets; a caller with the
-- scope tickets:admin closes anyone's. The schema is migrations/'s.
return {
  name = "tickets",
  version = "1.0.0",
  title = "Tickets",
  instructions = "open_ticket opens one, list_tickets lists the caller's (open ones by default), comment_ticket adds a comment, close_ticket closes one.",
}
