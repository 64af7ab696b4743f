#!/bin/sh
# Replays every command shown in docs/{en,zh}/guide.md and docs/{en,zh}/collectors.md
# against a fresh demo, and prints a transcript for fill_docs.py:
#   "### NAME" headers, then "$ cmd", its stdout+stderr, and an "[exit N]" line.
#
#   sh docs/tools/transcript.sh > t.txt
#   python docs/tools/fill_docs.py t.txt docs/en/guide.md docs/zh/guide.md \
#       docs/en/collectors.md docs/zh/collectors.md
#
# DEMO (default $TMPDIR/demo, i.e. /tmp/demo) is deleted and rebuilt. EXPDNA_DOCS_QUICK=1
# stops after the first diff blocks. docs/tools/regen.sh runs this and fills the pages. EXPDNA_DOCS_BENCH=1
# also runs the two benchmarks (about a minute); without it their blocks keep old output.
# The GPU blocks replay the recordings in tests/data/nvidia-smi.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
TOOLS="$REPO/docs/tools"
DEMO="${EXPDNA_DOCS_DEMO:-${TMPDIR:-/tmp}/demo}"
TESTDATA="$REPO/tests/data"
export REPO DEMO
"$TOOLS/setup.sh" >&2 || exit 1
. "$TOOLS/env.sh"
cd "$DEMO/vit-cifar" || exit 1
cp "$TOOLS/api_demo.py" "$TOOLS/redact_examples.py" "$TOOLS/redact_v3_examples.py" "$TOOLS/show_manifest.py" "$DEMO/"
block() { printf '### %s\n' "$1"; }
run() { printf '$ %s\n' "$1"; sh -c "$1" 2>&1; printf '[exit %s]\n' "$?"; }
TRAIN="python train.py --lr 3e-4 --batch-size 128 --epochs 3 --seed 42"

# ---- guide: quick start ---------------------------------------------------------------
block quickstart-status;  run "git status --short"
block quickstart-generate; run "expdna generate -- $TRAIN --output-dir runs/lr3e-4"
block quickstart-manifest; python "$TOOLS/show_manifest.py" manifest_*.json
block quickstart-status2; run "git status --short"

# ---- guide: generate, diff, check, rerun ------------------------------------------------
block gen-a;   run "expdna generate -o manifests/a.json -- $TRAIN --output-dir runs/lr3e-4"
block gen-a2;  run "expdna generate -o manifests/a2.json -- $TRAIN --output-dir runs/lr3e-4-again"
block gen-b;   run "expdna generate --json -o manifests/b.json -- python train.py --lr 1e-3 --batch-size 128 --epochs 3 --seed 42 --output-dir runs/lr1e-3"
block gen-d;   run "expdna generate -o manifests/d.json --data $DEMO/data/cifar10-mini --data $DEMO/data/missing"
block gen-d-data; run "python -c 'import json; d = json.load(open(\"manifests/d.json\")); print(json.dumps(d[\"data\"], indent=2)); print(json.dumps(d[\"collection\"][\"collectors\"][\"data\"], indent=2))'"
block perm;    run "stat -c '%A %n' manifests/a.json manifests/b.json"

block diff-equal; run "expdna diff manifests/a.json manifests/a2.json"
block diff-lr;    run "expdna diff manifests/a.json manifests/b.json"
block diff-json;  run "expdna diff --json manifests/a.json manifests/b.json"
# Quick mode (a first look after a change of generate or diff) stops here.
[ "${EXPDNA_DOCS_QUICK:-0}" = 1 ] && exit 0

block check-pass; run "expdna check manifests/a.json"
export GIT_AUTHOR_DATE=2026-11-29T08:00:00Z GIT_COMMITTER_DATE=2026-11-29T08:00:00Z GIT_AUTHOR_NAME='Li Wei' GIT_AUTHOR_EMAIL=liwei@example.com GIT_COMMITTER_NAME='Li Wei' GIT_COMMITTER_EMAIL=liwei@example.com
block commit;     run "git add train.py augment.py && git commit -q -m 'Batch size 128, CIFAR-10 normalisation' && git log --oneline"
block check-fail; run "expdna check manifests/a.json"
block check-json; run "expdna check --json manifests/a.json"
# a clone under another directory name: matched by its remote
git clone -q "$DEMO/vit-cifar" "$DEMO/vit-cifar-clone" 2>/dev/null
git -C "$DEMO/vit-cifar-clone" remote set-url origin https://github.com/example/vit-cifar.git
block check-clone; run "cd ../vit-cifar-clone && env -u HF_TOKEN expdna generate -o ../vit-cifar/manifests/clone.json -- $TRAIN > /dev/null && cd ../vit-cifar && expdna check manifests/clone.json"

