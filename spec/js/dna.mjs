#!/usr/bin/env node
// The expdna experiment DNA, written from docs/en/guide.md ("Recomputing the DNA") alone.
//
// A second implementation of the specification: where it and expdna disagree, the guide is
// fixed first. BLAKE3 comes from @noble/hashes and RFC 8785 from canonicalize; everything
// else is the guide's steps, in order, with the guide's step names in the comments.
//
//   node dna.mjs MANIFEST.json                 the DNA, 64 hex characters
//   node dna.mjs MANIFEST.json --sections      each section digest, then the DNA
//   node dna.mjs MANIFEST.json --family        the family digest
//   node dna.mjs MANIFEST.json --dna-version 1 in DNA version 1 (old manifests)

import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { blake3 } from '@noble/hashes/blake3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import canonicalize from 'canonicalize';
import { maskedArgs, projectCommand } from './command.mjs';
import { parseJson } from './json.mjs';

export const DNA_VERSION = 3;
export const DNA_VERSIONS = [1, 2, 3];
export const SECTIONS = ['code', 'config', 'training', 'environment', 'hardware', 'runtime', 'data'];

// -- Reading JSON with exact numbers (step 1): json.mjs ----------------------------------------

export { parseJson };

// -- Small helpers ---------------------------------------------------------------------------

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const isNumber = (v) => typeof v === 'number' || typeof v === 'bigint';
const record = (entries) => Object.assign(Object.create(null), Object.fromEntries(entries));
const pick = (object, keep) => record(Object.entries(object).filter(([k, v]) => keep(k, v)));
const get = (object, key) => (isObject(object) && Object.hasOwn(object, key) ? object[key] : undefined);
// "x or {}": a missing or null member reads as the empty container.
const orEmpty = (v, empty) => (v === undefined || v === null ? empty : v);

function deepCopy(v) {
  if (Array.isArray(v)) return v.map(deepCopy);
  if (isObject(v)) return record(Object.entries(v).map(([k, x]) => [k, deepCopy(x)]));
  return v;
}

const utf8 = (s) => Buffer.from(s, 'utf8');
// Strings compare by their UTF-8 bytes (the same as by code points), never by UTF-16 units.
export const compareUtf8 = (a, b) => Buffer.compare(utf8(a), utf8(b));

// -- Step 5: canonical bytes -----------------------------------------------------------------

function normalise(v) {
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'number' && !Number.isFinite(v)) {
    return Number.isNaN(v) ? '<non-finite:nan>' : v > 0 ? '<non-finite:inf>' : '<non-finite:-inf>';
  }
  if (Array.isArray(v)) return v.map(normalise);
  if (isObject(v)) return record(Object.entries(v).map(([k, x]) => [k, normalise(x)]));
  return v;
}

export const canonical = (v) => canonicalize(normalise(v));
const digest = (v) => bytesToHex(blake3(utf8(canonical(v))));

// -- Step 4: drop nulls ----------------------------------------------------------------------

function dropNulls(v) {
  if (Array.isArray(v)) return v.map(dropNulls);
  if (isObject(v)) return record(Object.entries(v).filter(([, x]) => x !== null).map(([k, x]) => [k, dropNulls(x)]));
  return v;
}

// "Sorted by canonical bytes": nulls dropped from each item, then by its RFC 8785 UTF-8 bytes.
function sortedByBytes(items) {
  return items
    .map(dropNulls)
    .map((item) => [utf8(canonical(item)), item])
    .sort(([a], [b]) => Buffer.compare(a, b))
    .map(([, item]) => item);
}

// -- Glob patterns ---------------------------------------------------------------------------
// Whole name, case-sensitive, one character = one code point. "*" any run (dots and newlines
// too), "?" one character, "[...]" a set: "!" first negates it, "]" right after "[" or "[!" is a
// member, the set ends at the next "]" (none: the "[" is itself); members read left to right,
// a character followed by "-" and one more is a range (empty when reversed), any other
// character is itself. Everything else, a backslash included, is itself.

const escape = (c) => `\\u{${c.codePointAt(0).toString(16)}}`;

