# Sourced by transcript.sh (needs block, run, DEMO, TOOLS): the config-files examples of
# docs/{en,zh}/collectors.md §3.3b and docs/{en,zh}/guide.md "Config files".
rm -rf "$DEMO/nano" "$DEMO/shared" && mkdir -p "$DEMO/nano/config" "$DEMO/shared" && cd "$DEMO/nano" || exit 1
git init -q -b main
printf 'print("training")\n' > train.py
cat > config/train_shakespeare_char.py <<'PY'
# nanoGPT's configurator exec()s this file; expdna only reads it
out_dir = 'out-shakespeare-char'
wandb_run_name = 'mini-gpt-' + str(time.time())
gradient_accumulation_steps = 1
batch_size = 64
learning_rate = 1e-3
PY
git add -A && git -c user.name=a -c user.email=a@b commit -qm init
cat > "$DEMO/shared/exp.yaml" <<'YAML'
optimizer:
  lr: 0.0003
  betas: [0.9, 0.95]
trainer:
  seed: 7
  precision: bf16-mixed
hub:
  token: hf_Zx8Lq2Vb7Nc4Mk1Pw9Rt5Ys3Dh6Gf0Ja2
YAML
printf '{"train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 4, "zero_optimization": {"stage": 2}}\n' > "$DEMO/shared/ds_config.json"
NANO="python train.py config/train_shakespeare_char.py --config ../shared/exp.yaml --deepspeed ../shared/ds_config.json --batch_size=12"
block cfg-generate; run "expdna generate --record -o ../cfg-a.json -- $NANO"
block cfg-files;    run "python ../show_manifest.py ../cfg-a.json config.config_files config.config_file_args config.config_values training"
block cfg-detail;   run "python -c \"import json; d = json.load(open('../cfg-a.json'))['config']['config_file_details']; print(json.dumps(d['$DEMO/shared/exp.yaml'], indent=2))\""
mkdir -p "$DEMO/elsewhere" && cp "$DEMO/shared/exp.yaml" "$DEMO/elsewhere/exp.yaml"
block cfg-moved;    run "expdna generate -o ../cfg-moved.json -- ${NANO%% --config*} --config ../elsewhere/exp.yaml --deepspeed ../shared/ds_config.json --batch_size=12 && expdna diff ../cfg-a.json ../cfg-moved.json | tail -4"
sed -i 's/lr: 0.0003/lr: 0.0006/; s/hf_Zx8Lq2Vb7Nc4Mk1Pw9Rt5Ys3Dh6Gf0Ja2/hf_Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz2Xc4/' "$DEMO/shared/exp.yaml"
block cfg-edited;   run "expdna generate --record -o ../cfg-b.json -- $NANO > /dev/null && expdna diff ../cfg-a.json ../cfg-b.json"
block cfg-find;     run "expdna find --where config.config_values.exp.yaml.optimizer.lr=0.0006"
block cfg-export;   run "expdna export --parquet ../cfg.parquet --column config.config_values.exp.yaml.optimizer.lr && python -c \"import pyarrow.parquet as pq; rows = pq.read_table('../cfg.parquet', columns=['run_id', 'config.config_values.exp.yaml.optimizer.lr']).to_pylist(); [print(r) for r in sorted(rows, key=lambda r: str(list(r.values())[1]))]\""
mkfifo "$DEMO/shared/held.yaml"
block cfg-unknown;  run "expdna generate -o ../cfg-c.json -- python train.py --config ../shared/held.yaml; python ../show_manifest.py ../cfg-c.json unknown"
rm -f "$DEMO/shared/held.yaml"

# Hydra: an app composed from two config groups
rm -rf "$DEMO/hydra-app" && mkdir -p "$DEMO/hydra-app/conf/db" "$DEMO/hydra-app/conf/model" && cd "$DEMO/hydra-app" || exit 1
printf 'defaults:\n  - db: mysql\n  - model: small\n  - _self_\ntraining:\n  batch_size: 32\n  seed: 3\n  lr: 0.001\n  warmup_lr: ${training.lr}\n' > conf/config.yaml
printf 'driver: mysql\nport: 3306\n' > conf/db/mysql.yaml
printf 'driver: postgresql\nport: 5432\n' > conf/db/postgres.yaml
printf 'layers: 6\n' > conf/model/small.yaml
printf 'layers: 24\n' > conf/model/large.yaml
cp "$TOOLS/hydra_app.py" app.py
block cfg-hydra;     run "python app.py db=postgres model=large model.layers=12 hydra.run.dir=outputs/run1 && python ../show_manifest.py outputs/run1/manifest_*.json config.resolved_args config.hydra config.config_files training"
