"""Redaction v3 end to end: each credential shape planted in each of 16 places a run records,
through the real collectors on a real git repository, then looked for in everything the
store's object directory, its SQLite index and the web view hold. Look-alikes planted the
same way come back unchanged.

The places: argv, ``--opt VALUE``, a Hydra override, a whitelisted environment variable, a
dirty tracked file, an untracked file, a notebook, a shell script, YAML, JSON, TOML, INI and
``.py`` config files, the ``track(args)`` dict, the git remote and the working directory's
path. A URL cannot be a directory name (``//`` collapses), so a URL shape is planted in the
working directory as its credential under a name that says so (``--amqp-password=...``), and
a shape that is no URL has no git remote of its own (the remote is a URL).

Every shape goes into one run (and every look-alike into another): each place holds all of
them at once, each under its own name (``--note3``, ``SLURM_NOTE_3``, ``note3 =``) or on its
own line, so the whole corpus costs two recordings, not one per shape. A URL shape's remote
is a copy of the run's repository with that remote, recorded as one more repository.
"""

from __future__ import annotations

import base64
import json
import random
import re
import shlex
import shutil
import sqlite3
import string
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from expdna.api import collect
from expdna.manifest.model import Manifest
from expdna.store import SQLITE_NAME, Store
from expdna.store.config import StoreConfig
from tests.factories import git
from tests.secret_scan import produced_files, scan

