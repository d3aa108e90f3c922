return { name = "db-test", version = "1.0.0" }
