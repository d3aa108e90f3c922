return { name = "spawn", version = "1.0.0" }
