// Conformance: the official Vertex AI client, @google-cloud/aiplatform, in REST mode against
// vto-emulator. Whatever this client sends and expects must work, because it is what Google ships.
// Run with tests/conformance/run.sh BIN_DIR (BIN_DIR holds vto-emulator).
'use strict';

const assert = require('node:assert/strict');
const {spawn} = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');
const {after, before, describe, test} = require('node:test');
const {v1, helpers} = require('@google-cloud/aiplatform');
const {OAuth2Client} = require('google-auth-library');
const logging = require('@google-cloud/logging');

const binDir = process.env.VTO_BIN_DIR;
if (!binDir) throw new Error('set VTO_BIN_DIR to the directory holding vto-emulator');
const parent = 'projects/conformance/locations/us-central1';

// Starts the emulator on a port it binds itself (port 0) and resolves with {child, port} once its
// listening line says which port that is.
function startEmulator() {
  const child = spawn(path.join(binDir, 'vto-emulator'),
      ['--listen', '127.0.0.1:0', '--queue-time', '100ms', '--steps', '2', '--step-time', '100ms', '--stockout-wait', '200ms',
        '--cancel-time', '100ms', '--model-upload-time', '300ms'],
      {stdio: ['ignore', 'pipe', 'inherit']});
  return new Promise((resolve, reject) => {
    const lines = readline.createInterface({input: child.stdout});
    const timer = setTimeout(() => reject(new Error('vto-emulator did not start within 30 s')), 30000);
    child.once('exit', code => reject(new Error(`vto-emulator exited with ${code}`)));
    lines.on('line', line => {
      const match = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
      if (match) {
        clearTimeout(timer);
        resolve({child, port: Number(match[1])});
      }
    });
  });
}

// Polls `probe` until it returns a truthy value or the deadline passes.
async function eventually(probe, what, timeoutMs = 30000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise(resolve => setTimeout(resolve, 50));
  }
}

function workerPool() {
  return {
    machineSpec: {machineType: 'n1-standard-4', acceleratorType: 'NVIDIA_TESLA_T4', acceleratorCount: 1},
    replicaCount: 1,
    containerSpec: {imageUri: 'us-docker.pkg.dev/p/r/img:1', env: [{name: 'K', value: 'V'}]},
  };
}

let emulator;
let emulatorUrl;
let client;
let modelClient;
let loggingClient;

// The emulator's control API (not Vertex's): capacity entries for the tests that need a stockout.
async function setCapacity(entry) {
  const response = await fetch(`${emulatorUrl}/emulator/v1/capacity`, {method: 'POST', body: JSON.stringify(entry)});
  assert.equal(response.status, 200, await response.text());
}

before(async () => {
  const started = await startEmulator();
  emulator = started.child;
  const port = started.port;
  emulatorUrl = `http://127.0.0.1:${port}`;
  // The token comes from the emulator's metadata endpoint, as GKE Workload Identity would give it.
  const response = await fetch(
      `http://127.0.0.1:${port}/computeMetadata/v1/instance/service-accounts/default/token`,
      {headers: {'Metadata-Flavor': 'Google'}});
  assert.equal(response.status, 200);
  const {access_token: accessToken, expires_in: expiresIn} = await response.json();
  const auth = new OAuth2Client();
  auth.setCredentials({access_token: accessToken, expiry_date: Date.now() + expiresIn * 1000});
  client = new v1.JobServiceClient({
    apiEndpoint: '127.0.0.1', port, protocol: 'http', fallback: true, auth,
  });
  modelClient = new v1.ModelServiceClient({
    apiEndpoint: '127.0.0.1', port, protocol: 'http', fallback: true, auth,
  });
  // The Logging client's gax wants the google-auth-library it ships with (an auth client with fetch).
  const {OAuth2Client: LoggingOAuth2Client} = require(require.resolve('google-auth-library',
      {paths: [path.dirname(require.resolve('@google-cloud/logging-api'))]}));
  const loggingAuth = new LoggingOAuth2Client();
  loggingAuth.setCredentials({access_token: accessToken, expiry_date: Date.now() + expiresIn * 1000});
  loggingClient = new logging.v2.LoggingServiceV2Client({
    apiEndpoint: '127.0.0.1', port, protocol: 'http', fallback: true, auth: loggingAuth,
  });
});