with warnings.catch_warnings():  # Starlette 1.x asks for httpx2 behind its test client
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx`")

ALNUM = string.ascii_letters + string.digits
HEX = "0123456789abcdef"


def _rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


@dataclass(frozen=True)
class Planted:
    """One shape, made: the ``line`` it is written as, the ``secret`` in it that must go,
    a ``url`` when the shape is one, and a ``word`` for a directory name."""

    line: str
    secret: str
    url: str | None = None
    word: str | None = None


def _pw(rng: random.Random) -> str:
    # word-like, not random enough for the entropy backstop: only its context says secret
    return "Hunter" + _rand(rng, string.digits, 2) + _rand(rng, string.ascii_lowercase, 6)


def _url(line: str, secret: str, credential: str) -> Planted:
    return Planted(line, secret, url=line, word=f"{credential}")


SHAPES: dict[str, Callable[[random.Random], Planted]] = {
    "url-password-hash": lambda r: (
        lambda p: _url(f"amqp://worker:{p}@mq.example.com:5672/jobs", p, f"--amqp-password={p}")
    )("gu3st#" + _rand(r, ALNUM, 8)),
    "url-password-at": lambda r: (
        lambda p: _url(f"mongodb+srv://admin:{p}@cluster0.example.net/db", p, f"MONGO_PASSWORD={p}")
    )("p@ss" + _rand(r, ALNUM, 8)),
    "url-password-slash": lambda r: (
        lambda p: _url(f"mysql://root:{p}@db.example.com/app", p, f"--db-pw={p}".replace("/", "_"))
    )("pa/ss" + _rand(r, ALNUM, 8)),
    "azure-sas": lambda r: (
        lambda s: _url(
            f"https://acct.blob.core.windows.net/c/b.bin?sv=2022-11-02&sr=b&sig={s}%3D",
            s,
            f"SAS_TOKEN={s}",
        )
    )(_rand(r, ALNUM, 43)),
    "s3-presigned": lambda r: (
        lambda s: _url(
            "https://b.s3.amazonaws.com/k.bin?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            f"&X-Amz-Signature={s}",
            s,
            f"X-Amz-Signature={s}",
        )
    )(_rand(r, HEX, 64)),
    "wandb-login": lambda r: (lambda k: Planted(f"wandb login {k}", k, word=f"wandb login {k}"))(
        _rand(r, HEX, 40)
    ),
    "wandb-name": lambda r: (lambda k: Planted(f"WANDB={k}", k, word=f"WANDB={k}"))(
        _rand(r, HEX, 40)
    ),
    "curl-u": lambda r: (
        lambda p: Planted(f"curl -u bob:{p} https://api.example.com/v1", p, word=f"curl -u bob:{p}")
    )(_pw(r)),
    "curl-user": lambda r: (
        lambda p: Planted(
            f"curl --user bob:{p} https://api.example.com", p, word=f"curl --user bob:{p}"
        )
    )(_pw(r)),
    "mysql-p": lambda r: (
        lambda p: Planted(f"mysql -h db -u root -p{p} app", p, word=f"mysql -u root -p{p}")
    )(_pw(r)),
    "db-pw": lambda r: (lambda p: Planted(f"--db-pw {p}", p, word=f"--db-pw {p}"))(_pw(r)),
    "ray-redis-pw": lambda r: (lambda p: Planted(f"RAY_REDIS_PW={p}", p, word=f"RAY_REDIS_PW={p}"))(
        _pw(r)
    ),
    "docker-login": lambda r: (
        lambda p: Planted(
            f"docker login -u ci -p {p} registry.example.com", p, word=f"docker login -p {p}"
        )
    )(_pw(r)),
    "json-in-a-string": lambda r: (
        lambda a: Planted(
            json.dumps({"auths": {"registry.example.com": {"auth": a}}}),
            a,
            word=json.dumps({"auth": a}),
        )
    )(base64.b64encode(f"ci:{_pw(r)}".encode()).decode().replace("/", "A")),
    "bare-token": lambda r: (lambda t: Planted(f"remember {t} for the mirror", t, word=t))(
        _rand(r, string.ascii_uppercase, 4) + _rand(r, ALNUM, 20) + _rand(r, string.digits, 4)
    ),
    "gcs-signature": lambda r: (
        lambda s: _url(
            "https://storage.googleapis.com/b/k.bin?X-Goog-Algorithm=GOOG4-RSA-SHA256"
            f"&X-Goog-Signature={s}",
            s,
            f"X-Goog-Signature={s}",
        )
    )(_rand(r, HEX, 128)),
    "cloudfront-signature": lambda r: (
        lambda s: _url(
            f"https://d111.cloudfront.net/k.bin?Expires=1700000000&Signature={s}"
            "&Key-Pair-Id=K2JCJMDEHXQW5F",
            s,
            f"CDN_SIGNATURE={s}",
        )
    )(_rand(r, ALNUM, 30) + "~" + _rand(r, ALNUM, 9)),
    "url-access-token": lambda r: (
        lambda t: _url(f"https://api.example.com/cb?state=1&access_token={t}", t, f"TOKEN={t}")
    )(_rand(r, ALNUM, 24)),
    "psql-uri": lambda r: (
        lambda p: Planted(
            f"psql postgresql://trainer:{p}@db.example.com:5432/runs",
            p,
            url=f"postgresql://trainer:{p}@db.example.com:5432/runs",
            word=f"PGPASSWORD={p}",
        )
    )(_pw(r)),
    "hf-login": lambda r: (
        lambda t: Planted(f"huggingface-cli login --token hf_{t}", t, word=f"--token hf_{t}")
    )(_rand(r, ALNUM, 34)),
    "smtp-pass": lambda r: (lambda p: Planted(f"SMTP_PASS={p}", p, word=f"SMTP_PASS={p}"))(_pw(r)),
    "passwd-flag": lambda r: (lambda p: Planted(f"--passwd {p}", p, word=f"--passwd {p}"))(_pw(r)),
    "yaml-in-a-string": lambda r: (
        lambda p: Planted(
            f"registry:\n  credentials:\n    user: ci\n    value: {p}\n",
            p,
            word=f"credentials.value={p}",
        )
    )(_pw(r)),
    "toml-in-a-string": lambda r: (
        lambda p: Planted(
            f'[registry.credentials]\nuser = "ci"\nvalue = "{p}"\n',
            p,
            word=f"credentials.value={p}",
        )
    )(_pw(r)),
}


# --- one run, planted in every place --------------------------------------------------------


def _toml_string(text: str) -> str:
    return json.dumps(text)  # a TOML basic string escapes as JSON does


@dataclass(frozen=True)
class Run:
    manifest: Manifest
    argv: list[str]
    cwd: str
    files: dict[str, str]  # config file name -> its text


def _commented(line: str) -> str:
    return "".join(f"# {part}\n" for part in line.split("\n"))


def _words(line: str) -> list[str]:
    # a document (JSON, YAML, TOML) is one argument, as a shell passes it quoted
    return [line] if line.startswith(("{", "[")) or "\n" in line else shlex.split(line)


def plant(root: Path, lines: list[str], urls: list[str], words: list[str]) -> Run:
    """A repository and a run with each of ``lines`` in each of the 16 places; each of
    ``urls`` the remote of one more repository; ``words`` the working directory's parts."""
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "train.py").write_text("import sys\nprint(sys.argv)\n")
    git(repo, "add", "train.py")
    git(repo, "commit", "-q", "-m", "train")
    remotes = []
    for i, url in enumerate(urls):  # a copy with another remote: no git process to make it
        copy = root / f"remote{i}"
        shutil.copytree(repo, copy)
        with (copy / ".git" / "config").open("a") as f:
            f.write(f'[remote "origin"]\n\turl = {url}\n')
        remotes.append(copy)
    with (repo / ".git" / "config").open("a") as f:
        f.write('[remote "origin"]\n\turl = https://github.com/example/vit.git\n')
    with (repo / "train.py").open("a") as f:  # dirty tracked file
        f.writelines(_commented(line) for line in lines)
    (repo / "notes.txt").write_text("".join(f"{line}\n" for line in lines))  # untracked
    cells = [
        {"cell_type": "code", "metadata": {}, "outputs": [], "source": [f"!{line}\n"]}
        for line in lines
    ]
    notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (repo / "analysis.ipynb").write_text(json.dumps(notebook, indent=1))
    (repo / "launch.sh").write_text("#!/bin/sh\nset -e\n" + "".join(f"{x}\n" for x in lines))
    configs = repo / "configs"
    configs.mkdir()
    numbered = list(enumerate(lines))
    files = {
        "run.yaml": "".join(f"note{i}: {json.dumps(x)}\n" for i, x in numbered) + "lr: 0.1\n",
        "run.json": json.dumps({**{f"note{i}": x for i, x in numbered}, "lr": 0.1}, indent=2)
        + "\n",
        "run.toml": "".join(f"note{i} = {_toml_string(x)}\n" for i, x in numbered) + "lr = 0.1\n",
        "run.ini": "[run]\n"
        + "".join(f"note{i} = {json.dumps(x)}\n" for i, x in numbered)
        + "lr = 0.1\n",
        "extra.py": "".join(f"note{i} = {x!r}\n" for i, x in numbered) + "lr = 0.1\n",
    }
    for name, text in files.items():
        (configs / name).write_text(text)
    cwd = root.joinpath("work", *(w.replace("/", "_") for w in words))
    cwd.mkdir(parents=True)
    argv = ["python", str(repo / "train.py"), *[str(configs / name) for name in files]]
    for i, line in numbered:
        # `&&` ends a command: a command's credential form (`curl -u`) reads no further
        argv += [*_words(line), f"--note{i}", line, f"+extra.note{i}={line}", "&&"]
    manifest = collect(
        argv,
        cwd=cwd,
        repos=[repo, *remotes],
        environ={"PATH": "/usr/bin:/bin", **{f"SLURM_NOTE_{i}": x for i, x in numbered}},
        collectors=["command", "config", "config_files", "git"],
        resolved_args={**{f"note{i}": x for i, x in numbered}, "lr": 0.1},  # `track(args)`
        use_cache=False,
    )
    return Run(manifest, argv, str(cwd), files)


def held(manifest: Manifest, store_root: Path) -> Iterator[tuple[str, str]]:
    """Everything the store, its index and the web view hold after recording ``manifest``:
    (where, text) pairs."""
    with Store.open(store_root) as store:
        store.record(manifest)
    for path in sorted(store_root.rglob("*")):
        if path.is_file() and not path.name.startswith(SQLITE_NAME):
            yield str(path), path.read_bytes().decode("utf-8", "replace")
    db = sqlite3.connect(store_root / SQLITE_NAME)
    try:
        yield "index", "\n".join(db.iterdump())
    finally:
        db.close()
    from expdna.ui.app import create_app

    ref = manifest.run_id
    with TestClient(
        create_app(StoreConfig(path=store_root)), base_url="http://localhost"
    ) as client:
        for url in ("/", f"/runs/{ref}", f"/api/runs/{ref}", f"/api/runs/{ref}/manifest"):
            page = client.get(url)
            assert page.status_code == 200, (url, page.text[:300])
            yield url, page.text


def variants(secret: str) -> set[str]:
    """``secret`` as it is written raw, in JSON, in HTML and URL-quoted."""
    from html import escape
    from urllib.parse import quote

    forms = {secret, json.dumps(secret)[1:-1], escape(secret), quote(secret, safe="")}
    return {f for f in forms if len(f) >= 6}


SETTINGS = settings(
    max_examples=1,
    deadline=None,
    derandomize=True,
    phases=(Phase.generate,),  # a failure names its shape and line: no shrinking needed
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@SETTINGS
@given(seed=st.integers(0, 2**32 - 1))
def test_a_planted_secret_is_nowhere(seed: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    rng = random.Random(seed)
    # documents last: a TOML table or a YAML block in a shell script or a note runs to the
    # end of its file, and would hide the shapes after it by a rule of its own
    order = sorted(SHAPES, key=lambda shape: (shape.endswith("-in-a-string"), shape))
    planted = {shape: SHAPES[shape](rng) for shape in order}
    # The planted inputs (a `run.json` holding the secret) live outside pytest's temporary
    # directory, which the session-end detect-secrets scan reads: only the store is there.
    with tempfile.TemporaryDirectory() as inputs:
        manifest = plant(
            Path(inputs),
            [p.line for p in planted.values()],
            [p.url for p in planted.values() if p.url is not None],
            [p.word or "plain" for p in planted.values()],
        ).manifest
    doc = manifest.model_dump(mode="json")
    store = tmp_path_factory.mktemp("plant") / "store"
    texts = list(held(manifest, store))
    leaks = [
        (shape, where, form)
        for shape, p in planted.items()
        for where, text in texts
        for form in variants(p.secret)
        if form in text
    ]
    assert leaks == [], leaks[:10]
    # and the places looked in hold the run: its row in the index, its page, its manifest
    where = dict(texts)
    assert manifest.run_id in where["index"]
    assert manifest.run_id in where[f"/runs/{manifest.run_id}"]
    assert "SLURM_NOTE_0" in where[f"/api/runs/{manifest.run_id}/manifest"]
    # every place was collected: the configs, the patch with its three untracked files,
    # every remote, one variable and one resolved argument a shape
    assert len(doc["config"]["config_files"]) == 5
    repos = list(doc["code"].values())
    assert len(repos) == 1 + sum(p.url is not None for p in planted.values())
    patch = next(r["patch"]["text"] for r in repos if r.get("patch"))
    for name in ("notes.txt", "analysis.ipynb", "launch.sh", "train.py"):
        assert f"b/{name}" in patch
    # the redacted notebook is still a notebook: every cell, every source line's escapes
    added = patch.split("+++ b/analysis.ipynb\n", 1)[1].split("\ndiff --git ", 1)[0]
    notebook = json.loads("\n".join(x[1:] for x in added.split("\n") if x.startswith("+")))
    assert len(notebook["cells"]) == len(SHAPES)
    assert all(cell["source"][0].endswith("\n") for cell in notebook["cells"])
    assert len([k for k in doc["config"]["selected_env"] if k.startswith("SLURM_NOTE_")]) == len(
        SHAPES
    )
    # and the second opinion, here rather than only at the session's end: detect-secrets
    # over the store's objects and manifests finds nothing
    assert scan(produced_files(store)) == []


# --- look-alikes ---------------------------------------------------------------------------

_MD5 = "5d41402abc4b2a76b9719d911017c592"
LOOK_ALIKES = {
    "requirement-pin": "tensorrt==10.3.0.26",
    "attribute-access": "if args.local: self.internal = True",
    "run-name": "--run-name sk-resnet50-imagenet-finetune-v2",
    "numeric-pass": "--num-pass 2",
    "boolean-pass": "single_pass: true",
    "expected-md5": f"--expected-md5 {_MD5}",
    "mlflow-run-id": "--mlflow-run-id 8f14e45fceea167a5a36dedd4bea2543",
    "blake2b-checksum": "--blake2b-checksum " + "c3" * 10 + "9f4a1b7e" * 13 + "d2" * 2,
    "pod-name": "kubectl logs trainer-7d9f8b6c5d-x2k4p",
    "ray-job-id": "ray job logs raysubmit_H2ZbjPd1Jm8hKyB4",
    "cache-key": f"cache key {_MD5}",
    "tool-call-token": "tool_call_token: <tool_call>",
}


def test_a_look_alike_survives_in_every_place() -> None:
    lines = [LOOK_ALIKES[name] for name in sorted(LOOK_ALIKES)]
    # outside pytest's temporary directory: detect-secrets flags 32-hex cache keys and
    # digests, which must stay, so the session-end scan is not where they belong
    # in a remote, a look-alike is a repository's path (`.../--num-pass/2.git`)
    slugs = [re.sub(r"[^\w.=/-]+", "-", line.replace(" ", "/")) for line in lines]
    remotes = [f"https://github.com/example/{slug}.git" for slug in slugs]
    with tempfile.TemporaryDirectory() as inputs:
        run = plant(Path(inputs), lines, remotes, lines)
        doc = run.manifest.model_dump(mode="json")
        stored = dict(held(run.manifest, Path(inputs) / "store"))
    assert doc["command"]["argv"] == run.argv
    assert doc["command"]["cwd"] == run.cwd
    for i, line in enumerate(lines):
        assert doc["config"]["selected_env"][f"SLURM_NOTE_{i}"] == line
        assert doc["config"]["resolved_args"][f"note{i}"] == line
    repo = doc["code"]["repo"]
    assert repo["remote"] == "https://github.com/example/vit.git"
    assert sorted(r["remote"] for name, r in doc["code"].items() if name != "repo") == sorted(
        remotes
    )
    patch = repo["patch"]["text"]
    for line in lines:
        for written in (f"+# {line}\n", f"+{line}\n", json.dumps(f"!{line}\n")):
            assert written in patch, (written, patch)
    texts = {d["name"]: d["text"] for d in doc["config"]["config_file_details"].values()}
    assert texts == run.files
    assert not [p for p in doc["collection"]["redacted"] if p.startswith(("command", "config"))]
    # what the store and the web view hold is that manifest, look-alikes and all
    api = json.loads(stored[f"/api/runs/{run.manifest.run_id}/manifest"])
    served = api.get("manifest", api)
    assert served["command"]["argv"] == run.argv
    assert served["config"]["resolved_args"] == doc["config"]["resolved_args"]
    page = stored[f"/runs/{run.manifest.run_id}"]
    for line in lines:
        assert any(form in page for form in variants(line)), line
