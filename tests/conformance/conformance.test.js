// Conformance: the official Vertex AI client, @google-cloud/aiplatform, in REST mode against
// vto-emulator. Whatever this client sends and expects must work, because it is what Google ships.
// Run with tests/conformance/run.sh BIN_DIR (BIN_DIR holds vto-emulator).
'use strict';

const assert = require('node:assert/strict');
const {spawn} = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');
const {after, before, describe, test} = require('node:test');
const {v1} = require('@google-cloud/aiplatform');
const {OAuth2Client} = require('google-auth-library');

const binDir = process.env.VTO_BIN_DIR;
if (!binDir) throw new Error('set VTO_BIN_DIR to the directory holding vto-emulator');
const parent = 'projects/conformance/locations/us-central1';

// Starts the emulator on a port it binds itself (port 0) and resolves with {child, port} once its
// listening line says which port that is.
function startEmulator() {
  const child = spawn(path.join(binDir, 'vto-emulator'),
      ['--listen', '127.0.0.1:0', '--queue-time', '100ms', '--steps', '2', '--step-time', '100ms',
        '--cancel-time', '100ms'],
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
let client;

before(async () => {
  const started = await startEmulator();
  emulator = started.child;
  const port = started.port;
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
});

after(async () => {
  if (client) await client.close();
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