after(async () => {
  if (client) await client.close();
  if (modelClient) await modelClient.close();
  if (loggingClient) await loggingClient.close();
  if (emulator) emulator.kill('SIGTERM');
});

// create, get, list with a label filter and paging, cancel, delete and its Operation.
async function exerciseJobKind({create, get, list, cancel, remove, resourceField, body, label}) {
  const created = [];
  for (let i = 0; i < 3; i++) {
    const [job] = await client[create]({parent, [resourceField]: body(`${label}-${i}`)});
    assert.match(job.name, new RegExp(`^${parent}/\\w+Jobs/\\d+$`));
    assert.equal(job.state, 'JOB_STATE_QUEUED');
    assert.ok(job.createTime, 'createTime is set by the server');
    created.push(job.name);
  }

  const [fetched] = await client[get]({name: created[0]});
  assert.equal(fetched.name, created[0]);
  assert.equal(fetched.labels.suite, label);

  const filter = `labels.suite="${label}"`;
  const [firstPage, nextRequest] = await client[list]({parent, filter, pageSize: 2}, {autoPaginate: false});
  assert.equal(firstPage.length, 2);
  assert.ok(nextRequest && nextRequest.pageToken, 'a next page token is returned');
  const [secondPage] = await client[list]({...nextRequest, parent, filter, pageSize: 2}, {autoPaginate: false});
  assert.equal(secondPage.length, 1);
  const [all] = await client[list]({parent, filter});
  assert.deepEqual(all.map(job => job.name).sort(), [...created].sort());

  await client[cancel]({name: created[1]});
  const cancelled = await eventually(async () => {
    const [job] = await client[get]({name: created[1]});
    return job.state === 'JOB_STATE_CANCELLED' && job;
  }, 'the job to be cancelled');
  assert.equal(cancelled.error.code, 1);

  const [operation] = await client[remove]({name: created[1]});
  assert.ok(operation.name.startsWith(`${parent}/operations/`));
  await operation.promise();
  assert.equal(operation.done, true);
  await assert.rejects(client[get]({name: created[1]}), error => error.code === 5);  // NOT_FOUND
}

