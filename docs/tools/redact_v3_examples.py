"""The examples of redaction.md: each line through `redact_text`, then an argv through
`redact_argv` and a tree through `redact_tree`, printed as `before -> after`."""

from expdna.manifest.redact import redact_argv, redact_text, redact_tree

TEXTS = [
    "amqp://worker:gu3st#x9Qm@mq.example.com:5672/jobs",
    "mongodb+srv://admin:p@ssW0rd@cluster0.example.net/db",
    "mysql://root:pa/ss42@db.example.com/app",
    "https://acct.blob.core.windows.net/c/b.bin?sv=2022-11-02&sr=b&sig=AbCdEf0123456789xyzQ%3D",
    "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature="
    "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "wandb login cd18fc9fb6494384932af3bda6fe8102c0fa7a26",
    "curl -u bob:Hunter42xyz https://api.example.com/v1",
    "mysql -h db -u root -pHunter42xyz app",
    "docker login -u ci -p Hunter42xyz registry.example.com",
    "RAY_REDIS_PW=Hunter42xyz ray start --head",
    'x = "{\\"auths\\": {\\"reg.io\\": {\\"auth\\": \\"Y2k6SHVudGVyNDJ4eXo=\\"}}}"',
    "remember the key Zx9wV8uT7sR6qP5oN4mL3kJ2 for the mirror",
    "tensorrt==10.3.0.26  if args.local: self.internal = True",
    "sk-resnet50-imagenet-finetune-v2  trainer-7d9f8b6c5d-x2k4p  raysubmit_H2ZbjPd1Jm8hKyB4",
    "--num-pass 2  single_pass: true  tool_call_token: <tool_call>  "
    "cache key 5d41402abc4b2a76b9719d911017c592",
]
ARGV = [
    "python",
    "train.py",
    "--db-pw",
    "Hunter42xyz",
    "--expected-md5",
    "5d41402abc4b2a76b9719d911017c592",
    "--out",
    "/data/runs/Zx9wV8uT7sR6qP5oN4mL3kJ2/ckpt.pt",
]
TREE = {
    "command": {"argv": ["curl", "-u", "bob:Hunter42xyz", "x"]},
    "config": {
        "resolved_args": {
            "u": "bob:Hunter42xyz",
            "num_pass": 2,
            "mlflow_run_id": "5d41402abc4b2a76b9719d911017c592",
        },
        "selected_env": {"WANDB_KEY": "cd18fc9fb6494384932af3bda6fe8102c0fa7a26"},
    },
}
for text in TEXTS:
    print(f"{text}\n    -> {redact_text(text)}")
print(f"{ARGV}\n    -> {redact_argv(ARGV)}")
print(f"{TREE}\n    -> {redact_tree(TREE)}")
