return { name = "modern-test", version = "2.0.0", instructions = "An app for the 2026-07-28 tests." }