describe('CustomJob', () => {
  test('create, get, list with filter and paging, cancel, delete', () => exerciseJobKind({
    create: 'createCustomJob', get: 'getCustomJob', list: 'listCustomJobs', cancel: 'cancelCustomJob',
    remove: 'deleteCustomJob', resourceField: 'customJob', label: 'conformance-custom',
    body: name => ({
      displayName: name,
      labels: {suite: 'conformance-custom'},
      jobSpec: {workerPoolSpecs: [workerPool()], scheduling: {timeout: {seconds: 3600}},
        baseOutputDirectory: {outputUriPrefix: 'gs://conformance/out/'}},
    }),
  }));

  test('runs to success', async () => {
    const [job] = await client.createCustomJob({parent, customJob: {
      displayName: 'to-success', jobSpec: {workerPoolSpecs: [workerPool()]}}});
    const done = await eventually(async () => {
      const [current] = await client.getCustomJob({name: job.name});
      return current.state === 'JOB_STATE_SUCCEEDED' && current;
    }, 'the job to succeed');
    assert.ok(done.startTime && done.endTime);
  });

  test('a job without capacity fails with the error Vertex reports, and the client reads it', async () => {
    await setCapacity({location: 'us-central1', acceleratorType: 'NVIDIA_TESLA_V100', available: false, mode: 'fail'});
    const pool = {...workerPool(), machineSpec: {machineType: 'n1-standard-8', acceleratorType: 'NVIDIA_TESLA_V100',
      acceleratorCount: 1}};
    const [job] = await client.createCustomJob({parent, customJob: {
      displayName: 'stockout', jobSpec: {workerPoolSpecs: [pool], scheduling: {strategy: 'SPOT'}}}});
    const failed = await eventually(async () => {
      const [current] = await client.getCustomJob({name: job.name});
      return current.state === 'JOB_STATE_FAILED' && current;
    }, 'the job to fail for lack of capacity');
    assert.equal(failed.error.code, 8);  // RESOURCE_EXHAUSTED
    assert.match(failed.error.message, /^Resources are insufficient in region: us-central1\. Please try a different region\./);
    assert.ok(failed.endTime, 'endTime is set');
    assert.ok(!failed.startTime, 'it never ran');
    const [listed] = await client.listCustomJobs({parent, filter: 'state="JOB_STATE_FAILED" AND display_name="stockout"'});
    assert.deepEqual(listed.map(j => j.name), [job.name]);
  });

  // Vertex usually holds a job short of quota QUEUED; the refusing form (a 429 at create) is kept for
  // projects that answer that way (docs/google-fidelity.md).
  test('a create beyond an accelerator quota is a 429 the client reports with the quota metric', async () => {
    await setCapacity({location: 'us-central1', acceleratorType: 'NVIDIA_L4', quota: 1, quotaMode: 'refuse'});
    const pool = {...workerPool(), machineSpec: {machineType: 'g2-standard-8', acceleratorType: 'NVIDIA_L4',
      acceleratorCount: 2}};
    await assert.rejects(client.createCustomJob({parent, customJob: {
      displayName: 'over-quota', jobSpec: {workerPoolSpecs: [pool]}}}), error => {
      assert.equal(error.code, 8);  // RESOURCE_EXHAUSTED
      assert.match(error.message, /custom_model_training_nvidia_l4_gpus/);
      return true;
    });
  });

  test('an invalid body is a 400 INVALID_ARGUMENT the client reports', async () => {
    const invalid = {displayName: 'no-image', jobSpec: {workerPoolSpecs: [{
      machineSpec: {machineType: 'n1-standard-4'}, replicaCount: 1, containerSpec: {args: ['x']}}]}};
    await assert.rejects(client.createCustomJob({parent, customJob: invalid}), error => {
      assert.equal(error.code, 3);  // INVALID_ARGUMENT
      assert.match(error.message, /imageUri/);
      return true;
    });
  });
});

describe('HyperparameterTuningJob', () => {
  test('create, get, list with filter and paging, cancel, delete', () => exerciseJobKind({
    create: 'createHyperparameterTuningJob', get: 'getHyperparameterTuningJob',
    list: 'listHyperparameterTuningJobs', cancel: 'cancelHyperparameterTuningJob',
    remove: 'deleteHyperparameterTuningJob', resourceField: 'hyperparameterTuningJob', label: 'conformance-hpt',
    body: name => ({
      displayName: name,
      labels: {suite: 'conformance-hpt'},
      maxTrialCount: 4,
      parallelTrialCount: 2,
      studySpec: {
        metrics: [{metricId: 'accuracy', goal: 'MAXIMIZE'}],
        parameters: [
          {parameterId: 'lr', doubleValueSpec: {minValue: 0.001, maxValue: 0.1}, scaleType: 'UNIT_LOG_SCALE'},
          {parameterId: 'batch', integerValueSpec: {minValue: 16, maxValue: 128}},
        ],
      },
      trialJobSpec: {workerPoolSpecs: [workerPool()]},
    }),
  }));

  test('trials carry parameters and a final measurement', async () => {
    const [job] = await client.createHyperparameterTuningJob({parent, hyperparameterTuningJob: {
      displayName: 'trials', maxTrialCount: 3, parallelTrialCount: 3,
      studySpec: {metrics: [{metricId: 'loss', goal: 'MINIMIZE'}],
        parameters: [{parameterId: 'opt', categoricalValueSpec: {values: ['sgd', 'adam']}}]},
      trialJobSpec: {workerPoolSpecs: [workerPool()]}}});
    const done = await eventually(async () => {
      const [current] = await client.getHyperparameterTuningJob({name: job.name});
      return current.state === 'JOB_STATE_SUCCEEDED' && current;
    }, 'the tuning job to succeed');
    assert.equal(done.trials.length, 3);
    for (const trial of done.trials) {
      assert.equal(trial.state, 'SUCCEEDED');
      assert.equal(trial.parameters[0].parameterId, 'opt');
      assert.equal(trial.finalMeasurement.metrics[0].metricId, 'loss');
    }
  });

  test('an invalid body is a 400 INVALID_ARGUMENT the client reports', async () => {
    await assert.rejects(client.createHyperparameterTuningJob({parent, hyperparameterTuningJob: {
      displayName: 'no-study', maxTrialCount: 1, parallelTrialCount: 1,
      trialJobSpec: {workerPoolSpecs: [workerPool()]}}}), error => error.code === 3 && /studySpec/.test(error.message));
  });
});