function globSource(pattern) {
  const chars = Array.from(pattern);
  const out = [];
  let i = 0;
  while (i < chars.length) {
    const c = chars[i];
    i += 1;
    if (c === '*') {
      if (out.at(-1) !== '[^]*') out.push('[^]*');
    } else if (c === '?') {
      out.push('[^]');
    } else if (c === '[') {
      let j = i < chars.length && chars[i] === '!' ? i + 1 : i;
      j += 1; // the first member may be "]"
      while (j < chars.length && chars[j] !== ']') j += 1;
      if (j >= chars.length) {
        out.push(escape(c));
        continue;
      }
      let members = chars.slice(i, j);
      const negated = members[0] === '!';
      if (negated) members = members.slice(1);
      const ranges = [];
      for (let k = 0; k < members.length; ) {
        let low = members[k];
        let high = low;
        if (k + 2 < members.length && members[k + 1] === '-') {
          high = members[k + 2];
          k += 3;
        } else {
          k += 1;
        }
        if (low.codePointAt(0) <= high.codePointAt(0)) ranges.push(low === high ? escape(low) : `${escape(low)}-${escape(high)}`);
      }
      if (ranges.length === 0) out.push(negated ? '[^]' : '(?!)');
      else out.push(`[${negated ? '^' : ''}${ranges.join('')}]`);
      i = j + 1;
    } else {
      out.push(escape(c));
    }
  }
  return out.join('');
}

const globCache = new Map();
export function globs(patterns) {
  const key = JSON.stringify(patterns);
  if (!globCache.has(key)) {
    const source = patterns.map((p) => `(?:${globSource(p)})`).join('|');
    globCache.set(key, patterns.length ? new RegExp(`^(?:${source})$`, 'u') : /(?!)/);
  }
  return globCache.get(key);
}

// -- The lists the rules name ----------------------------------------------------------------

const PER_RUN_ARGS = `output_dir out_dir outdir output_path output save_dir save_path save log_dir logdir
  logging_dir log_path log_file tensorboard_dir tensorboard_log_dir tb_dir checkpoint_dir
  ckpt_dir run_name run_id exp_name experiment_name tags tag notes note output_root
  *_output_dir *_log_dir *_logging_dir *_save_dir *_checkpoint_dir *_run_name
  wandb_* mlflow_* comet_* neptune_* swanlab_* clearml_*
  store store_dir index_url expdna_*`.split(/\s+/);
// Version 3 adds the trackers' reporting, logging, hub, progress and save arguments.
const PER_RUN_ARGS_V3 = [
  ...PER_RUN_ARGS,
  ...`report_to logging_* log_level log_level_* log_on_each_node log_interval log_every* log_freq
  print_freq disable_tqdm progress_bar* enable_progress_bar verbose verbosity push_to_hub
  push_to_hub_* hub_* save_* master_addr master_port main_process_ip main_process_port rdzv_id
  rdzv_endpoint node_rank machine_rank local_rank local_addr`.split(/\s+/),
];
// Version 3: variables that set debugging, logging or a cache's location.
const DEBUG_ENV = `*_DEBUG *_DEBUG_* TORCH_DISTRIBUTED_DEBUG TORCH_CPP_LOG_LEVEL TORCH_LOGS TORCH_LOGS_*
  TORCH_SHOW_CPP_STACKTRACES TORCHDYNAMO_VERBOSE CUDA_LAUNCH_BLOCKING PYTORCH_NVML_BASED_CUDA_CHECK *_LOG_LEVEL *_VERBOSITY *_LOGS
  RAY_LOG_* RAY_DEDUP_LOGS HF_HOME HF_*_CACHE TRANSFORMERS_CACHE *_CACHE_DIR *_CACHE_PATH
  HF_HUB_DISABLE_PROGRESS_BARS HF_HUB_DISABLE_TELEMETRY HF_HUB_ENABLE_HF_TRANSFER`.split(/\s+/);
