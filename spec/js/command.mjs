// The command's part of the DNA (version 3), written from docs/en/dna-v3.md ("The command").
//
// parseCommand splits argv into launcher, interpreter, entry and arguments; projectCommand
// projects it as config.command; maskedArgs masks the argument values a rule hides.

const basename = (word) => word.replaceAll('\\', '/').split('/').at(-1);
const INTERPRETER = /^(python|pypy)(\d+(\.\d+)*)?[dmt]*(\.exe)?$/i;
export const isInterpreter = (word) => INTERPRETER.test(basename(word));

const PY_VALUE_OPTIONS = new Set(['X', 'W', 'c', 'm']);
const PY_LONG_VALUE_OPTIONS = new Set(['--check-hash-based-pycs']);
const set = (text) => new Set(text.split(/\s+/).filter(Boolean));
const TORCHRUN_FLAGS = set('--standalone --no-python --run-path -m --module --use-env --help -h --version');
const ACCELERATE_FLAGS = set(`--cpu --multi-gpu --tpu --ipex --use-deepspeed --use-fsdp --use-megatron-lm
  --use-xpu --debug -q --quiet --same-network -m --module --no-python --dynamo-use-fullgraph
  --dynamo-use-dynamic --dynamo-use-regional-compilation --enable-cpu-affinity --tpu-use-cluster
  --tpu-use-sudo --downcast-bf16 --help -h`);
const DEEPSPEED_FLAGS = set(`--no-python --no-local-rank --module --force-multi --save-pid --elastic-training
  --no-ssh-check --no-ssh --bind-cores-to-rank --help -h`);
const FLAGS = { torchrun: TORCHRUN_FLAGS, accelerate: ACCELERATE_FLAGS, deepspeed: DEEPSPEED_FLAGS };
const MODULE_FLAGS = new Set(['-m', '--module']);
const LAUNCHER_MODULES = {
  'torch.distributed.run': 'torchrun',
  'torch.distributed.launch': 'torchrun',
  'accelerate.commands.launch': 'accelerate',
  'deepspeed.launcher.runner': 'deepspeed',
};

const shape = (parts) => ({
  launcher: null,
  launcherArgs: [],
  interpreter: null,
  interpreterArgs: [],
  module: null,
  script: null,
  args: [],
  ...parts,
});

function dashed(option) {
  const name = option.split('=')[0];
  return name.startsWith('--') ? `--${name.slice(2).replaceAll('_', '-')}` : name;
}

function launcherOptions(words, flags) {
  const options = [];
  let moduleEntry = false;
  let noPython = false;
  let i = 0;
  while (i < words.length) {
    const word = words[i];
    if (word === '--') {
      options.push(word);
      i += 1;
      break;
    }
    if (!word.startsWith('-') || word === '-') break;
    const name = dashed(word);
    options.push(word);
    i += 1;
    if (MODULE_FLAGS.has(name) && flags.has(name)) moduleEntry = true;
    if (name === '--no-python') noPython = true;
    const attached = !word.startsWith('--') && word.length > 2;
    if (word.includes('=') || flags.has(name) || attached) continue;
    if (i < words.length) {
      options.push(words[i]);
      i += 1;
    }
  }
  return { options, rest: words.slice(i), moduleEntry, noPython };
}

function interpreterOptions(words) {
  const options = [];
  let i = 0;
  while (i < words.length) {
    const word = words[i];
    if (word === '-' || !word.startsWith('-')) break;
    i += 1;
    if (word === '--') {
      options.push(word);
      break;
    }
    if (word.startsWith('--')) {
      options.push(word);
      if (PY_LONG_VALUE_OPTIONS.has(word) && i < words.length) {
        options.push(words[i]);
        i += 1;
      }
      continue;
    }
    const chars = Array.from(word);
    let valued = false;
    for (let pos = 1; pos < chars.length; pos += 1) {
      const c = chars[pos];
      if (!PY_VALUE_OPTIONS.has(c)) continue;
      let attached = chars.slice(pos + 1).join('');
      if (!attached && i < words.length) {
        attached = words[i];
        i += 1;
      }
      const head = chars.slice(0, pos).join('');
      if (c === 'm') {
        if (pos > 1) options.push(head);
        return { options, module: attached || null, rest: words.slice(i) };
      }
      options.push(head + c);
      if (attached) options.push(attached);
      if (c === 'c') return { options, module: null, rest: words.slice(i), program: true };
      valued = true;
      break;
    }
    if (!valued) options.push(word);
  }
  return { options, module: null, rest: words.slice(i) };
}

function entry(words, moduleEntry) {
  if (!words.length) return { module: null, script: null, args: [] };
  if (moduleEntry) return { module: words[0], script: null, args: words.slice(1) };
  return { module: null, script: words[0], args: words.slice(1) };
}

function launched(launcher, words, flags, base) {
  const parsed = launcherOptions(words, flags);
  const program = parsed.rest;
  const launcherArgs = [...base.launcherArgs, ...parsed.options];
  if (parsed.noPython && program.length && isInterpreter(program[0])) {
    const inner = python(program[0], program.slice(1));
    return shape({ ...inner, launcher, launcherArgs });
  }
  return shape({
    launcher,
    launcherArgs,
    interpreter: base.interpreter,
    interpreterArgs: base.interpreterArgs,
    ...entry(program, parsed.moduleEntry),
  });
}

// A framework's worker script, by the end of its path: its words are all per-process.
const WORKER_SCRIPTS = { 'ray/_private/workers/default_worker.py': 'ray' };
const WORKER_LAUNCHERS = new Set(Object.values(WORKER_SCRIPTS));

