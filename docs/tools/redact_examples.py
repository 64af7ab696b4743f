"""The redaction examples of the guide, printed as `before -> after`."""

from pathlib import Path

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
    'TELEGRAM_BOT = "7012345678:AAH3kq9ZpX2vLm8Rt5Wn1Yc4Bd7Fg0Js6Qe"',
    "DATASET=imagenet-1k SHA=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
]
ARGVS = [
    ["--wandb-key=0123456789abcdef0123456789abcdef01234567"],
    ["--db-password", "hunter2hunter2"],
    [f"{Path.home()}/venv/bin/python", "train.py", "--out", "/home/bob/runs"],
    ["age", "-d", "-i", ("AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:74]],
    ["train.py", "--remote", "Zx9wV8uT7sR6qP5oN4mL3kJ2", "--model", "vit_base_patch16_224"],
]
# A patch is read as the files it changes: `.netrc` over three added lines, a Docker
# config's `auths` block. Lines stay lines, so the redacted patch still applies.
PATCH = """\
diff --git a/.netrc b/.netrc
--- a/.netrc
+++ b/.netrc
@@ -1 +1,4 @@
 # hosts
+machine api.wandb.ai
+  login ci-bot
+  password Pz8sK2qLm4Rt
diff --git a/docker/config.json b/docker/config.json
--- a/docker/config.json
+++ b/docker/config.json
@@ -1,3 +1,7 @@
 {
+  "auths": {
+    "registry.example.com": {
+      "auth": "Y2ktYm90OlB6OHNLMnFMbTRSdA=="
+    }
+  },
   "credsStore": "desktop"
 }
"""
for text in TEXTS:
    print(f"{text}\n    -> {redact_text(text)}")
for argv in ARGVS:
    print(f"{' '.join(argv)}\n    -> {' '.join(redact_argv(argv))}")
# Numbers are redacted by name too: under a password name a number is hidden; under other
# secret names a plain number is left alone (it is as likely a date or a count).
tree = {"resolved_args": {"db_password": 12345678, "wandb_api_key": 20240101, "seed": 42}}
print(f"{tree}\n    -> {redact_tree(tree)}")
print(redact_text(PATCH), end="")