// Version 3: launcher options (dashed, without leading dashes) that name one allocation.
const PER_RUN_LAUNCHER_OPTIONS = `rdzv-id rdzv-endpoint rdzv-conf master-addr master-port main-process-ip
  main-process-port node-rank machine-rank local-addr log-dir logs-specs redirects tee
  local-ranks-filter monitor-interval hostfile include exclude save-pid ssh-port comment
  r t H i e`.split(/\s+/);
const PER_ALLOCATION_ENV = `CUDA_VISIBLE_DEVICES RAY_ADDRESS SLURM_JOB_ID SLURM_JOBID SLURM_ARRAY_* SLURM_*NODELIST
  SLURM_NODEID SLURM_PROCID SLURM_LOCALID SLURM_STEP_* SLURM_STEPID SLURM_TASK_PID
  SLURM_SUBMIT_* SLURMD_NODENAME SLURM_TOPOLOGY_* SLURM_LAUNCH_NODE_IPADDR SLURM_SRUN_COMM_*
  SLURM_JOB_UID SLURM_JOB_USER SLURM_JOB_NAME SLURM_CONF
  *_ADDR *_ADDRESS *_PORT *_HOST *_IPADDR *_NODELIST *_JOB_ID *_JOBID`.split(/\s+/);
const VOLATILE_HARDWARE = `uuid serial *bus_id pci minor_number index hostname source temperature* *_temperature fan*
  power_draw* utilization* memory_used* memory_free* clocks* *_current current_* *_source
  power_limit*`.split(/\s+/);
const VOLATILE_RESOURCES = ['node:*', 'memory', 'object_store_memory'];
const TOO_BROAD_ROOTS = new Set(['', '.', './', '/', '~', '~/', '..']);
const PER_MACHINE_ENVIRONMENT = new Set(['hostname', 'python_executable', 'container']);
const DATASET_DETAIL = new Set(['root', 'listing', 'tables', 'table_groups']);
const PATH_WORDS = ['dir', 'path', 'file', 'prefix'];

// Legacy name -> current name, applied in this order; the old name is removed, and the value
// moves only where the new name is absent (the current name wins, then the earlier row).
const LEGACY_NAMES = [
  ['cli_args', 'command.argv'],
  ['command.cli_args', 'command.argv'],
  ['argv', 'command.argv'],
  ['cwd', 'command.cwd'],
  ['git', 'code'],
  ['env', 'config.selected_env'],
  ['config.env', 'config.selected_env'],
  ['args', 'config.resolved_args'],
  ['config.args', 'config.resolved_args'],
];

// Fields the schema types as integers and as floats (step 1, "Numbers").
const INTEGER_FIELDS = [
  ['training', 'global_batch_size'],
  ['training', 'micro_batch_size'],
  ['hardware', 'gpu_count'],
  ['hardware', 'cpu_count'],
  ['runtime', 'node_count'],
];

// -- Step 1: read the manifest ---------------------------------------------------------------

function parentOf(doc, parts, create) {
  let node = doc;
  for (const part of parts) {
    let child = get(node, part);
    if ((child === undefined || child === null) && create) child = node[part] = record([]);
    if (!isObject(child)) return undefined;
    node = child;
  }
  return node;
}

function moveLegacyNames(doc) {
  for (const [oldName, newName] of LEGACY_NAMES) {
    const oldParts = oldName.split('.');
    const oldParent = parentOf(doc, oldParts.slice(0, -1), false);
    const oldKey = oldParts.at(-1);
    if (oldParent === undefined || !Object.hasOwn(oldParent, oldKey)) continue;
    const value = oldParent[oldKey];
    delete oldParent[oldKey];
    const newParts = newName.split('.');
    const newParent = parentOf(doc, newParts.slice(0, -1), true);
    if (newParent !== undefined && !Object.hasOwn(newParent, newParts.at(-1))) newParent[newParts.at(-1)] = value;
  }
}

function asInteger(v, where) {
  if (v === null || v === undefined || typeof v === 'bigint') return v;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new TypeError(`${where}: not an integer`);
  return Number.isSafeInteger(v) ? v : BigInt(v); // 1e17 in an integer field is that integer
}