describe('Model Registry', () => {
  const modelName = `${parent}/models/conformance-model`;
  const model = artifactUri => ({
    displayName: 'conformance-model',
    artifactUri,
    containerSpec: {imageUri: 'us-docker.pkg.dev/vertex-ai/prediction/xgboost-cpu.1-7:latest'},
    labels: {suite: 'conformance'},
  });

  test('upload, versions, aliases and evaluations through ModelServiceClient', async () => {
    const [operation] = await modelClient.uploadModel({parent, modelId: 'conformance-model', model: model('gs://c/1/model/')});
    assert.match(operation.name, new RegExp(`^${modelName}/operations/\\d+$`));
    const [uploaded] = await operation.promise();
    assert.equal(uploaded.model, modelName);
    assert.equal(uploaded.modelVersionId, '1');

    const [first] = await modelClient.getModel({name: modelName});
    assert.equal(first.versionId, '1');
    assert.deepEqual(first.versionAliases, ['default']);
    assert.equal(first.artifactUri, 'gs://c/1/model/');
    assert.equal(first.labels.suite, 'conformance');
    assert.ok(first.createTime && first.versionCreateTime, 'times are set');

    await assert.rejects(
        modelClient.uploadModel({parent, modelId: 'conformance-model', model: model('gs://c/x/')}),
        // 409 ALREADY_EXISTS; the REST client maps HTTP 409 to code 10 (ABORTED) whatever the status says.
        error => error.code === 10 && /already exists/.test(error.message));
    const [second] = await modelClient.uploadModel({parent, parentModel: modelName,
      model: {...model('gs://c/2/model/'), labels: {suite: 'conformance', run: 'two'}}});
    const [secondDone] = await second.promise();
    assert.equal(secondDone.modelVersionId, '2');
    const [version2] = await modelClient.getModel({name: `${modelName}@2`});
    assert.equal(version2.artifactUri, 'gs://c/2/model/');

    const [versions] = await modelClient.listModelVersions({name: modelName});
    assert.deepEqual(versions.map(v => v.versionId), ['1', '2']);
    assert.deepEqual(versions.map(v => v.name), [`${modelName}@1`, `${modelName}@2`], 'a list names versions M@versionId');
    assert.equal(version2.labels.suite, 'conformance', "the model's labels are merged into the version's");
    const [byLabel, nextRequest] = await modelClient.listModelVersions(
        {name: modelName, filter: 'labels.run="two"', pageSize: 1}, {autoPaginate: false});
    assert.deepEqual(byLabel.map(v => v.versionId), ['2']);
    assert.equal(nextRequest, null, 'one version has the label');

    const [merged] = await modelClient.mergeVersionAliases({name: `${modelName}@2`, versionAliases: ['champion', 'default']});
    assert.deepEqual([...merged.versionAliases].sort(), ['champion', 'default']);
    const [now1] = await modelClient.getModel({name: `${modelName}@1`});
    assert.deepEqual(now1.versionAliases, [], 'default moved to version 2');
    await assert.rejects(modelClient.mergeVersionAliases({name: `${modelName}@2`, versionAliases: ['-default']}),
        error => error.code === 3);  // INVALID_ARGUMENT

    // Without a schema, or with metrics the schema does not name: "Invalid Metrics Format".
    await assert.rejects(modelClient.importModelEvaluation({parent: `${modelName}@2`, modelEvaluation: {
      displayName: 'schemaless', metrics: helpers.toValue({auRoc: 0.913}),
    }}), error => error.code === 3 && /Invalid Metrics Format/.test(error.message));
    await assert.rejects(modelClient.importModelEvaluation({parent: `${modelName}@2`, modelEvaluation: {
      displayName: 'unnamed',
      metricsSchemaUri: 'gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml',
      metrics: helpers.toValue({auc: 0.913}),
    }}), error => error.code === 3);
    const [evaluation] = await modelClient.importModelEvaluation({parent: `${modelName}@2`, modelEvaluation: {
      displayName: 'holdout',
      metricsSchemaUri: 'gs://google-cloud-aiplatform/schema/modelevaluation/classification_metrics_1.0.0.yaml',
      metrics: helpers.toValue({auRoc: 0.913}),
    }});
    assert.match(evaluation.name, new RegExp(`^${modelName}/evaluations/\\d+$`));
    const [evaluations] = await modelClient.listModelEvaluations({parent: `${modelName}@2`});
    assert.equal(evaluations.length, 1);
    assert.equal(evaluations[0].displayName, 'holdout');
    assert.deepEqual(helpers.fromValue(evaluations[0].metrics), {auRoc: 0.913});
    const [ofVersion1] = await modelClient.listModelEvaluations({parent: `${modelName}@1`});
    assert.equal(ofVersion1.length, 0);
    const [fetched] = await modelClient.getModelEvaluation({name: evaluation.name});
    assert.equal(fetched.name, evaluation.name);
  });

  test('a missing model or parent is NOT_FOUND', async () => {
    await assert.rejects(modelClient.getModel({name: `${parent}/models/nobody`}), error => error.code === 5);
    await assert.rejects(modelClient.uploadModel({parent, parentModel: `${parent}/models/nobody`, model: model('gs://c/')}),
        error => error.code === 5);
  });
});

