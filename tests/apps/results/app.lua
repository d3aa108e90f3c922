-- The results test app (tests/integration/results.test.mjs): one tool per
-- row of README's "Results" table.
return { name = "results-test", version = "1.0.0" }
