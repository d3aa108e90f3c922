-- tests/apps/auth: tools, a resource, a template and a prompt that declare
-- scopes, and whoami, which shows ctx.auth (tests/integration/auth.test.mjs).
return { name = "auth-test", version = "1.0.0" }