block rerun-dry;  run "expdna rerun manifests/a.json --dry-run"
block rerun-refused; run "expdna rerun manifests/a.json --confirm"
block gen-c;      run "env -u HF_TOKEN expdna generate -o manifests/c.json -- $TRAIN --output-dir runs/lr3e-4"
block rerun-ok;   run "env -u HF_TOKEN expdna rerun manifests/c.json --confirm"
block diff-code;  run "expdna diff manifests/a.json manifests/c.json"
# a manifest someone shared: a variable that is not applied, a word with an escape in it
mkdir -p "$DEMO/work/train" && printf 'import sys\nprint(sys.argv[1:])\n' > "$DEMO/work/train/train.py"
(cd "$DEMO/work/train" && env -u HF_TOKEN -u OMP_NUM_THREADS -u CUDA_VISIBLE_DEVICES PYTHONPATH=/tmp/evil expdna generate -o ../shared.json -- python train.py --name "$(printf '\033[31mred\033[0m')" > /dev/null 2>&1)
block rerun-shared; run "cd ../work && expdna rerun shared.json --dry-run"

block err-usage;  run "expdna rerun manifests/c.json"
block err-v2;     run "sed 's/\"schema_version\": \"1.1\"/\"schema_version\": \"2.0\"/' manifests/c.json > v2.json && expdna check v2.json"
block err-noversion; run "grep -v schema_version manifests/c.json > noversion.json && expdna diff noversion.json manifests/c.json"
block err-cut;    run "head -c 300 manifests/c.json > cut.json && expdna check cut.json"
block err-missing; run "expdna check manifests/nope.json"
block err-fifo;   run "mkfifo pipe.json && expdna check pipe.json"
block err-device; run "mknod null-here c 1 3 && expdna generate -o null-here > /dev/null; ls -l null-here | cut -c1"
block err-outdir; run "expdna generate -o /nonexistent/dir/m.json"
block legacy;     run "printf '{\"schema_version\": \"1.0\", \"run_id\": \"20250101_000000_nogit_abcd\", \"generated_at\": \"2025-01-01T00:00:00Z\", \"cli_args\": [\"python\", \"train.py\", \"--lr\", \"0.1\"]}' > legacy.json && expdna rerun legacy.json --dry-run"
rm -f v2.json noversion.json cut.json legacy.json

block ignore-1;   run "expdna generate -o manifests/s1.json --dna-ignore config.resolved_args.seed -- python train.py --lr 3e-4 --seed 1"
block ignore-2;   run "expdna generate -o manifests/s2.json --dna-ignore config.resolved_args.seed -- python train.py --lr 3e-4 --seed 2"
block ignore-diff; run "expdna diff manifests/s1.json manifests/s2.json"
# a git that never answers: the code section is unknown, and the DNA says so
mkdir -p "$DEMO/hang-bin" && printf '#!/bin/sh\nexec sleep 10\n' > "$DEMO/hang-bin/git" && chmod +x "$DEMO/hang-bin/git"
block unknown-gen;    run "PATH=$DEMO/hang-bin:\$PATH expdna generate --deadline 1 -o manifests/hung.json -- python train.py --lr 3e-4"
block unknown-show;   run "python -c 'import json; d = json.load(open(\"manifests/hung.json\")); print(json.dumps({k: d[k] for k in (\"schema_version\", \"unknown\", \"code\")}, indent=2))'"
block unknown-strict; run "PATH=$DEMO/hang-bin:\$PATH expdna generate --strict --deadline 1 -o manifests/hung2.json -- python train.py --lr 3e-4"
block unknown-check;  run "expdna check manifests/hung.json"
# a manifest edited after it was written
block check-edited;   run "sed 's/\"lr\": 0.0003/\"lr\": 0.01/' manifests/a.json > manifests/edited.json && expdna check manifests/edited.json"
# bytes that are not UTF-8, and option names in any script
block bytes-gen;  run "expdna generate -o manifests/bytes.json -- python train.py --name \$(printf 'caf\\351') --学习率 3e-4 > /dev/null && python -c 'import json; d = json.load(open(\"manifests/bytes.json\")); print(json.dumps(d[\"config\"][\"resolved_args\"], ensure_ascii=False))'"

