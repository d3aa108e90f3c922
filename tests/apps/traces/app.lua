-- tests/apps/traces: a tool whose work is traced (tests/integration/traces.test.mjs).
return { name = "traces-test", version = "1.0.0" }
