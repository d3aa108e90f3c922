-- The app of tests/integration/db-pg.test.mjs: mcp.db on PostgreSQL.
return { name = "db-pg", version = "1.0.0" }