describe('Cloud Logging', () => {
  test('entries of a job through LoggingServiceV2Client: still-searching pages, then the read quota', async () => {
    const [job] = await client.createCustomJob({parent, customJob: {
      displayName: 'logged', labels: {suite: 'logging'}, jobSpec: {workerPoolSpecs: [workerPool()]},
    }});
    await eventually(async () => {
      const [current] = await client.getCustomJob({name: job.name});
      return current.state === 'JOB_STATE_SUCCEEDED';
    }, 'the job to succeed');
    const jobId = job.name.split('/').pop();
    const options = {autoPaginate: false, retry: null};
    const byJob = `resource.type="ml_job" AND resource.labels.job_id="${jobId}"`;

    // A lower time bound: the entries on the first page, oldest first.
    const [entries] = await loggingClient.listLogEntries(
        {resourceNames: ['projects/conformance'], filter: `${byJob} AND timestamp>="2000-01-01T00:00:00Z"`}, options);
    assert.ok(entries.length >= 3, `start, steps and end lines: ${entries.length}`);
    assert.match(entries[0].textPayload, /^Training started on workerpool0-0/);
    assert.equal(entries[1].severity, 'ERROR', 'step lines come from stderr, which Vertex logs as ERROR');
    assert.equal(entries[0].resource.type, 'ml_job');

    // None: Logging searches its whole retention, and says so with an empty page and a token.
    const [searching, next] = await loggingClient.listLogEntries({resourceNames: ['projects/conformance'], filter: byJob}, options);
    assert.equal(searching.length, 0);
    assert.ok(next && next.pageToken, 'an empty page with a token: still searching');
    const [found] = await loggingClient.listLogEntries({...next, resourceNames: ['projects/conformance'], filter: byJob}, options);
    assert.equal(found.length, entries.length);

    // 60 reads a minute per project, every reader together: the 61st is RESOURCE_EXHAUSTED.
    let refused;
    for (let i = 0; i < 61 && !refused; i++) {
      try {
        await loggingClient.listLogEntries(
            {resourceNames: ['projects/conformance'], filter: `${byJob} AND timestamp>="2000-01-01T00:00:00Z"`, pageSize: 1}, options);
      } catch (error) {
        refused = error;
      }
    }
    assert.ok(refused, 'no 429 within 61 reads');
    assert.ok(refused.code === 8 || refused.code === 429, `RESOURCE_EXHAUSTED: ${refused.code}`);  // REST mode keeps the HTTP status
  });
});