function asFloat(v, where) {
  if (v === null || v === undefined) return v;
  if (!isNumber(v)) throw new TypeError(`${where}: not a number`);
  return Number(v); // an integer beyond 2^53 in a float field is the nearest double
}

function mapValues(object, fn) {
  return isObject(object) ? record(Object.entries(object).map(([k, v]) => [k, fn(v, k)])) : object;
}

// The document as the schema models it: each section an object, the defaults that reach the
// projections filled in, and numbers in typed fields read as their type.
function readManifest(input) {
  const doc = deepCopy(input);
  moveLegacyNames(doc);
  for (const name of SECTIONS) doc[name] = orEmpty(get(doc, name), record([]));
  doc.command = orEmpty(get(doc, 'command'), record([]));
  if (isObject(doc.command)) doc.command.argv = orEmpty(get(doc.command, 'argv'), []);
  const { training, environment, hardware, runtime, data } = doc;
  training.parallel_topology = mapValues(orEmpty(training.parallel_topology, record([])), (v, k) =>
    asInteger(v, `training.parallel_topology.${k}`),
  );
  training.seeds = orEmpty(training.seeds, record([]));
  environment.packages = orEmpty(environment.packages, record([]));
  hardware.gpus = orEmpty(hardware.gpus, []);
  for (const gpu of hardware.gpus) if (isObject(gpu) && Object.hasOwn(gpu, 'memory_gb')) gpu.memory_gb = asFloat(gpu.memory_gb, 'hardware.gpus[].memory_gb');
  runtime.nodes = orEmpty(runtime.nodes, []);
  for (const node of runtime.nodes) {
    node.resources = mapValues(orEmpty(node.resources, record([])), (v, k) => asFloat(v, `runtime.nodes[].resources.${k}`));
  }
  for (const [section, key] of INTEGER_FIELDS) {
    if (Object.hasOwn(doc[section], key)) doc[section][key] = asInteger(doc[section][key], `${section}.${key}`);
  }
  for (const dataset of orEmpty(data.datasets, [])) {
    for (const key of ['files', 'bytes']) {
      if (isObject(dataset) && Object.hasOwn(dataset, key)) dataset[key] = asInteger(dataset[key], `data.datasets[].${key}`);
    }
  }
  return doc;
}

// -- The version-dependent name rules --------------------------------------------------------

// Version 2: A-Z only, as every language lower-cases ASCII. Version 1 used full Unicode
// lower-casing (Python's str.lower; JavaScript's toLowerCase agrees on the same tables).
const lower = (s, version) => (version === 1 ? s.toLowerCase() : s.replace(/[A-Z]/g, (c) => c.toLowerCase()));
export const argName = (key, version = DNA_VERSION) => lower(key, version).replaceAll('-', '_');

const isPerRunName = (key, version) => globs(version >= 3 ? PER_RUN_ARGS_V3 : PER_RUN_ARGS).test(argName(key, version));

function isPathName(key, version) {
  const name = argName(key, version);
  if (version === 1) return /(^|_)(dir|path|file|prefix)\n?$/.test(name); // Python's "$"
  return PATH_WORDS.includes(name) || PATH_WORDS.some((w) => name.endsWith(`_${w}`));
}

const KERNEL = { 1: /^(\p{Nd}+\.\p{Nd}+)/u, 2: /^([0-9]+\.[0-9]+)/, 3: /^([0-9]+\.[0-9]+)/ };

// -- Step 2: project each section ------------------------------------------------------------

