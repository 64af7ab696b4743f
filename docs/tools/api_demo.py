import expdna

argv = ["python", "train.py", "--lr", "3e-4", "--seed", "42"]

# Collect only: a validated, redacted Manifest with its DNA; nothing is written.
manifest = expdna.collect(argv)
print(manifest.run_id, manifest.dna.value[:12])
print(manifest.config.resolved_args)
repo = manifest.code["vit-cifar"]
print(repo.commit[:7], repo.branch, repo.dirty)

# Collect and write the file (atomically, under the 100 KB cap).
path, written = expdna.generate(
    argv, output="manifests/api.json", dna_ignore=["config.resolved_args.seed"]
)
print(path, written.dna.value[:12])

# Read any 1.x manifest back; dna_of recomputes the DNA from the content.
loaded = expdna.load_manifest(path)
print(expdna.dna_of(loaded) == loaded.dna.value)

# Every error expdna raises on purpose is an ExpdnaError carrying its exit code.
try:
    expdna.load_manifest("manifests/nope.json")
except expdna.ExpdnaError as exc:
    print(type(exc).__name__, exc.exit_code, exc)
