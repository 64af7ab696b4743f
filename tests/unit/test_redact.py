"""Redaction: a corpus of credential shapes that must go, look-alikes that must stay."""

from __future__ import annotations

import base64
import copy
import json
import random
import string
from dataclasses import dataclass
from typing import Any

import pytest

from expdna.manifest.redact import (
    REDACTED_MARK,
    redact_argv,
    redact_named,
    redact_text,
    redact_tree,
)

_RNG = random.Random(20240917)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
URLSAFE = ALNUM + "_-"
B64 = ALNUM + "+/"
HEX = "0123456789abcdef"


def rand(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n))


def b64url(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


@dataclass(frozen=True)
class Secret:
    kind: str
    text: str  # the credential as it appears
    bodies: tuple[str, ...]  # the parts that must not survive
    alone: str  # expected output of redact_text(text)

    def __str__(self) -> str:
        return self.kind


def _token(kind: str, prefix: str, body: str, shown: str | None = None) -> Secret:
    return Secret(kind, prefix + body, (body,), (shown or prefix) + REDACTED_MARK)


def _pem(label: str, lines: int) -> Secret:
    body = tuple(rand(B64, 64) for _ in range(lines))
    begin = f"-----BEGIN {label}-----"
    end = f"-----END {label}-----"
    text = "\n".join((begin, *body, rand(B64, 20) + "==", end))
    # line by line, so a redacted patch keeps its line count
    alone = "\n".join((begin, *[REDACTED_MARK] * (lines + 1), end))
    return Secret(f"pem-{label}", text, body, alone)


def _jwt(kind: str) -> Secret:
    header = b64url({"alg": "HS256", "typ": "JWT"})
    payload = b64url({"sub": rand(ALNUM, 12), "iat": _RNG.randrange(1_600_000_000, 1_800_000_000)})
    signature = rand(URLSAFE, 43)
    text = f"{header}.{payload}.{signature}"
    return Secret(kind, text, (payload, signature), "eyJ" + REDACTED_MARK)


def _url(kind: str, scheme: str, user: str, password: str, rest: str) -> Secret:
    text = f"{scheme}://{user}:{password}@{rest}"
    return Secret(kind, text, (password,), f"{scheme}://{REDACTED_MARK}@{rest}")


def _corpus() -> list[Secret]:
    c: list[Secret] = []
    for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"):
        c.append(_token(f"github-{p}", p, rand(ALNUM, 36)))
    c.append(_token("github-pat", "github_pat_", rand(ALNUM, 22) + "_" + rand(ALNUM, 59)))
    c.append(_token("github-pat-2", "github_pat_", rand(ALNUM, 22) + "_" + rand(ALNUM, 59)))
    for p in ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-"):
        c.append(_token(f"gitlab-{p}", p, rand(URLSAFE, 20)))
    for i in range(3):
        c.append(_token(f"huggingface-{i}", "hf_", rand(ALNUM, 34)))
    c.append(_token("openai-legacy", "sk-", rand(ALNUM, 20) + "T3BlbkFJ" + rand(ALNUM, 20)))
    c.append(_token("openai-project", "sk-proj-", rand(URLSAFE, 156)))
    c.append(_token("openai-svcacct", "sk-svcacct-", rand(URLSAFE, 156)))
    c.append(_token("openai-admin", "sk-admin-", rand(URLSAFE, 120)))
    c.append(_token("anthropic-api", "sk-ant-api03-", rand(URLSAFE, 93) + "AA"))
    c.append(_token("anthropic-admin", "sk-ant-admin01-", rand(URLSAFE, 93) + "AA"))
    slack_ids = f"{rand(string.digits, 12)}-{rand(string.digits, 13)}-"
    c.append(_token("slack-bot", "xoxb-", slack_ids + rand(ALNUM, 24)))
    c.append(_token("slack-user", "xoxp-", slack_ids + rand(ALNUM, 32)))
    c.append(_token("slack-app-level", "xoxa-", "2-" + rand(ALNUM, 40)))
    c.append(_token("slack-app", "xapp-", f"1-A{rand(UPPER_DIGITS, 10)}-{rand(HEX, 64)}"))
    hook = "https://hooks.slack.com/services/"
    c.append(
        _token(
            "slack-webhook",
            hook,
            f"T{rand(UPPER_DIGITS, 8)}/B{rand(UPPER_DIGITS, 8)}/" + rand(ALNUM, 24),
        )
    )
    for p in ("AKIA", "ASIA", "AKIA"):
        c.append(_token(f"aws-{p}", p, rand(UPPER_DIGITS, 16)))
    c.append(_token("google-api-key", "AIza", rand(URLSAFE, 35)))
    c.append(_token("google-api-key-2", "AIza", rand(URLSAFE, 35)))
    c.append(_token("google-oauth", "ya29.", rand(URLSAFE, 120)))
    c.append(_token("google-client-secret", "GOCSPX-", rand(URLSAFE, 28)))
    for p in ("sk_live_", "sk_test_", "rk_live_", "pk_live_"):
        c.append(_token(f"stripe-{p}", p, rand(ALNUM, 24)))
    c.append(_token("stripe-webhook", "whsec_", rand(ALNUM, 32)))
    c.append(_token("npm", "npm_", rand(ALNUM, 36)))
    c.append(_token("pypi", "pypi-", "AgEIcHlwaS5vcmc" + rand(URLSAFE, 150)))
    c.append(_token("wandb-v1", "wandb_v1_", rand(URLSAFE, 77)))
    c.append(_token("wandb-local", "local-", rand(HEX, 40)))
    c.append(_jwt("jwt"))
    c.append(_jwt("jwt-2"))
    c.append(_pem("RSA PRIVATE KEY", 6))
    c.append(_pem("OPENSSH PRIVATE KEY", 4))
    c.append(_pem("EC PRIVATE KEY", 2))
    c.append(_pem("PRIVATE KEY", 5))
    c.append(_pem("ENCRYPTED PRIVATE KEY", 5))
    c.append(_pem("PGP PRIVATE KEY BLOCK", 3))
    c.append(_token("databricks", "dapi", rand(HEX, 32)))
    c.append(_token("sendgrid", "SG.", rand(URLSAFE, 22) + "." + rand(URLSAFE, 43)))
    c.append(_token("twilio", "SK", rand(HEX, 32)))
    c.append(_token("digitalocean", "dop_v1_", rand(HEX, 64)))
    c.append(_token("vault", "hvs.", rand(URLSAFE, 90)))
    c.append(_token("replicate", "r8_", rand(ALNUM, 37)))
    c.append(_token("groq", "gsk_", rand(ALNUM, 52)))
    c.append(_token("xai", "xai-", rand(ALNUM, 80)))
    c.append(_token("nvidia", "nvapi-", rand(URLSAFE, 64)))
    c.append(_token("perplexity", "pplx-", rand(ALNUM, 48)))
    c.append(_token("bearer", "Bearer ", rand(URLSAFE, 40)))
    account_key = rand(B64, 86) + "=="
    azure = (
        "DefaultEndpointsProtocol=https;AccountName=mlruns;"
        f"AccountKey={account_key};EndpointSuffix=core.windows.net"
    )
    c.append(
        Secret(
            "azure-storage",
            azure,
            (account_key,),
            azure.replace(account_key, REDACTED_MARK),
        )
    )
    c.append(
        _url("url-postgres", "postgres", "trainer", rand(ALNUM, 16), "db.example.com:5432/app")
    )
    c.append(_url("url-mongodb", "mongodb+srv", "ml", rand(ALNUM, 20), "cluster0.mongodb.net/x"))
    c.append(_url("url-redis", "redis", "default", rand(ALNUM, 24), "cache.example.com:6379/0"))
    c.append(
        _url("url-gitlab-oauth2", "https", "oauth2", rand(ALNUM, 20), "gitlab.example.com/ml.git")
    )
    c.append(
        _url("url-ghs", "https", "x-access-token", "ghs_" + rand(ALNUM, 36), "github.com/o/r.git")
    )
    token_user = "ghp_" + rand(ALNUM, 36)
    c.append(
        Secret(
            "url-token-user",
            f"https://{token_user}@github.com/org/repo.git",
            (token_user[4:],),
            f"https://{REDACTED_MARK}@github.com/org/repo.git",
        )
    )
    return c


CORPUS = _corpus()


def assert_gone(secret: Secret, out: str) -> None:
    for body in secret.bodies:
        assert body not in out, f"{secret.kind}: body survived in {out!r}"
    assert REDACTED_MARK in out


def test_corpus_is_large_and_distinct() -> None:
    assert len(CORPUS) >= 50
    assert len({s.text for s in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("secret", CORPUS, ids=str)
def test_shape_alone(secret: Secret) -> None:
    out = redact_text(secret.text)
    assert out == secret.alone
    assert_gone(secret, out)


@pytest.mark.parametrize("secret", CORPUS, ids=str)
def test_shape_in_a_sentence(secret: Secret) -> None:
    out = redact_text(f"The credential is {secret.text}, please rotate it.")
    assert_gone(secret, out)
    assert out.startswith("The credential is ")
    assert out.endswith(", please rotate it.")


@pytest.mark.parametrize("secret", CORPUS, ids=str)
def test_shape_as_env_value_under_an_ordinary_name(secret: Secret) -> None:
    tree = {"config": {"selected_env": {"TRAINER_SETTING": secret.text, "NCCL_DEBUG": "INFO"}}}
    out, paths = redact_tree(tree)
    assert_gone(secret, out["config"]["selected_env"]["TRAINER_SETTING"])
    assert out["config"]["selected_env"]["NCCL_DEBUG"] == "INFO"
    assert paths == ["config.selected_env.TRAINER_SETTING"]


@pytest.mark.parametrize("secret", CORPUS, ids=str)
def test_shape_inside_argv(secret: Secret) -> None:
    argv = [
        "python",
        "train.py",
        "--remote",
        secret.text,
        f"--remote={secret.text}",
        "--lr",
        "3e-4",
    ]
    out = redact_argv(argv)
    assert out[:3] == ["python", "train.py", "--remote"]
    assert out[-2:] == ["--lr", "3e-4"]
    assert_gone(secret, out[3])
    assert_gone(secret, out[4])
    assert out[4].startswith("--remote=")


@pytest.mark.parametrize("secret", CORPUS, ids=str)
def test_shape_inside_a_patch(secret: Secret) -> None:
    added = "\n".join("+" + line for line in f"export TRAINER_SETTING={secret.text}".splitlines())
    one_line = secret.bodies[0] if "\n" in secret.text else secret.text
    patch = (
        "diff --git a/run.sh b/run.sh\n"
        "index 1a2b3c4..5d6e7f8 100644\n"
        "--- a/run.sh\n"
        "+++ b/run.sh\n"
        "@@ -1,2 +1,4 @@\n"
        " #!/bin/sh\n"
        f"{added}\n"
        f"+export TOKEN={one_line}\n"
        " python train.py --lr 3e-4\n"
    )
    out = redact_text(patch)
    assert_gone(secret, out)
    assert out.startswith("diff --git a/run.sh b/run.sh\nindex 1a2b3c4..5d6e7f8 100644\n")
    assert out.endswith(" python train.py --lr 3e-4\n")


@pytest.mark.parametrize("secret", CORPUS, ids=str)
def test_redaction_is_idempotent(secret: Secret) -> None:
    once = redact_text(f"value: {secret.text}\nnext line")
    assert redact_text(once) == once


def test_pem_block_cut_short_is_redacted_to_the_end() -> None:
    body = rand(B64, 64)
    text = f'+key = """\n+-----BEGIN OPENSSH PRIVATE KEY-----\n+{body}\n+{body[::-1]}'
    out = redact_text(text)
    assert out == '+key = """\n+-----BEGIN OPENSSH PRIVATE KEY-----\n+***\n+***'


# --- look-alikes -------------------------------------------------------------------

SHA1 = rand(HEX, 40)
DNA = rand(HEX, 64)
LOOK_ALIKES = [
    "8.8.8.8",
    "1.1.1.1",
    "52.94.236.248",
    "172.32.0.1",
    "192.169.1.1",
    "100.128.0.1",
    "127.0.0.1",
    "localhost:8080",
    "2.11.0+cu129",
    "v1.2.3-rc1",
    "550.54.15",
    "96.00.89.00.01",
    "3f2b8c1e-9a4d-4b6e-8c2f-1a2b3c4d5e6f",
    "GPU-3f2b8c1e-9a4d-4b6e-8c2f-1a2b3c4d5e6f",
    "/data/imagenet",
    "/usr/local/lib/python3.11/site-packages",
    "~/.local/bin",
    "NCCL_DEBUG=INFO",
    "--lr 3e-4",
    "TOKENIZERS_PARALLELISM=false",
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
    "CUBLAS_WORKSPACE_CONFIG=:4096:8",
    "gpu-01.example.com",
    "https://github.com/org/repo.git",
    "git@github.com:org/api-keys.git",
    "ssh://git@gitlab.com/ml/vit.git",
    "https://huggingface.co/meta-llama/Llama-3.1-8B",
    f"Merge commit {SHA1} into main",
    f"sha256:{DNA}",
    f"blake3:{DNA}",
    "vit_base_a7f3b2c9d1e4_best.pth",
    "pip install scikit-learn; sk-learn is not a key",
    "task-1234567890abcdefghijklmnop",
    "pad_token: <pad>",
    "max_tokens: 4096",
    "eos_token=</s>",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN=1",
    "from google.protobuf.internal import builder",
    "self._state = threading.local()",
    "config.local.yaml",
    "hf_hub_download(repo_id)",
    "NVIDIA H200 141GB HBM3e",
    "Intel(R) Xeon(R) Platinum 8480+",
]


def test_look_alike_list_is_large() -> None:
    assert len(LOOK_ALIKES) >= 20


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alike_survives_text(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/srv/nobody-here")
    assert redact_text(text) == text


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alike_survives_tree(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/srv/nobody-here")
    tree = {"collection": {"notes": [text]}, "runtime": {"detail": text}}
    out, paths = redact_tree(tree)
    assert out == tree
    assert paths == []


# --- internal addresses, hosts, paths ----------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10.0.0.7", "<internal-address>"),
        ("MASTER_ADDR=10.12.3.4", "MASTER_ADDR=<internal-address>"),
        ("ray://10.1.2.3:10001", "ray://<internal-address>:10001"),
        ("172.16.0.1 172.31.255.254", "<internal-address> <internal-address>"),
        ("192.168.1.20:6379", "<internal-address>:6379"),
        ("100.64.0.1 and 100.127.3.4", "<internal-address> and <internal-address>"),
        ("169.254.169.254", "<internal-address>"),
        ("fd12:3456:789a::1", "<internal-address>"),
        ("[fc00::1]:8080", "[<internal-address>]:8080"),
        ("fe80::1%eth0", "<internal-address>"),
        ("metadata.google.internal", "<internal-host>"),
        ("ip-10-0-0-1.ec2.internal:8265", "<internal-host>:8265"),
        ("db.corp", "<internal-host>"),
        ("gpu-node-01.cluster.local", "<internal-host>"),
        ("nas.lan", "<internal-host>"),
        ("/home/alice/proj/train.py", "<HOME>/proj/train.py"),
        ("/lustre/home/bob/ckpt/", "<HOME>/ckpt/"),
        ("/Users/carol/Downloads", "<HOME>/Downloads"),
        ("cd /home/alice", "cd <HOME>"),
        ("PATH=/home/a/bin:/home/b/.local/bin", "PATH=<HOME>/bin:<HOME>/.local/bin"),
        ("file:///home/alice/data", "file://<HOME>/data"),
        ("C:\\Users\\alice\\runs", "<HOME>\\runs"),
    ],
)
def test_private_details(text: str, expected: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/srv/nobody-here")
    assert redact_text(text) == expected


def test_current_home_is_redacted_and_root_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/srv/users/alice")
    assert redact_text("/srv/users/alice/proj") == "~/proj"
    assert redact_text("/srv/users/alicebob/proj") == "/srv/users/alicebob/proj"
    assert redact_text("/root/.cache/torch") == "/root/.cache/torch"
    monkeypatch.setenv("HOME", "/root")
    assert redact_text("/root/.cache/torch") == "~/.cache/torch"
    assert redact_text("/rootfs/x") == "/rootfs/x"


def test_url_path_under_home_is_not_a_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/srv/nobody-here")
    text = "https://example.com/home/alice/readme"
    assert redact_text(text) == text


# --- names -------------------------------------------------------------------------

HEX40 = rand(HEX, 40)
RANDOM_KEY = rand(ALNUM, 32)


@pytest.mark.parametrize(
    "name",
    [
        "WANDB_API_KEY",
        "NGC_API_KEY",
        "openai_apikey",
        "HF_TOKEN",
        "HUGGING_FACE_HUB_TOKEN",
        "GITHUB_TOKEN",
        "AWS_SESSION_TOKEN",
        "AWS_SECRET_ACCESS_KEY",
        "aws_secret_access_key",
        "CLIENT_SECRET",
        "DB_PASSWORD",
        "PGPASSWORD",
        "MYSQL_PWD",
        "RAY_REDIS_PASSWD",
        "db-password",
        "wandb.api_key",
        "apiKey",
        "accessToken",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "ACCESS_KEY",
        "SECRET_KEY",
        "SSH_PRIVATE_KEY",
        "OPENAI_KEY",
        "token",
        "passphrase",
        "auth",
        "auths",
        "Authorization",
        "client-key-data",
        "session",
        "SESSION_ID",
        "browser_session_token",
        "session_cookie",
        "COOKIE",
        "ci_creds",
        "identitytoken",
        "refresh-token",
    ],
)
def test_secret_named_value_is_hidden(name: str) -> None:
    for value in (HEX40, RANDOM_KEY):
        out = redact_named(name, value)
        assert out == value[:4] + REDACTED_MARK
        assert value[4:] not in out


def test_wandb_key_by_name_but_commit_kept() -> None:
    assert redact_named("WANDB_API_KEY", HEX40) == HEX40[:4] + REDACTED_MARK
    tree = {"code": {"repo": {"commit": HEX40}}}
    out, paths = redact_tree(tree)
    assert out == tree
    assert paths == []


def test_short_password_is_hidden_whatever_its_shape() -> None:
    assert redact_named("DB_PASSWORD", "hunter22") == "***"  # short: no prefix shown
    assert redact_named("DB_PASSWORD", "1234") == "***"


def test_known_shape_under_secret_name_keeps_its_prefix() -> None:
    token = "hf_" + rand(ALNUM, 34)
    assert redact_named("HF_TOKEN", token) == "hf_***"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("NCCL_DEBUG", "INFO"),
        ("CUDA_VISIBLE_DEVICES", "0,1,2,3"),
        ("TOKENIZERS_PARALLELISM", "false"),
        ("pad_token", "<pad>"),
        ("eos_token", "</s>"),
        ("max_tokens", "4096"),
        ("sort_key", "created_at"),
        ("cache_key", "model_v2_imagenet_1k"),
        ("HF_TOKEN_PATH", "/data/tokens/hf"),
        ("monkey", "banana"),
        ("HF_HUB_DISABLE_IMPLICIT_TOKEN", "1"),
        ("use_auth_token", "true"),
        ("HF_TOKEN", ""),
        ("HF_TOKEN", "$HF_TOKEN_FROM_VAULT"),
        ("author", "alice"),
        ("tmux_session", "train-01"),
        ("cookiecutter_template", "gh:org/ml-template"),
        ("auth_type", "basic"),
        ("client-certificate-data", "LS0tLS1CRUdJTi"),
        ("oauth_scopes", "read,write"),
    ],
)
def test_ordinary_names_keep_their_value(name: str, value: str) -> None:
    assert redact_named(name, value) == value


def test_key_name_needs_a_secret_shaped_value() -> None:
    assert redact_named("SORT_KEY", "created_at") == "created_at"
    assert redact_named("STRIPE_KEY", RANDOM_KEY) == RANDOM_KEY[:4] + REDACTED_MARK


def test_ordinary_name_still_gets_shape_rules() -> None:
    assert redact_named("MASTER_ADDR", "10.0.0.5") == "<internal-address>"
    token = "ghp_" + rand(ALNUM, 36)
    assert redact_named("NOTE", f"use {token}") == "use ghp_***"


@pytest.mark.parametrize(
    "line",
    [
        "export WANDB_API_KEY={v}",
        "+export WANDB_API_KEY={v}",
        "WANDB_API_KEY: {v}",
        'wandb_api_key = "{v}"',
        '{{"wandb_api_key": "{v}"}}',
        "  db_password: '{v}'",
        'os.environ["WANDB_API_KEY"] = "{v}"',
        "docker run -e HF_TOKEN={v} img",
        "python train.py --db-password {v} --lr 3e-4",
        "python train.py --wandb-api-key={v}",
        "https://example.com/cb?access_token={v}&state=1",
        "aws_secret_access_key = {v}",
        "machine api.wandb.ai\n  login user\n  password {v}",
    ],
)
def test_secret_named_assignment_in_free_text(line: str) -> None:
    out = redact_text(line.format(v=HEX40))
    assert HEX40 not in out
    assert HEX40[4:] not in out
    assert REDACTED_MARK in out


def test_assignments_with_ordinary_names_are_untouched() -> None:
    text = "NCCL_DEBUG=INFO max_tokens: 4096 pad_token: '<pad>' --tokenizer gpt2"
    assert redact_text(text) == text


def test_patch_with_secret_exports() -> None:
    patch = (
        "diff --git a/env.sh b/env.sh\n"
        "--- a/env.sh\n"
        "+++ b/env.sh\n"
        "@@ -1 +1,4 @@\n"
        f"-# pinned to {SHA1}\n"
        f"+export WANDB_API_KEY={HEX40}\n"
        "+export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
        "+export NCCL_DEBUG=INFO\n"
    )
    out = redact_text(patch)
    assert f"+export WANDB_API_KEY={HEX40[:4]}***\n" in out
    assert "+export AWS_SECRET_ACCESS_KEY=wJal***\n" in out
    assert "+export NCCL_DEBUG=INFO\n" in out
    assert f"-# pinned to {SHA1}\n" in out  # a bare SHA is not a secret


# --- argv --------------------------------------------------------------------------


def test_argv_secret_flags() -> None:
    argv = ["train.py", "--api-key", "X123456789", "--db-password=hunter22"]
    before = list(argv)
    assert redact_argv(argv) == ["train.py", "--api-key", "***", "--db-password=***"]
    assert argv == before


def test_argv_more_flags() -> None:
    argv = [
        "torchrun",
        "--hf_token",
        "abcdefgh",
        "--wandb-key",
        HEX40,
        "--use-auth-token",
        "--model",
        "vit_base",
        "--lr",
        "3e-4",
        "db.password=hunter22",
        "--output-dir",
        "/home/alice/runs",
    ]
    assert redact_argv(argv) == [
        "torchrun",
        "--hf_token",
        "***",
        "--wandb-key",
        HEX40[:4] + REDACTED_MARK,
        "--use-auth-token",
        "--model",
        "vit_base",
        "--lr",
        "3e-4",
        "db.password=***",
        "--output-dir",
        "<HOME>/runs",
    ]


# --- trees -------------------------------------------------------------------------


def _manifest() -> dict[str, Any]:
    return {
        "run_id": "3f2b8c1e-9a4d-4b6e-8c2f-1a2b3c4d5e6f",
        "command": {
            "argv": ["python", "train.py", "--api-key", "X123456789", "--lr", "3e-4"],
            "cwd": "/home/alice/proj",
        },
        "code": {
            "main": {
                "commit": HEX40,
                "remote": "https://oauth2:glpat-abcdefghij1234567890@gitlab.example.com/x.git",
                "patch": {"digest": f"blake3:{DNA}", "size": 10, "text": "+HF_TOKEN=abc\n"},
                "submodules": [{"path": "apex", "commit": SHA1, "secret_commit": SHA1}],
            }
        },
        "config": {
            "resolved_args": {"lr": 3e-4, "epochs": 300, "api_keys": [RANDOM_KEY, ""]},
            "selected_env": {"WANDB_API_KEY": HEX40, "NCCL_DEBUG": "INFO"},
        },
        "environment": {
            "packages": {"torch": "2.11.0+cu129", "tensorrt": "10.3.0.26"},
            "packages_digest": f"blake3:{DNA}",
            "secret_digest": DNA,
        },
        "runtime": {
            "nodes": [
                {"role": "head", "addresses": ["10.0.0.1", "8.8.8.8"]},
                {"role": "worker", "addresses": [["192.168.0.2"]], "ok": True, "n": None},
            ],
            "head": "10.3.0.26",
        },
        "dna": {"version": 1, "value": DNA, "sections": {"code": "/home/alice/not-redacted"}},
    }


def test_tree_paths_and_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/srv/nobody-here")
    tree = _manifest()
    original = copy.deepcopy(tree)
    out, paths = redact_tree(tree)
    assert tree == original  # input untouched
    assert paths == [
        "code.main.patch.text",
        "code.main.remote",
        "command.argv.3",
        "command.cwd",
        "config.resolved_args.api_keys.0",
        "config.selected_env.WANDB_API_KEY",
        "runtime.head",
        "runtime.nodes.0.addresses.0",
        "runtime.nodes.1.addresses.0.0",
    ]
    assert out["command"]["argv"] == ["python", "train.py", "--api-key", "***", "--lr", "3e-4"]
    assert out["command"]["cwd"] == "<HOME>/proj"
    assert out["code"]["main"]["remote"] == "https://***@gitlab.example.com/x.git"
    assert out["code"]["main"]["patch"]["text"] == "+HF_TOKEN=***\n"
    assert out["code"]["main"]["submodules"] == original["code"]["main"]["submodules"]
    assert out["config"]["selected_env"] == {
        "WANDB_API_KEY": HEX40[:4] + "***",
        "NCCL_DEBUG": "INFO",
    }
    assert out["config"]["resolved_args"] == {
        "lr": 3e-4,
        "epochs": 300,
        "api_keys": [RANDOM_KEY[:4] + "***", ""],
    }
    assert out["environment"] == original["environment"]  # versions and digests exempt
    assert out["runtime"]["nodes"][0]["addresses"] == ["<internal-address>", "8.8.8.8"]
    assert out["runtime"]["nodes"][1] == {
        "role": "worker",
        "addresses": [["<internal-address>"]],
        "ok": True,
        "n": None,
    }
    assert out["runtime"]["head"] == "<internal-address>"  # not a version under this key
    assert out["dna"] == original["dna"]


def test_tree_returns_new_containers() -> None:
    tree = _manifest()
    out, _ = redact_tree(tree)
    out["dna"]["sections"]["code"] = "changed"
    out["runtime"]["nodes"][0]["addresses"].append("x")
    assert tree["dna"]["sections"]["code"] == "/home/alice/not-redacted"
    assert tree["runtime"]["nodes"][0]["addresses"] == ["10.0.0.1", "8.8.8.8"]


def test_tree_keys_are_not_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/srv/nobody-here")
    tree = {"config": {"config_files": {"/home/alice/cfg.yaml": f"blake3:{DNA}"}}}
    out, paths = redact_tree(tree)
    assert out == tree
    assert paths == []


def test_tree_with_path_prefix() -> None:
    out, paths = redact_tree({"HF_TOKEN": "abcdefgh", "x": ["10.0.0.1"]}, "config.selected_env")
    assert out == {"HF_TOKEN": "***", "x": ["<internal-address>"]}
    assert paths == ["config.selected_env.HF_TOKEN", "config.selected_env.x.0"]


def test_tree_scalars_pass_through() -> None:
    tree = {"a": 1, "b": 2.5, "c": None, "d": False, "e": [1, None, True]}
    out, paths = redact_tree(tree)
    assert out == tree
    assert paths == []


def test_tree_redaction_is_idempotent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/srv/nobody-here")
    once, _ = redact_tree(_manifest())
    twice, paths = redact_tree(once)
    assert twice == once
    assert paths == []


@pytest.mark.parametrize("masked", ["hf_***", "sk-proj-***", "abcd***", "***", "AKIA***"])
def test_masked_values_stay_as_they_are(masked: str) -> None:
    assert redact_named("HF_TOKEN", masked) == masked
    assert redact_text(f"export WANDB_API_KEY={masked}") == f"export WANDB_API_KEY={masked}"


def test_numeric_secrets_under_secret_names_are_hidden() -> None:
    tree = {
        "config": {
            "resolved_args": {
                "db_password": 12345678,
                "lr": 0.1,
                "seed": 7,
                "smtp_pass": "4.5x",
                "num_pass": 2,
                "use_token": True,
            }
        }
    }
    out, paths = redact_tree(tree)
    args = out["config"]["resolved_args"]
    assert args["db_password"] == "***" and args["smtp_pass"] == "***"
    assert args["lr"] == 0.1 and args["seed"] == 7 and args["use_token"] is True
    # a short `*_PASS` name counts passes when its value is a number (`--num-pass 2`)
    assert args["num_pass"] == 2
    assert paths == ["config.resolved_args.db_password", "config.resolved_args.smtp_pass"]
