#!/usr/bin/env bash
# Checks, on a real Google Cloud project, the assumptions docs/google-fidelity.md marks "unverified",
# and prints one row per check. CPU only and cheap: it uploads two versions of a throwaway model (a
# file in a bucket you own, Google's prebuilt sklearn serving image), imports evaluations, moves an
# alias, reads Cloud Logging past its quota, then deletes the model. Never run in CI.
#
#   PROJECT=my-throwaway-project LOCATION=us-central1 BUCKET=gs://my-throwaway-bucket scripts/verify-on-gcp.sh
#
# Needs gcloud (logged in: gcloud auth print-access-token), curl and jq; the caller needs
# roles/aiplatform.user, roles/logging.viewer and write access to BUCKET.
set -euo pipefail

: "${PROJECT:?set PROJECT to a throwaway project ID}"
: "${LOCATION:=us-central1}"
: "${BUCKET:?set BUCKET to a gs:// bucket you own, e.g. gs://my-throwaway-bucket}"
for tool in gcloud curl jq; do command -v "$tool" >/dev/null || { echo "verify-on-gcp: needs $tool" >&2; exit 2; }; done

TOKEN=$(gcloud auth print-access-token)
API="https://${LOCATION}-aiplatform.googleapis.com/v1/projects/${PROJECT}/locations/${LOCATION}"
MODEL_ID="vto-verify-$(date +%s)"
ARTIFACT="${BUCKET%/}/vto-verify/${MODEL_ID}/"
IMAGE="us-docker.pkg.dev/vertex-ai/prediction/sklearn-cpu.1-3:latest"
ROWS=()

call() {  # METHOD URL [BODY] -> prints "HTTP_STATUS BODY"
  local method=$1 url=$2 body=${3:-}
  local out status
  out=$(mktemp)
  status=$(curl -sS -o "$out" -w '%{http_code}' -X "$method" -H "Authorization: Bearer ${TOKEN}" \
    -H 'Content-Type: application/json' ${body:+--data "$body"} "$url")
  echo "$status $(cat "$out")"
  rm -f "$out"
}
row() { ROWS+=("$(printf '| %-44s | %-60s |' "$1" "$2")"); }

wait_operation() {  # NAME -> the done operation's JSON
  local name=$1 answer
  for _ in $(seq 60); do
    answer=$(call GET "https://${LOCATION}-aiplatform.googleapis.com/v1/${name}" | cut -d' ' -f2-)
    [ "$(jq -r '.done // false' <<<"$answer")" = true ] && { echo "$answer"; return; }
    sleep 5
  done
  echo '{"error": {"message": "timed out"}}'
}

