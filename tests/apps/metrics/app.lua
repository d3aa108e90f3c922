-- tests/apps/metrics: tools that succeed, fail, time out and refuse, for the
-- counts Prometheus must see (tests/integration/metrics.test.mjs).
return { name = "metrics-test", version = "2.0.0" }
