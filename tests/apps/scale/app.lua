return { name = "scale", version = "1.0.0" }
