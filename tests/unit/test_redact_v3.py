"""Redaction v3: URLs read as URLs, command credential forms, short password names, JSON in
strings, hex exempt only where its context says digest, look-alikes kept, prose and path
components under the backstop."""

from __future__ import annotations

import json
import random
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from expdna.manifest.redact import redact_argv, redact_text, redact_tree

HEX40 = "cd18fc9fb6494384932af3bda6fe8102c0fa7a26"
HEX64 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
MD5 = "5d41402abc4b2a76b9719d911017c592"


@pytest.fixture(autouse=True)
def _home_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/srv/nobody-here")


# --- 1. URLs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("amqp://worker:gu3st#YYYY@mq.example.com:5672/v", "amqp://***@mq.example.com:5672/v"),
        ("mongodb+srv://admin:p@ssXXXX@cluster0.x.net/db", "mongodb+srv://***@cluster0.x.net/db"),
        ("mysql://root:pa/ssXX@db.example.com/app", "mysql://***@db.example.com/app"),
        ("postgresql://u:p@h1:5432,h2:5432/db", "postgresql://***@h1:5432,h2:5432/db"),
        ("https://user:pass@example.com/x", "https://***@example.com/x"),
        (
            "https://a.blob.core.windows.net/c/b?sv=2022-11-02&sr=b&sig=AbCdEf0123456789%2Bxyz%3D",
            "https://a.blob.core.windows.net/c/b?sv=2022-11-02&sr=b&sig=AbCd***",
        ),
        (
            f"https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature={HEX64}",
            "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=9f86***",
        ),
        (
            "https://storage.googleapis.com/b/o?X-Goog-Signature=0a1b2c3d4e5f60718293",
            "https://storage.googleapis.com/b/o?X-Goog-Signature=0a1b***",
        ),
        (
            "https://cdn.example.com/f?Expires=1&Signature=Zm9vYmFy",
            "https://cdn.example.com/f?Expires=1&Signature=***",
        ),
        ("https://x.com/cb#access_token=abc123def456", "https://x.com/cb#access_token=***"),
        ("https://x.com/?token=abc123def456&page=2", "https://x.com/?token=***&page=2"),
        (
            "https://x.com/v1?api_key=Zx9wV8uT7sR6qP5oN4mL3kJ2).",
            "https://x.com/v1?api_key=Zx9w***).",
        ),
        (
            "https://maps.example.com/?key=AbC123xYz789QwE456rTy0",
            "https://maps.example.com/?key=AbC1***",
        ),
    ],
)
def test_a_url_is_read_as_a_url(url: str, expected: str) -> None:
    assert redact_text(url) == expected
    assert redact_text(f"git remote add origin {url}") == f"git remote add origin {expected}"
    assert redact_text(expected) == expected  # idempotent


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/org/repo@v1.0",
        "http://myhost:8080/a@b",
        "https://x.com/?key=value&q=1",
        "https://x.com/search?q=token&page=2",
        "git@github.com:org/repo.git",
        "ssh://git@gitlab.com/ml/vit.git",
        "https://user@host.example.com/x",
        "https://host/a?redirect=a@b.com",
    ],
)
def test_a_url_without_credentials_is_kept(url: str) -> None:
    assert redact_text(url) == url


def test_a_sas_signature_outside_a_url_fires() -> None:
    assert redact_text("SAS=sv=2022-11-02&sr=b&sig=AbCdEf0123456789xyz%3D") == (
        "SAS=sv=2022-11-02&sr=b&sig=***"
    )


# --- 2. command forms and short password names --------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("curl -u bob:S3cretPw9 https://x.com", "curl -u bob:*** https://x.com"),
        ("curl -s --user=bob:pw1234 x", "curl -s --user=bob:*** x"),
        ("curl --user bob:pw1234 x", "curl --user bob:*** x"),
        ("mysql -h db -u root -pHunter22 app", "mysql -h db -u root -p*** app"),
        (f"wandb login {HEX40}", "wandb login ***"),
        (
            f"wandb login --relogin --host https://w.example.com {HEX40}",
            "wandb login --relogin --host https://w.example.com ***",
        ),
        (
            "huggingface-cli login --token hf_aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z",
            "huggingface-cli login --token hf_***",
        ),
        ("docker login -u me -p S3cr3t registry.io", "docker login -u me -p *** registry.io"),
        ("sshpass -pS3cr3t ssh h", "sshpass -p*** ssh h"),
        ("redis-cli -h h -a S3cr3t ping", "redis-cli -h h -a *** ping"),
        ("RAY_REDIS_PW=hunter2x ray start", "RAY_REDIS_PW=*** ray start"),
        ("--db-pw s3cret", "--db-pw ***"),
        ("SMTP_PASS=abc", "SMTP_PASS=***"),
    ],
)
def test_a_command_credential_form_in_text(line: str, expected: str) -> None:
    assert redact_text(line) == expected
    assert redact_text(expected) == expected


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["curl", "-u", "bob:S3cr3t", "x"], ["curl", "-u", "bob:***", "x"]),
        (["curl", "-ubob:S3cr3t", "x"], ["curl", "-ubob:***", "x"]),
        (["/usr/bin/mysql", "-pS3cr3t", "db"], ["/usr/bin/mysql", "-p***", "db"]),
        (["mysql", "-p", "db"], ["mysql", "-p", "db"]),  # `-p` alone asks for it
        (["wandb", "login", "--relogin", HEX40], ["wandb", "login", "--relogin", "***"]),
        (["docker", "login", "-p", "S3cr3t", "r.io"], ["docker", "login", "-p", "***", "r.io"]),
        (
            ["train.py", "--pw", "abc", "--passwd", "x1"],
            ["train.py", "--pw", "***", "--passwd", "***"],
        ),
        (["python", "-u", "train.py"], ["python", "-u", "train.py"]),
        (["docker", "run", "-u", "1000:1000", "img"], ["docker", "run", "-u", "1000:1000", "img"]),
    ],
)
def test_a_command_credential_form_in_argv(argv: list[str], expected: list[str]) -> None:
    assert redact_argv(argv) == expected