# ---- guide: redaction ---------------------------------------------------------------------
block redact-number; run "expdna generate -o manifests/pw.json -- python train.py --lr 3e-4 --db-password 12345678 --hf-token hf_aQ7rT2mX9pL4vK8nB3cZ6wY1dF5gH0jS2e > /dev/null && python ../show_manifest.py manifests/pw.json command.argv config.resolved_args collection.redacted"
block redact-number-dna; run "expdna generate -o manifests/pw2.json -- python train.py --lr 3e-4 --db-password hunter2hunter2 --hf-token hf_Zx9wV8uT7sR6qP5oN4mL3kJ2iH1gF0eD9c > /dev/null && expdna diff manifests/pw.json manifests/pw2.json"
block api;        run "python ../api_demo.py"
block redact;     run "HOME=/home/alice python ../redact_examples.py"
block redact-v3;  run "HOME=/home/alice python ../redact_v3_examples.py"

# ---- collectors page: the runner -----------------------------------------------------------
block col-registry; run "python -c 'from expdna.collectors import default_registry
for c in default_registry().collectors.values(): print(f\"{c.name:<12} {c.section:<12} {c.deadline_s}\")'"
cp "$TOOLS/runner_demo.py" "$TOOLS/training_demo.py" "$TOOLS/framework_demo.py" "$TOOLS/ray_demo.py" "$DEMO/"
block col-runner; run "python ../runner_demo.py"

# ---- collectors page: a third-party collector ----------------------------------------------
rm -rf "$DEMO/expdna-cpu-flags" && cp -r "$TOOLS/plugin" "$DEMO/expdna-cpu-flags"
# The machine's own pip configuration (extra indexes it warns about) is not what the page shows.
export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1
block col-plugin-install; run "pip install --quiet --no-deps --no-build-isolation --target ../plugin-site ../expdna-cpu-flags && cat ../plugin-site/expdna_cpu_flags-0.1.0.dist-info/entry_points.txt"
block col-plugin-run; run "PYTHONPATH=../plugin-site expdna generate -o manifests/flags.json -- python train.py --lr 3e-4 && python ../show_manifest.py manifests/flags.json hardware.cpu_flags collection.collectors.cpu_flags"
block col-plugin-diff; run "expdna generate -o manifests/noflags.json -- python train.py --lr 3e-4 > /dev/null && expdna diff manifests/noflags.json manifests/flags.json"

# ---- collectors page: config, training, environment, framework ---------------------------
block col-config; run "expdna generate -o manifests/argv.json -- python -X dev -u train.py --betas 0.9 0.999 --layers 4 --name vit-b --cosine --lr=3e-4 > /dev/null && python ../show_manifest.py manifests/argv.json config.resolved_args"
block col-training; run "expdna generate -o manifests/t.json -- torchrun --nproc-per-node 8 train.py --tp 2 --pp 4 --global-batch-size 1024 --micro-batch-size 4 --gradient-accumulation-steps 8 --seed 7 --shuffle-seed 3 --algo grpo > /dev/null && python ../show_manifest.py manifests/t.json training"
block col-training-partial; run "expdna generate -o manifests/t2.json -- python train.py --tp auto --batch-size 64 > /dev/null; python ../show_manifest.py manifests/t2.json training collection.collectors.training"
block col-training-register; run "python ../training_demo.py"
block col-env; run "python ../show_manifest.py manifests/c.json environment.packages environment.packages_digest environment.package_count environment.container"
block col-env-listing; run "python -c 'from expdna.collectors.environment import distributions_listing; from expdna.digest import ref_of; b = distributions_listing(); print(b.decode()[:120] + \"...\"); print(len(b.splitlines()), \"lines\", ref_of(b))'"
block col-container; run "APPTAINER_CONTAINER=/images/pytorch.sif expdna generate -o manifests/sif.json -- $TRAIN --output-dir runs/lr3e-4 > /dev/null && python ../show_manifest.py manifests/sif.json environment.container"; run "expdna diff manifests/c.json manifests/sif.json"
block col-framework; run "python ../framework_demo.py"

# ---- collectors page: runtime -----------------------------------------------------------------
block col-slurm; run "env SLURM_JOB_ID=4242 SLURM_JOB_NUM_NODES=2 SLURM_NTASKS=16 SLURM_TASKS_PER_NODE='8(x2)' SLURM_GPUS_PER_NODE=8 SLURM_CPUS_PER_TASK=12 SLURM_JOB_PARTITION=h200 SLURM_JOB_NODELIST='gpu[001-002]' SLURM_PROCID=0 expdna generate -o manifests/slurm.json -- $TRAIN > /dev/null && python ../show_manifest.py manifests/slurm.json runtime config.selected_env"
block col-slurm-dna; run "python -c 'import expdna, json; from expdna.manifest.dna import projections; p = projections(expdna.load_manifest(\"manifests/slurm.json\")); print(json.dumps({\"config.selected_env\": p[\"config\"][\"selected_env\"], \"runtime\": p[\"runtime\"]}, indent=2))'"
block col-ray; run "python ../ray_demo.py"

# ---- collectors page: GPU (recorded machines) ---------------------------------------------------
if [ -d "$TESTDATA/nvidia-smi" ]; then
  mkdir -p "$DEMO/gpu" && ln -sfn "$TESTDATA/nvidia-smi" "$DEMO/gpu/recordings"
  cp "$TOOLS/gpu_replay.py" "$TOOLS/nvidia_smi_standin.py" "$DEMO/gpu/"
  cd "$DEMO/gpu" || exit 1
  block col-gpu-here; run "cd ../vit-cifar && python ../show_manifest.py manifests/c.json hardware.gpu_source hardware.gpu_count hardware.gpus collection.collectors.gpu"
  block col-gpu-csv; run "python gpu_replay.py recordings/gpuexporter_h200_driver-590.48.01_capture.txt -o h200.json"
  block col-gpu-xml; run "python gpu_replay.py recordings/telegraf_2x-rtx-a5000_driver-590.44.01.xml --brief"
  block col-gpu-visible; run "for v in 1 GPU-12345678-aaaa-bbbb-cccc-0123456789cd GPU-1234 1,7,0 '' -1; do python gpu_replay.py recordings/telegraf_2x-rtx-a5000_driver-590.44.01.xml --brief --visible \"\$v\"; done"
  block col-gpu-mig; run "python gpu_replay.py recordings/gpuexporter_h100-80gb-hbm3_mig_driver-590.48.01_capture.txt --brief --visible MIG-00000001-0000-0000-0000-000000000001"
  block col-gpu-nodriver; run "python gpu_replay.py no-driver 2>/dev/null"
  block col-gpu-dna; run "python -c 'import expdna, json; from expdna.manifest.dna import projections; print(json.dumps(projections(expdna.load_manifest(\"h200.json\"))[\"hardware\"], indent=2))'"
  cd "$DEMO/vit-cifar" || exit 1
fi

# ---- collectors page: data ---------------------------------------------------------------------
python "$TOOLS/make_data.py" imagenet-mini "$DEMO/data/imagenet-mini"
block col-data-gen; run "expdna generate -o manifests/data.json --data ../data/imagenet-mini -- python train.py --data-dir ../data/imagenet-mini && python ../show_manifest.py manifests/data.json data"
block col-cache-racy; run "ls \$EXPDNA_CACHE_DIR && sqlite3 \$EXPDNA_CACHE_DIR/digests.sqlite 'SELECT count(*) FROM digests; SELECT count(*) FROM trees'"
sleep 2.2
block col-cache-steady; run "expdna generate -o manifests/data2.json --data ../data/imagenet-mini > /dev/null && sqlite3 \$EXPDNA_CACHE_DIR/digests.sqlite 'SELECT count(*) FROM digests; SELECT count(*) FROM trees'"
block col-data-listing; run "python -c 'from expdna.collectors.data import listing_for; import sys; sys.stdout.write(listing_for(\"../data/imagenet-mini\").decode())' | tee listing.txt && python -c 'from blake3 import blake3; print(\"blake3:\" + blake3(open(\"listing.txt\", \"rb\").read()).hexdigest())'"
rm -f listing.txt
block col-verify-ok; run "expdna data verify manifests/data.json"
block col-verify-bad; run "printf x >> ../data/imagenet-mini/train/img_0001.jpg && rm ../data/imagenet-mini/val/img_0001.jpg && cp ../data/imagenet-mini/val/img_0000.jpg ../data/imagenet-mini/val/img_0002.jpg && expdna data verify manifests/data.json"
block col-verify-json; run "expdna data verify --json manifests/data.json"
block col-verify-moved; run "mv ../data/imagenet-mini ../data/imagenet-moved && expdna data verify manifests/data.json"; run "expdna data verify --data-root $DEMO/data/imagenet-mini=$DEMO/data/imagenet-moved manifests/data.json"
mv "$DEMO/data/imagenet-moved" "$DEMO/data/imagenet-mini"
python "$TOOLS/make_data.py" shards "$DEMO/data/shards" 300
block col-verify-large; run "expdna generate -o manifests/shards.json --data ../data/shards > /dev/null && rm ../data/shards/shard_00007.bin && expdna data verify manifests/shards.json"; run "EXPDNA_CACHE_DIR=$DEMO/other-cache expdna data verify manifests/shards.json"
# Timing on a deadline: what it shows depends on the machine's load, so like the benchmarks
# it runs only with EXPDNA_DOCS_BENCH=1 (the pages mark these blocks recorded=DATE).
if [ "${EXPDNA_DOCS_BENCH:-0}" = 1 ]; then
  python "$TOOLS/make_data.py" big "$DEMO/data/big" 128 16
  sleep 2.2
  block col-deadline; run "for i in 1 2 3 4 5 6; do expdna generate --deadline 0.2 -o manifests/big\$i.json --data ../data/big > /dev/null; python ../show_manifest.py -1 manifests/big\$i.json collection.collectors.data.status collection.collectors.data.duration_ms data.datasets.0.digest; done"
  block col-no-cache; run "expdna generate --deadline 0.2 --no-cache -o manifests/big7.json --data ../data/big > /dev/null; python ../show_manifest.py -1 manifests/big7.json collection.collectors.data.status collection.collectors.data.duration_ms data.datasets.0.digest"
fi

# ---- guide: recomputing the DNA ------------------------------------------------------------------
mkdir -p "$DEMO/dna-check" && cd "$DEMO/dna-check" || exit 1
cp "$TOOLS/recompute.py" "$TOOLS/reference_dna.py" "$TOOLS/fuzz_reference.py" . && ln -sfn "$REPO/tests" tests
block recompute;  run "python recompute.py tests/vectors/dna/typical.json"
ln -sfn "$REPO/spec" spec && cp "$TOOLS/verify_dna.sh" .
block spec-js-test; run "cd spec/js && npm ci --no-audit --no-fund --silent && node --test | tail -8"
block spec-js-cli; run "node spec/js/dna.mjs ../vit-cifar/manifests/a.json --sections --family"
block b3sum-dna; run "sh verify_dna.sh ../vit-cifar/manifests/a.json"
block b3sum-section; run "printf '{\"datasets\":[]}' | b3sum --no-names && jq -r .dna.sections.data ../vit-cifar/manifests/a.json"; run "printf '{\"global_batch_size\":128,\"parallel_topology\":{},\"seeds\":{\"seed\":42}}' | b3sum --no-names && jq -r .dna.sections.training ../vit-cifar/manifests/a.json"
block reference;  run "python reference_dna.py ../vit-cifar/manifests/a.json"
M=../vit-cifar/manifests
REFS="$M/pw.json $M/framework.json $M/slurm.json $M/flags.json $M/data.json"
[ -f "$DEMO/gpu/h200.json" ] && cp "$DEMO/gpu/h200.json" "$M/h200.json" && REFS="$REFS $M/h200.json"
block reference-many; run "for f in $REFS tests/vectors/dna/[!v]*.json; do printf '%-36s ' \$(basename \$f); python reference_dna.py \$f | tail -1 | cut -c14-; done"
block fuzz;       run "python fuzz_reference.py 1 3000"

# ---- guide: a patch too large for the cap -------------------------------------------------------
rm -rf "$DEMO/big" && mkdir -p "$DEMO/big" && cd "$DEMO/big" && git init -q -b main && echo x > a.py && git add a.py && git -c user.name=a -c user.email=a@b commit -qm init
python -c "
import random
r = random.Random(1)
open('weights_table.py', 'w').write('TABLE = [\n' + ''.join(f'    {r.random():.12f},\n' for _ in range(9000)) + ']\n')"
block big;        run "expdna generate -o $DEMO/big.json -- python a.py"
block big-check;  run "python -c \"import expdna; m = expdna.load_manifest('$DEMO/big.json'); print(m.code['big'].patch.size, m.code['big'].patch.truncated, expdna.dna_of(m) == m.dna.value)\" && wc -c < $DEMO/big.json"

# ---- guide: malformed inputs ---------------------------------------------------------------------
cd "$DEMO" && printf '{"schema_version": "1.0", "schema_version": "1.1"}' > dup.json && printf '{"schema_version": "1.0", "x": NaN}' > nan.json && python -c "print('['*20000 + ']'*20000)" > deep.json && python -c "print('{\"schema_version\": \"1.0\", \"a\": \"' + 'x'*50_000_000 + '\"}')" > big50.json && printf '\377\376{}' > bad.json && printf '{"schema_version": "1.0"}' > empty.json
block err-others; for f in dup.json nan.json deep.json big50.json bad.json empty.json; do run "expdna check $f"; done
rm -f dup.json nan.json deep.json big50.json bad.json empty.json

# ---- dna-v3.md: a nanoGPT-like checkout with tracker folders, interpreters, a pinned checkpoint
rm -rf "$DEMO/nano3" "$DEMO/venv2" && mkdir -p "$DEMO/nano3/config" "$DEMO/nano3/mlruns/0" "$DEMO/nano3/wandb/offline-run-1" && cd "$DEMO/nano3" || exit 1
printf 'print("training")\n' > train.py
printf 'batch_size = 12\ncompile = True\n' > config/train_shakespeare_char.py
git init -q -b main && git add train.py config && git commit -qm "nanoGPT-like"
printf 'name: Default\n' > mlruns/0/meta.yaml && printf '{}\n' > wandb/offline-run-1/run.wandb
ln -sfn "$REPO/spec" "$DEMO/spec"
python -m venv --without-pip "$DEMO/venv2"
block v3-diff;   run "expdna generate -o ../a.json -- python train.py config/train_shakespeare_char.py --compile=False"; run "expdna generate -o ../b.json -- python train.py config/train_shakespeare_char.py --compile=True > /dev/null"; run "expdna diff ../a.json ../b.json"
block v3-js;     run "jq -c .collection.collectors.git.notes ../a.json"; run "node ../spec/js/dna.mjs ../a.json"
block v3-interp; run "expdna generate -o ../a.json -- ../venv2/bin/python train.py"; run "jq -c '{python_executable: .environment.python_executable, package_count: .environment.package_count, notes: .collection.collectors.environment.notes}' ../a.json"; run "expdna generate -o ../b.json -- /opt/missing/python3 train.py"
block v3-pin;    run "expdna generate --record -o ../a.json -- python train.py"
V3RUN=$(jq -r .run_id ../a.json)
run "head -c 4096 /dev/urandom > ckpt.pt"; run "expdna pin ckpt.pt --run $V3RUN"; run "expdna generate -o ../b.json -- python train.py"; run "jq -c .collection.collectors.git.notes ../b.json"

# ---- config files (collectors.md §3.3b, guide "Config files") -----------------------------------
. "$TOOLS/config_demo.sh"

# ---- benchmarks (optional) -----------------------------------------------------------------------
if [ "${EXPDNA_DOCS_BENCH:-0}" = 1 ]; then
  cd "$REPO" || exit 1
  block bench-collect; run "python benchmarks/collect_bench.py"
  block bench-data;    run "python benchmarks/data_bench.py --size 512M"
  block redact-bench;  run "python benchmarks/redact_bench.py --repeat 300"
fi
