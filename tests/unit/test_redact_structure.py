"""Patches read as the files they change, and config formats read as structure."""

from __future__ import annotations

import base64
import json
import random
import string
import subprocess
import tempfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from expdna.manifest.redact import REDACTED_MARK, redact_argv, redact_text, redact_tree
from tests.factories import git

_RNG = random.Random(14)
ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def rand(alphabet: str, n: int) -> str:
    return "".join(_RNG.choice(alphabet) for _ in range(n)) + "7"


PASSWORD = "Xq" + rand(ALNUM, 14)
DOCKER_AUTH = base64.b64encode(f"ci-bot:{PASSWORD}".encode()).decode()
TELEGRAM = "7012345678:AA" + rand(ALNUM + "_-", 32)
KUBE_TOKEN = rand(ALNUM, 40)
KEY_DATA = base64.b64encode(rand(ALNUM, 90).encode()).decode()
AWS_SECRET = rand(ALNUM + "/+", 39)
AGE_KEY = "AGE-SECRET-KEY-1" + "".join(
    _RNG.choice("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L") for _ in range(58)
)
KAGGLE = rand(HEX, 31)
PEM_LINES = [rand(ALNUM + "+/", 63) for _ in range(3)]

FILES: dict[str, str] = {
    ".netrc": f"machine api.wandb.ai\n  login user\n  password {PASSWORD}\n",
    "docker/config.json": json.dumps(
        {"auths": {"registry.example.com": {"auth": DOCKER_AUTH}}, "credsStore": "desktop"},
        indent=2,
    )
    + "\n",
    "settings.py": f'DEBUG = False\nTELEGRAM_BOT = "{TELEGRAM}"\nBATCH_SIZE = 64\n',
    "kubeconfig.yaml": (
        "apiVersion: v1\nusers:\n- name: trainer\n  user:\n"
        f"    token: {KUBE_TOKEN}\n    client-key-data: {KEY_DATA}\n"
        "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n"
    ),
    "aws/credentials": (
        f"[default]\naws_access_key_id = AKIA{rand(string.ascii_uppercase, 15)}\n"
        f"aws_secret_access_key = {AWS_SECRET}\nregion = us-east-1\n"
    ),
    ".env": f"WANDB_PROJECT=vit\nDB_PASSWORD={PASSWORD}\nAGE_KEY={AGE_KEY}\n",
    "train.yaml": (
        "model:\n  name: vit_base\n  depth: 12\nlogging:\n  credentials:\n"
        f"    user: ci-bot\n    secret: {PASSWORD}\n  project: vit\n"
        "deploy:\n  private_key: |\n    -----BEGIN OPENSSH PRIVATE KEY-----\n"
        + "".join(f"    {line}\n" for line in PEM_LINES)
        + "    -----END OPENSSH PRIVATE KEY-----\n  host: gpu-01.example.com\n"
    ),
    "pyproject.toml": (
        '[tool.trainer]\nlr = 0.001\n\n[tool.trainer.credentials]\nuser = "ci-bot"\n'
        f'password = "{PASSWORD}"\n\n[tool.other]\nname = "kept"\n'
    ),
    "kaggle.json": json.dumps({"username": "alice", "key": KAGGLE}) + "\n",
}
SECRETS = [PASSWORD, DOCKER_AUTH, TELEGRAM, KUBE_TOKEN, KEY_DATA, AWS_SECRET, AGE_KEY, KAGGLE]
SECRETS += PEM_LINES
KEPT = [
    "registry.example.com",
    '"credsStore": "desktop"',
    "BATCH_SIZE = 64",
    "client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t",
    "region = us-east-1",
    "WANDB_PROJECT=vit",
    "name: vit_base",
    "project: vit",
    "host: gpu-01.example.com",
    'name = "kept"',
    '"username": "alice"',
    "lr = 0.001",
]


def assert_clean(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} survived"
        assert secret[4:20] not in text, f"part of {secret!r} survived"


@pytest.mark.parametrize("name", list(FILES), ids=str)
def test_file_text(name: str) -> None:
    text = FILES[name]
    out = redact_text(text)
    assert_clean(out)
    assert REDACTED_MARK in out
    assert out.count("\n") == text.count("\n")
    for kept in KEPT:
        if kept in text:
            assert kept in out, (kept, out)


@pytest.fixture(params=["small", "large"])
def patched(request: pytest.FixtureRequest) -> Iterator[tuple[Path, str]]:
    """A real repository whose files gain every secret above in one patch.

    Outside pytest's temporary directory: its raw files hold the secrets on purpose, and
    the session-end detect-secrets scan reads every JSON file there.
    """
    with tempfile.TemporaryDirectory() as tmp:
        yield _patched(Path(tmp), large=request.param == "large")