def test_argv_and_resolved_args_agree() -> None:
    tree = {
        "command": {"argv": ["curl", "-u", "bob:S3cr3tPw9x", "x"]},
        "config": {"resolved_args": {"u": "bob:S3cr3tPw9x"}},
    }
    out, paths = redact_tree(tree)
    assert out["command"]["argv"][2] == "bob:***"
    assert out["config"]["resolved_args"]["u"] == "bob:***"
    assert paths == ["command.argv.2", "config.resolved_args.u"]


# --- 3. JSON in a string -------------------------------------------------------------------------

AUTH = "Y2ktYm90OlB6OHNLMnFMbTRSdA=="
DOCKER = json.dumps({"auths": {"reg.io": {"auth": AUTH}}})


def test_json_in_a_value_is_walked_and_its_text_rewritten() -> None:
    tree = {"config": {"resolved_args": {"docker_cfg": DOCKER}}}
    out, paths = redact_tree(tree)
    text = out["config"]["resolved_args"]["docker_cfg"]
    assert AUTH not in text and json.loads(text) == {"auths": {"reg.io": {"auth": "Y2kt***"}}}
    assert paths == ["config.resolved_args.docker_cfg"]


def test_json_under_a_secret_block_on_one_line() -> None:
    value = json.dumps({"credentials": {"user": "ci", "value": "plainwords"}})
    out, _ = redact_tree({"config": {"selected_env": {"SETTING": value}}})
    assert "plainwords" not in out["config"]["selected_env"]["SETTING"]


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"x": DOCKER}),  # JSON as a string in JSON
        f"x = {json.dumps(DOCKER)}\n",  # in TOML or Python
        json.dumps({"note": "creds:\n  password: Hunter22x\n"}),  # YAML in a JSON string
        json.dumps({"source": ['db_password = "Hunter22x"\n']}),  # a notebook's code cell
    ],
)
def test_an_escaped_document_is_redacted_as_the_text_it_holds(text: str) -> None:
    out = redact_text(text)
    assert AUTH not in out and "Hunter22x" not in out
    json.loads(out) if text.startswith("{") else None  # still valid JSON


# --- 4. hex: a digest only where the context says so ----------------------------------------------


def test_hex_under_a_digest_name_is_kept_in_argv_and_resolved_args_alike() -> None:
    argv = ["t.py", "--expected-md5", MD5, "--mlflow-run-id", MD5, "--blake2b-checksum", "ab" * 64]
    tree = {
        "command": {"argv": argv},
        "config": {"resolved_args": {"expected_md5": MD5, "mlflow_run_id": MD5}},
    }
    assert redact_tree(tree) == (tree, [])


def test_hex_after_a_credential_name_or_command_is_hidden() -> None:
    tree = {"config": {"selected_env": {"WANDB_KEY": HEX40}, "resolved_args": {"wandb": HEX40}}}
    out, _ = redact_tree(tree)
    assert HEX40 not in json.dumps(out)
    assert redact_argv(["wandb", "login", HEX40]) == ["wandb", "login", "***"]
    assert HEX64 not in redact_text(f"?X-Amz-Signature={HEX64}")
    # a bare 32-hex value of an ordinary flag is hidden (a Kaggle key has that shape)
    assert redact_argv(["t.py", "--remote", MD5]) == ["t.py", "--remote", "5d41***"]


def test_hex_as_a_commit_or_a_positional_word_is_kept() -> None:
    words = ["git", "checkout", HEX40, "cache", MD5]
    assert redact_argv(words) == words
    assert redact_text(f"Merge commit {HEX40} into main; cache key {MD5}") == (
        f"Merge commit {HEX40} into main; cache key {MD5}"
    )


# --- 5. look-alikes ----------------------------------------------------------------------------

