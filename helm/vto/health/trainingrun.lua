-- Argo CD health check for vto.dev/TrainingRun (resource.customizations.health.vto.dev_TrainingRun).
-- Reads the kstatus conditions vto writes (Ready, Reconciling, Stalled), and the phase for a status
-- written before them. Only Lua's base library: Argo CD opens no other for health checks.
local hs = {status = "Progressing", message = "waiting for the vto operator"}
if obj.status == nil then
  return hs
end
local status = obj.status
if obj.metadata ~= nil and obj.metadata.generation ~= nil and status.observedGeneration ~= nil and
    status.observedGeneration ~= obj.metadata.generation then
  hs.message = "waiting for the vto operator to observe generation " .. tostring(obj.metadata.generation)
  return hs
end
local message = status.message or ""
if status.progress ~= nil and status.progress.percent ~= nil and status.phase == "Running" then
  message = message .. " (" .. tostring(status.progress.percent) .. "%"
  if status.progress.eta ~= nil then
    message = message .. ", ETA " .. status.progress.eta
  end
  message = message .. ")"
end
hs.message = message
local conditions = {}
if status.conditions ~= nil then
  for _, c in ipairs(status.conditions) do
    conditions[c.type] = c
  end
end
local function isTrue(name)
  return conditions[name] ~= nil and conditions[name].status == "True"
end
if isTrue("Stalled") then
  hs.status = "Degraded"
elseif isTrue("Ready") then
  hs.status = "Healthy"
elseif status.phase == "Suspended" then
  hs.status = "Suspended"
elseif conditions["Ready"] == nil and status.phase == "Succeeded" then
  hs.status = "Healthy"
elseif conditions["Stalled"] == nil and (status.phase == "Failed" or status.phase == "Invalid" or
    status.phase == "Cancelled") then
  hs.status = "Degraded"
else
  hs.status = "Progressing"
end
return hs