function worker(script, words, base) {
  const path = script.replaceAll('\\', '/');
  for (const [ending, launcher] of Object.entries(WORKER_SCRIPTS)) {
    if (path === ending || path.endsWith('/' + ending)) {
      return shape({ launcher, launcherArgs: words, interpreter: base.interpreter, interpreterArgs: base.interpreterArgs });
    }
  }
  return null;
}

function python(interpreter, words) {
  const parsed = interpreterOptions(words);
  const launcher = parsed.module !== null ? LAUNCHER_MODULES[parsed.module] : undefined;
  if (launcher !== undefined) {
    return launched(launcher, parsed.rest, FLAGS[launcher], shape({ interpreter, interpreterArgs: parsed.options }));
  }
  if (parsed.module !== null) return shape({ interpreter, interpreterArgs: parsed.options, module: parsed.module, args: parsed.rest });
  if (parsed.options.includes('-c')) return shape({ interpreter, interpreterArgs: parsed.options, args: parsed.rest });
  const found = entry(parsed.rest, false);
  const asWorker = found.script !== null ? worker(found.script, found.args, shape({ interpreter, interpreterArgs: parsed.options })) : null;
  if (asWorker !== null) return asWorker;
  return shape({ interpreter, interpreterArgs: parsed.options, script: found.script, args: found.args });
}

/** The parts of argv: launcher, its options, interpreter, its options, module or script, args. */
export function parseCommand(argv) {
  const words = argv.map(String);
  if (!words.length) return shape({});
  const first = words[0];
  let name = basename(first);
  if (name.endsWith('.exe')) name = name.slice(0, -4);
  if (name === 'torchrun') return launched('torchrun', words.slice(1), TORCHRUN_FLAGS, shape({}));
  if (name === 'deepspeed') return launched('deepspeed', words.slice(1), DEEPSPEED_FLAGS, shape({}));
  if (name === 'accelerate' && words[1] === 'launch') return launched('accelerate', words.slice(2), ACCELERATE_FLAGS, shape({}));
  if (isInterpreter(first)) return python(first, words.slice(1));
  return worker(first, words.slice(1), shape({})) ?? shape({ script: first, args: words.slice(1) });
}

// -- The projection --------------------------------------------------------------------------

export const MASK = '<masked>';
const OPTION = /^--?[A-Za-z_][\w.-]*$/;
const OVERRIDE = /^[+~]{0,2}([A-Za-z_][\w.@/-]*)=([^]*)$/;
const NEUTRAL_INTERPRETER_OPTIONS = new Set(['-u', '-B']);

function splitAssignments(words) {
  const out = [];
  for (const word of words) {
    const at = word.indexOf('=');
    const name = at < 0 ? word : word.slice(0, at);
    if (at >= 0 && word.startsWith('-') && OPTION.test(name)) out.push(name, word.slice(at + 1));
    else out.push(word);
  }
  return out;
}

function launcherWords(words, perRunLauncher) {
  const out = [];
  let hidden = false;
  for (const word of splitAssignments(words)) {
    if (word.startsWith('-') && OPTION.test(word)) {
      const name = word.replace(/^-+/, '').replaceAll('_', '-');
      hidden = perRunLauncher.test(name);
      if (!hidden) out.push((word.startsWith('--') ? '--' : '-') + name);
      continue;
    }
    if (!hidden) out.push(word);
    hidden = false;
  }
  return out;
}

/** The program's words without the options hidden(key, value) names (with their values),
 * hidden("", word) positional words masked, and with hydra every hydra.* override left out. */
export function maskedArgs(words, hidden, { hydra = true } = {}) {
  const out = [];
  let pending = null;
  const key = (option) => option.replace(/^-+/, '');
  for (const word of splitAssignments(words)) {
    if (word.startsWith('-') && OPTION.test(word)) {
      if (pending !== null && !hidden(key(pending), '')) out.push(pending);
      pending = word;
      continue;
    }
    if (pending !== null) {
      if (!hidden(key(pending), word)) out.push(pending, word);
      pending = null;
      continue;
    }
    const override = OVERRIDE.exec(word);
    if (override !== null) {
      const [, name, value] = override;
      const last = name.split('.').at(-1).split('/').at(-1);
      if (!((hydra && name.split('.')[0] === 'hydra') || hidden(last, value))) out.push(word);
    } else out.push(hidden('', word) ? MASK : word);
  }
  if (pending !== null && !hidden(key(pending), '')) out.push(pending);
  return out;
}

function scriptOf(script, entryPath) {
  let written = script.replaceAll('\\', '/');
  while (written.startsWith('./')) written = written.slice(2);
  const same = typeof entryPath === 'string' && entryPath.split('/').at(-1) === written.split('/').at(-1);
  return same && entryPath ? entryPath : written;
}

/** config.command in version 3 (see docs/en/dna-v3.md). */
export function projectCommand(command, hidden, perRunLauncher, get) {
  const argv = get(command, 'argv');
  if (!Array.isArray(argv)) return {};
  if (!argv.every((w) => typeof w === 'string')) return { argv };
  const parts = parseCommand(argv);
  const projected = {};
  if (parts.launcher !== null) {
    const args = WORKER_LAUNCHERS.has(parts.launcher) ? [] : launcherWords(parts.launcherArgs, perRunLauncher);
    projected.launcher = { name: parts.launcher, args };
  }
  const isPython =
    parts.interpreter !== null || parts.module !== null || parts.launcher !== null || (parts.script || '').endsWith('.py');
  if (isPython) {
    projected.interpreter = { name: 'python', args: parts.interpreterArgs.filter((a) => !NEUTRAL_INTERPRETER_OPTIONS.has(a)) };
  }
  if (parts.module !== null) projected.module = parts.module;
  else if (parts.script !== null) projected.script = scriptOf(parts.script, get(command, 'entry'));
  projected.args = maskedArgs(parts.args, hidden);
  return projected;
}