LOOK_ALIKES = [
    "tensorrt==10.3.0.26",
    "nvidia-cudnn-cu12>=9.1.0.70",
    "if args.local:",
    "self.internal = True",
    "cfg.lan",
    "sk-resnet50-imagenet-finetune-v2",
    "--num-pass 2",
    "single_pass: true",
    "num_pass = 3",
    f"--expected-md5 {MD5}",
    f"--mlflow-run-id {MD5}",
    f"--cache-key {MD5}",
    "trainer-7d9f8b6c5d-x2k4p",
    "raysubmit_H2ZbjPd1Jm8hKyB4",
    "tool_call_token: <tool_call>",
    "pad_token: '[PAD]'",
    "nvmlDeviceGetBAR1MemoryInfo",
    "C:\\Windows\\SystemApps\\ShellExperienceHost_cw5n1h2txyewy\\x.exe",
    "/data/objects/ab/" + "c" * 30 + "0123456789abcdef0123456789abcdef",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_a_look_alike_is_kept(text: str) -> None:
    assert redact_text(text) == text
    words = text.split()
    assert redact_argv(["t.py", *words]) == ["t.py", *words]
    tree = {"config": {"resolved_args": {"note": text}}, "command": {"cwd": f"/work/{text}"}}
    assert redact_tree(tree) == (tree, [])


def test_look_alikes_as_numbers_under_pass_names() -> None:
    tree = {"config": {"resolved_args": {"num_pass": 2, "single_pass": True, "smtp_pass": "x1"}}}
    out, paths = redact_tree(tree)
    assert out["config"]["resolved_args"] == {
        "num_pass": 2,
        "single_pass": True,
        "smtp_pass": "***",
    }
    assert paths == ["config.resolved_args.smtp_pass"]


# --- 6. prose and path components --------------------------------------------------------------


def test_a_bare_token_in_prose_and_a_path_component() -> None:
    token = "Xq7Rt2LmZp4Wk9YbHn3Vc8Jd"
    assert (
        redact_text(f"remember the key {token} for later") == "remember the key Xq7R*** for later"
    )
    assert redact_argv(["t.py", "--out", f"/data/runs/{token}/ckpt.pt"]) == [
        "t.py",
        "--out",
        "/data/runs/Xq7R***/ckpt.pt",
    ]
    out, paths = redact_tree({"command": {"cwd": f"/work/{token}"}})
    assert out == {"command": {"cwd": "/work/Xq7R***"}} and paths == ["command.cwd"]


@settings(max_examples=150, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 2**32 - 1),
    before=st.sampled_from(["note:", "see", "# launched with", "echo", "!"]),
)
def test_a_random_token_in_prose_never_survives(seed: int, before: str) -> None:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits
    token = (
        rng.choice(string.ascii_uppercase)
        + "".join(rng.choice(alphabet) for _ in range(38))
        + rng.choice(string.digits)
    )
    for text in (f"{before} {token} done", f"cd /scratch/{token}/run && ./go"):
        assert token[4:] not in redact_text(text), text


# --- a section in a patch, a path's directories ------------------------------------------------


def test_a_section_in_a_patch_ends_with_its_file() -> None:
    patch = (
        "diff --git a/launch.sh b/launch.sh\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/launch.sh\n@@ -0,0 +1,2 @@\n+[registry.credentials]\n+value = Hunter22x\n"
        "diff --git a/notes.txt b/notes.txt\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/notes.txt\n@@ -0,0 +1 @@\n+lr 0.1 for the first run\n"
    )
    out = redact_text(patch)
    assert "Hunter22x" not in out
    assert out.split("+value = ")[1].startswith("***")
    assert out.endswith(patch.split("+value = Hunter22x\n")[1])  # the next file as it was


def test_each_directory_of_a_path_is_a_value_of_its_own() -> None:
    cwd = "/work/single_pass: true/--num-pass 2/cache key " + MD5 + "/--db-pw Hunter22x/x"
    out, paths = redact_tree({"command": {"cwd": cwd}})
    assert out["command"]["cwd"] == (
        "/work/single_pass: true/--num-pass 2/cache key " + MD5 + "/--db-pw ***/x"
    )
    assert paths == ["command.cwd"]
    other, _ = redact_tree({"command": {"cwd": "/home/alice/runs/x"}})
    assert other["command"]["cwd"] == "<HOME>/runs/x"  # a home is found on the whole path


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            '    "!curl https://a.blob.core.windows.net/c?sr=b&sig=AbCdEf0123456789xyz%3D\\n",',
            '    "!curl https://a.blob.core.windows.net/c?sr=b&sig=AbCd***\\n",',
        ),
        (f'    "!wandb login {HEX40}\\n",', '    "!wandb login ***\\n",'),
    ],
)
def test_a_notebook_source_line_keeps_the_escape_after_a_secret(line: str, expected: str) -> None:
    assert redact_text(line) == expected
