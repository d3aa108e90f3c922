return { name = "workbench", version = "1.0.0", description = "luamcp test's fixture: a tool for every fake" }
