-- Argo CD health check for vto.dev/RetrainingPolicy (resource.customizations.health.vto.dev_RetrainingPolicy).
-- Healthy while valid and its triggers answer; Degraded when it needs an edit or a trigger fails;
-- Suspended with spec.suspend. Only Lua's base library: Argo CD opens no other for health checks.
local hs = {status = "Progressing", message = "waiting for the vto operator"}
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
local status = obj.status
if obj.metadata ~= nil and obj.metadata.generation ~= nil and status.observedGeneration ~= nil and
    status.observedGeneration ~= obj.metadata.generation then
  hs.message = "waiting for the vto operator to observe generation " .. tostring(obj.metadata.generation)
  return hs
end
local conditions = {}
for _, c in ipairs(status.conditions) do
  conditions[c.type] = c
end
local function is(name, value)
  return conditions[name] ~= nil and conditions[name].status == value
end
local ready = conditions["Ready"]
if is("Stalled", "True") then
  hs.status = "Degraded"
  hs.message = conditions["Stalled"].message or ""
elseif is("Suspended", "True") then
  hs.status = "Suspended"
  hs.message = conditions["Suspended"].message or "suspended"
elseif is("Ready", "True") then
  hs.status = "Healthy"
  hs.message = ready.message or ""
elseif is("TriggersHealthy", "False") then
  hs.status = "Degraded"
  hs.message = conditions["TriggersHealthy"].message or ""
elseif ready ~= nil then
  hs.message = ready.message or ""
end
return hs