function projectCode(section, version) {
  const entries = Object.values(section).map((repo) => {
    const patch = orEmpty(get(repo, 'patch'), record([]));
    const identity = record([
      ['commit', get(repo, 'commit') ?? null],
      ['dirty', get(repo, 'dirty') ?? null],
      ['patch', get(patch, 'digest') ?? null],
    ]);
    // Version 3: code outside git, by the digest of its [path, digest] listing.
    const tree = get(repo, 'tree');
    if (version >= 3 && isObject(tree)) identity.tree = get(tree, 'digest') ?? null;
    const binaries = orEmpty(get(patch, 'binary_files'), []);
    if (binaries.length) {
      identity.binary_files = binaries
        .map((b) => [get(b, 'path') || '', get(b, 'digest') || ''])
        .sort((a, b) => compareUtf8(a[0], b[0]) || compareUtf8(a[1], b[1]));
    }
    const submodules = orEmpty(get(repo, 'submodules'), []);
    if (submodules.length) {
      identity.submodules = submodules
        .map((s) =>
          record([
            ['path', get(s, 'path') || ''],
            ['commit', get(s, 'commit') ?? null],
            ['checked_out', get(s, 'checked_out') ?? null],
          ]),
        )
        .sort((a, b) => compareUtf8(a.path, b.path)); // stable: equal paths keep their order
    }
    return identity;
  });
  return sortedByBytes(entries);
}

// The text a value is written as: a string, or a number the file holds as a string.
function textOf(v) {
  if (typeof v === 'string') return v;
  if (isNumber(v)) {
    const written = normalise(v);
    return typeof written === 'string' ? written : null;
  }
  return null;
}

const isMasked = (v) => typeof v === 'string' && v.endsWith('***');
const asRoot = (text) => `${text.replace(/\/+$/, '')}/`;

function projectConfig(section, version, doc) {
  const args = orEmpty(get(section, 'resolved_args'), record([]));
  const roots = [];
  for (const [key, value] of Object.entries(args)) {
    const text = textOf(value);
    if (isPerRunName(key, version) && text !== null && !TOO_BROAD_ROOTS.has(text)) roots.push(asRoot(text));
  }
  // Version 2: arguments that name a recorded config file leave (its digest stands for them).
  const listed = version === 1 ? [] : orEmpty(get(section, 'config_file_args'), []);
  const fileArgs = new Set(
    (Array.isArray(listed) ? listed : []).filter((n) => typeof n === 'string').map((n) => argName(n, version)),
  );
  const perRun = (key, value) => {
    if (isPerRunName(key, version) || isMasked(value) || fileArgs.has(argName(key, version))) return true;
    const text = textOf(value);
    return text !== null && isPathName(key, version) && roots.some((root) => asRoot(text).startsWith(root));
  };
  const env = orEmpty(get(section, 'selected_env'), record([]));
  const debug = (k) => version >= 3 && globs(DEBUG_ENV).test(k);
  // Version 3: settings handed over in code (settings_source other than absent, null or
  // "argv") are in no command, so resolved_args stay in, with the marker itself.
  const source = version >= 3 ? get(section, 'settings_source') : undefined;
  const fromCode = source !== undefined && source !== null && source !== 'argv';
  const projected = record([
    // Version 3 leaves resolved_args out: their words are in the command, masked alike.
    ...(version < 3 || fromCode ? [['resolved_args', pick(args, (k, v) => !perRun(k, v))]] : []),
    ...(fromCode ? [['settings_source', source]] : []),
    ['selected_env', pick(env, (k, v) => !globs(PER_ALLOCATION_ENV).test(k) && !isMasked(v) && !debug(k))],
    ['config_files', Object.values(orEmpty(get(section, 'config_files'), record([]))).sort(compareUtf8)],
  ]);
  if (version >= 3) {
    // Version 3: the command, its argument values masked by the rules above and dna_ignore.
    const ignore = orEmpty(get(section, 'dna_ignore'), []).filter((g) => typeof g === 'string');
    const files = Object.keys(orEmpty(get(section, 'config_files'), record([])));
    // A positional word that is a recorded config file's path: the file's digest is in config.
    const namesConfigFile = (word) => {
      let written = word;
      while (written.startsWith('./')) written = written.slice(2);
      return written !== '' && files.some((f) => f === written || f.endsWith('/' + written));
    };
    const hidden = (key, value) => {
      if (!key) return isMasked(value) || namesConfigFile(value);
      const name = key.replaceAll('-', '_');
      if (ignore.length && globs(ignore).test(`config.resolved_args.${name}`)) return true;
      return perRun(name, value);
    };
    const command = orEmpty(get(doc, 'command'), record([]));
    projected.command = projectCommand(isObject(command) ? command : record([]), hidden, globs(PER_RUN_LAUNCHER_OPTIONS), get);
  }
  return projected;
}

