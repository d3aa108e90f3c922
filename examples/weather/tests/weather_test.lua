-- luamcp test examples/weather: the forecast tool against a fake Open-Meteo,
-- and local_time against a fake `date`. No network, no waiting.
local test = require "mcp.test"
local app = test.app()

local GEOCODE = "https://geocoding-api.open-meteo.com/v1/search?*"
local FORECAST = "https://api.open-meteo.com/v1/forecast?*"

test("forecast: a city is geocoded, then its weather fetched", function()
  test.http.route("GET", GEOCODE, { json = { results = { { name = "Berlin", country = "Germany",
    latitude = 52.52, longitude = 13.41 } } } })
  test.http.route("GET", FORECAST, { json = { current_weather = { temperature = 21.5, windspeed = 9, weathercode = 2 } } })
  local r = app:call("forecast", { city = "Berlin" })
  test.eq(r.structuredContent, { city = "Berlin", country = "Germany", temperature_c = 21.5,
    wind_kmh = 9, conditions = "partly cloudy" })
  test.match(test.http.requests[1].url, "name=Berlin$")
  test.match(test.http.requests[2].url, "latitude=52.52&longitude=13.41")
  test.eq(app.notifications[1].params.message, "found Berlin") -- its progress
end)

test("forecast: an unknown city is an isError, and the forecast is never asked", function()
  test.http.route("GET", GEOCODE, { json = {} })
  local r = app:call("forecast", { city = "Atlantis" })
  test.eq(r.isError, true)
  test.eq(r.content[1].text, "no city called 'Atlantis' was found")
  test.eq(#test.http.requests, 1)
end)

test("forecast: the forecast service failing", function()
  test.http.route("GET", GEOCODE, { json = { results = { { name = "Oslo", latitude = 59.9, longitude = 10.7 } } } })
  test.http.route("GET", FORECAST, { status = 503 })
  test.eq(app:call("forecast", { city = "Oslo" }).content[1].text, "the forecast service answered HTTP 503")
end)

test("local_time: date runs with TZ set, and no shell", function()
  test.exec.route({ "date", "+%Y-%m-%d %H:%M %Z" }, function(run)
    test.eq(run.env, { TZ = "Europe/Paris" })
    return { stdout = "2026-12-01 10:00 CET\n" }
  end)
  test.eq(app:call("local_time", { timezone = "Europe/Paris" }).content[1].text, "Europe/Paris: 2026-12-01 10:00 CET")
end)

test("local_time: a time zone that is not one is refused before date runs", function()
  local r = app:call("local_time", { timezone = "; rm -rf /" })
  test.eq(r.isError, true)
  test.eq(#test.exec.runs, 0)
end)
