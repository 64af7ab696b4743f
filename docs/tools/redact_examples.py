"""The redaction examples of the guide, printed as `before -> after`."""

from expdna.manifest.redact import redact_argv, redact_text, redact_tree

TEXTS = [
    "https://user:pass@example.com/x",
    "git clone https://oauth2:glpat-abcdefghij1234567890@gitlab.com/a/b",
    "export OPENAI_API_KEY=sk-abc123def456ghi789jkl012mno",
    "AKIAIOSFODNN7EXAMPLE",
    "ssh 192.168.1.20 and 8.8.8.8",
    "/lustre/home/carol/ckpt",
    "db.internal:5432",
    "pad_token: <pad>",
    "torch 2.11.0+cu129, /data/imagenet, 8.8.8.8",
]
ARGVS = [
    ["--wandb-key=0123456789abcdef0123456789abcdef01234567"],
    ["--db-password", "hunter2hunter2"],
]
for text in TEXTS:
    print(f"{text}\n    -> {redact_text(text)}")
for argv in ARGVS:
    print(f"{' '.join(argv)}\n    -> {' '.join(redact_argv(argv))}")
# Numbers are redacted by name too: under a password name a number is hidden; under other
# secret names a plain number is left alone (it is as likely a date or a count).
tree = {"resolved_args": {"db_password": 12345678, "wandb_api_key": 20240101, "seed": 42}}
print(f"{tree}\n    -> {redact_tree(tree)}")