// Version 3: facts only the running process reads leave the environment projection.
const PROCESS_ENVIRONMENT = new Set(['hash_randomization']);

function projectEnvironment(section, version) {
  const projected = pick(section, (k) => !PER_MACHINE_ENVIRONMENT.has(k) && !(version >= 3 && PROCESS_ENVIRONMENT.has(k)));
  if (typeof projected.kernel === 'string') {
    const match = KERNEL[version].exec(projected.kernel);
    if (match) projected.kernel = match[1];
  }
  if (isObject(projected.framework)) {
    projected.framework = mapValues(projected.framework, (info) => {
      if (!isObject(info)) return info;
      const identity = pick(info, (k) => k !== 'loaded');
      const loaded = info.loaded;
      // Version 3: the loaded framework's determinism switches leave too.
      if (version < 3 && isObject(loaded) && isObject(loaded.determinism)) {
        identity.determinism = pick(loaded.determinism, (k) => k !== 'initial_seed');
      }
      return identity;
    });
  }
  return projected;
}

function withoutVolatileHardware(v) {
  if (Array.isArray(v)) return v.map(withoutVolatileHardware);
  if (isObject(v)) {
    const volatile = globs(VOLATILE_HARDWARE);
    return record(Object.entries(v).filter(([k]) => !volatile.test(k)).map(([k, x]) => [k, withoutVolatileHardware(x)]));
  }
  return v;
}

const projectHardware = (section) => withoutVolatileHardware(pick(section, (k) => k !== 'memory_gb'));

function projectRuntime(section) {
  const nodes = orEmpty(get(section, 'nodes'), []).map((node) =>
    record([
      ['role', get(node, 'role') ?? null],
      ['resources', pick(orEmpty(get(node, 'resources'), record([])), (k) => !globs(VOLATILE_RESOURCES).test(k))],
      ['fingerprint', get(node, 'fingerprint') ?? null],
    ]),
  );
  return record([
    ['mode', get(section, 'mode') ?? null],
    ['node_count', get(section, 'node_count') ?? null],
    ['nodes', sortedByBytes(nodes)],
  ]);
}

function projectData(section) {
  const datasets = orEmpty(get(section, 'datasets'), []).map((d) => pick(d, (k) => !DATASET_DETAIL.has(k)));
  return record([['datasets', sortedByBytes(datasets)]]);
}

const PROJECT = {
  code: projectCode,
  config: projectConfig,
  // Version 3: derived from the arguments, which the command and config files stand for.
  training: (section, version) => (version < 3 ? pick(section, () => true) : record([])),
  environment: projectEnvironment,
  hardware: projectHardware,
  runtime: projectRuntime,
  data: projectData,
};

// -- Step 3: apply dna_ignore ----------------------------------------------------------------

function ignore(v, path, pattern) {
  if (!isObject(v)) return v; // never into lists
  return record(
    Object.entries(v)
      .filter(([k]) => !pattern.test(`${path}.${k}`))
      .map(([k, x]) => [k, ignore(x, `${path}.${k}`, pattern)]),
  );
}

// -- The whole chain -------------------------------------------------------------------------

function checkVersion(version) {
  if (!DNA_VERSIONS.includes(version)) throw new RangeError(`DNA version ${version} is not one of ${DNA_VERSIONS.join(', ')}`);
}

function projectRead(doc, version) {
  const patterns = orEmpty(get(doc.config, 'dna_ignore'), []);
  const unknown = orEmpty(get(doc, 'unknown'), record([]));
  const result = record([]);
  for (const name of SECTIONS) {
    let projected = PROJECT[name](doc[name], version, doc);
    if (patterns.length) projected = ignore(projected, name, globs(patterns));
    projected = dropNulls(projected);
    if (Object.hasOwn(unknown, name)) projected = record([['unknown', true], ['partial', projected]]);
    result[name] = projected;
  }
  return result;
}