def _patched(tmp_path: Path, *, large: bool) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for name in FILES:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text("# settings\n\nversion = 1\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "first")
    for name, text in FILES.items():
        (repo / name).write_text("# settings\n\n" + text + "version = 1\n")
    if large:  # over 32 KB: the path that reads only the lines holding a hint
        lines = (
            f"    loss_{i} = criterion(model(batch_{i}), target)  # step {i}" for i in range(900)
        )
        (repo / "train_loop.py").write_text("\n".join(lines) + "\n")
        git(repo, "add", "-N", "train_loop.py")
    return repo, git(repo, "diff") + "\n"


def test_patch_is_redacted_and_still_applies(patched: tuple[Path, str]) -> None:
    repo, patch = patched
    out = redact_text(patch)
    assert len(patch) > 32 * 1024 or len(patch) < 8 * 1024
    assert_clean(out)
    assert out.count("\n") == patch.count("\n")
    for kept in KEPT:
        assert kept in out, kept
    git(repo, "checkout", "-q", ".")
    git(repo, "rm", "-q", "--cached", "--ignore-unmatch", "train_loop.py")
    (repo / "train_loop.py").unlink(missing_ok=True)
    (repo.parent / "redacted.patch").write_text(out)
    subprocess.run(
        ["git", "apply", "--check", str(repo.parent / "redacted.patch")],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def test_netrc_password_on_a_context_line_is_redacted_too(patched: tuple[Path, str]) -> None:
    repo, _ = patched
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "secrets")
    (repo / ".netrc").write_text((repo / ".netrc").read_text() + "machine x\n")
    out = redact_text(git(repo, "diff"))
    assert f" password {REDACTED_MARK}" in out
    assert PASSWORD not in out


def png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    pixels = zlib.compress(bytes(_RNG.randrange(256) for _ in range(16 * 49)))
    header = (16).to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def test_notebook_with_an_embedded_image_keeps_it_and_applies(tmp_path: Path) -> None:
    repo = tmp_path / "nb"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    cell = {"cell_type": "code", "source": ["plt.plot(loss)"], "outputs": [], "metadata": {}}
    doc = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (repo / "eval.ipynb").write_text(json.dumps(doc, indent=1) + "\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "nb")
    image = base64.b64encode(png()).decode()
    cell["outputs"] = [{"output_type": "display_data", "data": {"image/png": image}}]
    (repo / "eval.ipynb").write_text(json.dumps(doc, indent=1) + "\n")
    patch = git(repo, "diff") + "\n"
    assert redact_text(patch) == patch
    git(repo, "checkout", "-q", ".")
    (tmp_path / "nb.patch").write_text(redact_text(patch))
    subprocess.run(["git", "apply", "--check", str(tmp_path / "nb.patch")], cwd=repo, check=True)


# --- the places that leaked in the independent corpus ------------------------------------


@pytest.mark.parametrize(
    "secret",
    [
        AGE_KEY,
        "ATATT3xFfGF0" + rand(ALNUM + "_-", 180),
        TELEGRAM,
        "shpat_" + rand(HEX, 31),
        "key-" + rand(HEX, 31),
        "dp.st.prd."[:6] + rand(ALNUM, 42),
        "HRKU-AA" + rand(ALNUM + "_-", 57),
    ],
)
def test_shapes_that_leaked_are_caught_under_any_name(secret: str) -> None:
    assert secret[8:] not in redact_text(f"see {secret}")
    assert secret[8:] not in redact_argv(["run", "--x", secret, f"--y={secret}"])[2]
    assert secret[8:] not in redact_argv(["run", f"--y={secret}"])[1]
    env, _ = redact_tree({"config": {"selected_env": {"SETTING": secret}}})
    assert secret[8:] not in json.dumps(env)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": {"b": {"c": {"client_secret": "plain words here"}}}}',
        "a:\n  b:\n    c:\n      password: plain words here\n",
        '[x.y]\nsession_cookie = "plain words here"\n',
        "deep:\n  creds:\n    - plain words here\n",
    ],
)
def test_secret_keys_at_any_depth_whatever_the_value(text: str) -> None:
    out = redact_text(text)
    assert "plain words here" not in out
    assert out.count("\n") == text.count("\n")


@pytest.mark.parametrize(
    "text",
    [
        '{"model": {"name": "vit_base_patch16_224", "tokenizer": "bert-base-uncased"}}',
        "optimizer:\n  name: adamw\n  betas: [0.9, 0.999]\n",
        "keys:\n  - id\n  - label\n",
        '[train]\nmax_tokens = 4096\npad_token = "<pad>"\nauthor = "alice"\n',
        "sort_key: created_at\ncache_key: model_v2_imagenet_1k\n",
    ],
)
def test_innocent_keys_keep_their_text(text: str) -> None:
    assert redact_text(text) == text