upload() {  # LABELS_JSON [PARENT] -> the version ID
  local labels=$1 parent=${2:-} body
  body=$(jq -n --arg id "$MODEL_ID" --arg parent "$parent" --arg uri "$ARTIFACT" --arg image "$IMAGE" --argjson labels "$labels" \
    '{model: {displayName: $id, artifactUri: $uri, containerSpec: {imageUri: $image}, labels: $labels}}
     + (if $parent == "" then {modelId: $id} else {parentModel: $parent} end)')
  local started
  started=$(call POST "${API}/models:upload" "$body")
  local name
  name=$(cut -d' ' -f2- <<<"$started" | jq -r '.name // empty')
  [ -n "$name" ] || { echo "upload refused: $started" >&2; exit 1; }
  wait_operation "$name" | jq -r '.response.modelVersionId // empty'
}

echo "verify-on-gcp: model ${MODEL_ID} in ${PROJECT}/${LOCATION}, artifact ${ARTIFACT}" >&2
echo 'vto verify-on-gcp' | gsutil -q cp - "${ARTIFACT}model.joblib.placeholder"
trap 'call DELETE "${API}/models/${MODEL_ID}" >/dev/null || true; gsutil -q rm -r "${ARTIFACT}" || true' EXIT

v1=$(upload '{"vto-run-uid": "one", "who": "model"}')
v2=$(upload '{"vto-run-uid": "two"}' "projects/${PROJECT}/locations/${LOCATION}/models/${MODEL_ID}")

# Names: a project number or the ID?
name=$(call GET "${API}/models/${MODEL_ID}@${v2}" | cut -d' ' -f2- | jq -r .name)
row "names carry the project number" "$name"
row "numeric model IDs (upload without modelId)" "see the model the console makes; this run used modelId ${MODEL_ID}"

# Label merging: what does version 2 show for a key both carry?
labels=$(call GET "${API}/models/${MODEL_ID}@${v2}" | cut -d' ' -f2- | jq -c .labels)
row "labels of version ${v2} (model's were vto-run-uid=one, who=model)" "$labels"
listed=$(call GET "${API}/models/${MODEL_ID}:listVersions?filter=labels.vto-run-uid%3D%22two%22" | cut -d' ' -f2- | jq -c '[.models[]?.versionId]')
row "listVersions labels.vto-run-uid=\"two\"" "$listed"
listname=$(call GET "${API}/models/${MODEL_ID}:listVersions" | cut -d' ' -f2- | jq -r '.models[0].name')
row "a listed version's name" "$listname"

# Alias move: add an alias held by version 1 to version 2.
call POST "${API}/models/${MODEL_ID}@${v1}:mergeVersionAliases" '{"versionAliases": ["champion"]}' >/dev/null
moved=$(call POST "${API}/models/${MODEL_ID}@${v2}:mergeVersionAliases" '{"versionAliases": ["champion"]}')
row "alias held by v${v1} added to v${v2}" "HTTP $(cut -d' ' -f1 <<<"$moved"); v${v1} now $(call GET "${API}/models/${MODEL_ID}@${v1}" | cut -d' ' -f2- | jq -c .versionAliases)"
upper=$(call POST "${API}/models/${MODEL_ID}@${v2}:mergeVersionAliases" '{"versionAliases": ["Champion"]}' | cut -d' ' -f1)
trailing=$(call POST "${API}/models/${MODEL_ID}@${v2}:mergeVersionAliases" '{"versionAliases": ["ends-"]}' | cut -d' ' -f1)
row "aliases Champion / ends-" "HTTP ${upper} / HTTP ${trailing}"

# Evaluations: without a schema, with Google's classification schema and a name it lacks, and right.
schema=gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml
none=$(call POST "${API}/models/${MODEL_ID}@${v2}/evaluations:import" '{"modelEvaluation": {"metrics": {"auc": 0.9}}}')
row "import without metricsSchemaUri" "$(cut -c1-60 <<<"$none")"
wrong=$(call POST "${API}/models/${MODEL_ID}@${v2}/evaluations:import" "{\"modelEvaluation\": {\"metricsSchemaUri\": \"${schema}\", \"metrics\": {\"auc\": 0.9}}}")
row "import auc with the classification schema" "$(cut -c1-60 <<<"$wrong")"
right=$(call POST "${API}/models/${MODEL_ID}@${v2}/evaluations:import" "{\"modelEvaluation\": {\"metricsSchemaUri\": \"${schema}\", \"metrics\": {\"auRoc\": 0.9}}}")
row "import auRoc with the classification schema" "$(cut -c1-60 <<<"$right")"

# Cloud Logging: 70 reads in a row; the first 429's shape and headers.
first429=""
for i in $(seq 70); do
  headers=$(mktemp)
  status=$(curl -sS -D "$headers" -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer ${TOKEN}" \
    -H 'Content-Type: application/json' --data "{\"resourceNames\": [\"projects/${PROJECT}\"], \"filter\": \"timestamp>=\\\"$(date -u -d '-5 min' +%FT%TZ)\\\"\", \"pageSize\": 1}" \
    https://logging.googleapis.com/v2/entries:list)
  if [ "$status" = 429 ] && [ -z "$first429" ]; then
    first429="after ${i} reads; Retry-After: $(grep -i '^retry-after:' "$headers" | tr -d '\r' | cut -d' ' -f2- || true)"
  fi
  rm -f "$headers"
done
row "Logging 429 (reads a minute, Retry-After)" "${first429:-no 429 in 70 reads}"
empty=$(curl -sS -X POST -H "Authorization: Bearer ${TOKEN}" -H 'Content-Type: application/json' \
  --data "{\"resourceNames\": [\"projects/${PROJECT}\"], \"filter\": \"resource.type=\\\"ml_job\\\"\", \"pageSize\": 1}" \
  https://logging.googleapis.com/v2/entries:list | jq -c '{entries: (.entries // [] | length), token: (.nextPageToken != null)}')
row "unbounded query's first page" "$empty"

printf '| %-44s | %-60s |\n' check "what Google answered"
printf '|%s|%s|\n' "$(printf -- '-%.0s' $(seq 46))" "$(printf -- '-%.0s' $(seq 62))"
printf '%s\n' "${ROWS[@]}"
echo "Compare with the unverified rows of docs/google-fidelity.md and the emulator's flags (--alias-move, --label-merge)." >&2
