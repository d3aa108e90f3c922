-- helper.lua — a module of the app's own: require finds it in lib/ with or without --sandbox.
return { answer = 42 }
