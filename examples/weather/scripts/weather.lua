-- weather.lua — the current weather of a city from Open-Meteo's free APIs
-- (no key): a geocoding lookup, then the forecast, two HTTP calls in a row.
-- Other clients are served while a call waits on the network.
--
-- WEATHER_GEOCODE_URL and WEATHER_FORECAST_URL point it elsewhere (the
-- tests run it against a local fake API).
local mcp = require "mcp"

local GEOCODE = os.getenv("WEATHER_GEOCODE_URL") or "https://geocoding-api.open-meteo.com/v1/search"
local FORECAST = os.getenv("WEATHER_FORECAST_URL") or "https://api.open-meteo.com/v1/forecast"

-- WMO weather interpretation codes (the ones Open-Meteo returns)
local CONDITIONS = {
  [0] = "clear sky", [1] = "mainly clear", [2] = "partly cloudy", [3] = "overcast",
  [45] = "fog", [48] = "rime fog", [51] = "light drizzle", [53] = "drizzle", [55] = "dense drizzle",
  [61] = "light rain", [63] = "rain", [65] = "heavy rain", [71] = "light snow", [73] = "snow",
  [75] = "heavy snow", [80] = "rain showers", [81] = "rain showers", [82] = "violent rain showers",
  [95] = "thunderstorm", [96] = "thunderstorm with hail", [99] = "thunderstorm with heavy hail",
}

local function urlencode(s)
  return (s:gsub("[^%w%-_%.~]", function(c) return string.format("%%%02X", c:byte()) end))
end

mcp.tool {
  name = "forecast",
  title = "Current weather",
  description = "The current weather (temperature, wind, conditions) of a city, by name.",
  input = { city = mcp.string { description = "City name, e.g. Berlin", minLength = 1 } },
  output = {
    city = mcp.string(),
    country = mcp.string(),
    temperature_c = mcp.number(),
    wind_kmh = mcp.number(),
    conditions = mcp.string(),
  },
  annotations = { readOnlyHint = true, openWorldHint = true },
  handler = function(args, ctx)
    local geo = mcp.http.get(GEOCODE .. "?count=1&name=" .. urlencode(args.city))
    if geo.status ~= 200 then return mcp.fail("geocoding failed: HTTP " .. geo.status) end
    local place = geo.json and geo.json.results and geo.json.results[1]
    if not place then return mcp.fail("no city called '" .. args.city .. "' was found") end
    ctx:progress(0.5, 1, "found " .. place.name)
    local url = string.format("%s?latitude=%s&longitude=%s&current_weather=true", FORECAST,
                              place.latitude, place.longitude)
    local fc = mcp.http.get(url, { timeout = 10 })
    if fc.status ~= 200 or not (fc.json and fc.json.current_weather) then
      return mcp.fail("the forecast service answered HTTP " .. fc.status)
    end
    local now = fc.json.current_weather
    return {
      city = place.name,
      country = place.country or "",
      temperature_c = now.temperature,
      wind_kmh = now.windspeed,
      conditions = CONDITIONS[now.weathercode] or ("weather code " .. tostring(now.weathercode)),
    }
  end,
}

mcp.tool {
  name = "local_time",
  title = "Local time",
  description = "The current date and time in an IANA time zone (e.g. Europe/Paris).",
  input = { timezone = mcp.string { pattern = "^[A-Za-z_]+(/[A-Za-z_+-]+)*$" } },
  annotations = { readOnlyHint = true },
  handler = function(args)
    -- no shell: argv goes to the program as is; TZ is set for the child only
    local r = mcp.exec { argv = { "date", "+%Y-%m-%d %H:%M %Z" }, env = { TZ = args.timezone }, timeout = 5 }
    if r.code ~= 0 then return mcp.fail("date failed: " .. r.stderr) end
    return args.timezone .. ": " .. r.stdout:gsub("%s+$", "")
  end,
}