function dnaOfRead(doc, version) {
  const projected = projectRead(doc, version);
  const sections = record(SECTIONS.map((name) => [name, digest(projected[name])]));
  const value = digest(record([['version', version], ['sections', sections]]));
  return { version, value, sections, projections: projected };
}

/** Each section's projection, as hashed. */
export function projections(manifest, { version = DNA_VERSION } = {}) {
  checkVersion(version);
  return projectRead(readManifest(manifest), version);
}

/** The DNA of a manifest (parsed with parseJson): {version, value, sections, projections}. */
export function dna(manifest, { version = DNA_VERSION } = {}) {
  checkVersion(version);
  return dnaOfRead(readManifest(manifest), version);
}

/** A seed argument: seed, random_seed or *_seed, after lower-casing, "-" as "_" and leading "_" dropped. */
export function isSeedArg(key, version = DNA_VERSION) {
  const name = argName(key, version).replace(/^_+/, '');
  return name === 'seed' || name === 'random_seed' || name.endsWith('_seed');
}

/** The family digest: the DNA with every seed projected out (hex). */
export function family(manifest, { version = DNA_VERSION } = {}) {
  checkVersion(version);
  const doc = readManifest(manifest);
  doc.config = pick(doc.config, () => true);
  doc.config.resolved_args = pick(orEmpty(get(doc.config, 'resolved_args'), record([])), (k) => !isSeedArg(k, version));
  doc.training = pick(doc.training, () => true);
  doc.training.seeds = record([]);
  if (version >= 3) {
    // Version 3: a config file holding seed keys counts by its seedless_digest, and seed
    // arguments leave command.argv.
    const details = orEmpty(get(doc.config, 'config_file_details'), record([]));
    const seedless = (path) => {
      const found = get(get(details, path), 'seedless_digest');
      return typeof found === 'string' ? found : null;
    };
    doc.config.config_files = record(
      Object.entries(orEmpty(get(doc.config, 'config_files'), record([]))).map(([path, d]) => [path, seedless(path) || d]),
    );
    const argv = get(doc.command, 'argv');
    if (Array.isArray(argv) && argv.every((w) => typeof w === 'string')) {
      doc.command = pick(doc.command, () => true);
      // Seed options leave with their values, seed overrides whole.
      doc.command.argv = maskedArgs(argv, (key) => Boolean(key) && isSeedArg(key, version), { hydra: false });
    }
  }
  return dnaOfRead(doc, version).value;
}

// -- Command line ----------------------------------------------------------------------------

function main(argv) {
  const args = argv.slice(2);
  const flag = (name) => {
    const at = args.indexOf(name);
    if (at >= 0) args.splice(at, 1);
    return at >= 0;
  };
  let version = DNA_VERSION;
  const at = args.indexOf('--dna-version');
  if (at >= 0) {
    version = Number(args[at + 1]);
    args.splice(at, 2);
  }
  const showSections = flag('--sections');
  const showFamily = flag('--family');
  if (args.length !== 1 || args[0].startsWith('--') || !DNA_VERSIONS.includes(version)) {
    process.stderr.write('usage: node dna.mjs MANIFEST.json [--sections] [--family] [--dna-version 1|2|3]\n');
    return 2;
  }
  let manifest;
  try {
    manifest = parseJson(readFileSync(args[0], 'utf8'));
    if (!isObject(manifest)) throw new TypeError('not a JSON object');
  } catch (error) {
    process.stderr.write(`dna.mjs: ${args[0]}: ${error.message}\n`);
    return 2;
  }
  const result = dna(manifest, { version });
  if (showSections) {
    for (const name of SECTIONS) process.stdout.write(`${name.padEnd(12)} ${result.sections[name]}\n`);
    process.stdout.write(`${'dna'.padEnd(12)} ${result.value}\n`);
  } else if (!showFamily) {
    process.stdout.write(`${result.value}\n`);
  }
  if (showFamily) process.stdout.write(`${showSections ? 'family'.padEnd(12) + ' ' : ''}${family(manifest, { version })}\n`);
  return 0;
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv);
}
