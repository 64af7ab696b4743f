"""Property tests: a generated secret of every shape never survives, wherever it is put;
look-alikes never change."""

from __future__ import annotations

import json
import random
import uuid

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from expdna.manifest.redact import redact_argv, redact_text, redact_tree
from tests.unit.test_redact_tokens import SAMPLES

SENTENCE = (
    "the model was trained for epochs on eight GPUs with a cosine schedule and the loss "
    "went down steadily until warmup ended then it plateaued near the validation target"
)
WORDS = SENTENCE.split(" ")
PROSE = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)
NAMES = st.sampled_from(["SETTING", "remote", "endpoint_value", "TRAINER_OPT", "x"])
PLACES = ("prose", "argv", "argv=", "env", "json", "yaml", "ini", "diff", "diff-context")


def embed(place: str, name: str, secret: str, before: str, after: str) -> str:
    """``secret`` in one of the places a manifest keeps text, as a JSON-ish dump."""
    if place == "prose":
        return redact_text(f"{before} {secret} {after}")
    if place == "argv":
        return json.dumps(redact_argv(["python", "train.py", f"--{name}", secret, "--lr", "3e-4"]))
    if place == "argv=":
        return json.dumps(redact_argv(["python", "train.py", f"--{name}={secret}"]))
    if place == "env":
        tree, _ = redact_tree({"config": {"selected_env": {name: secret}}})
        return json.dumps(tree)
    if place == "json":
        return redact_text(json.dumps({"run": {before or "a": {name: secret}}}, indent=2))
    if place == "yaml":
        return redact_text(f"run:\n  note: {before}\n  {name}: {secret}\n  after: {after}\n")
    if place == "ini":
        return redact_text(f"[run]\nnote = {before}\n{name} = {secret}\n")
    line = f"{name} = {secret}" if place == "diff" else f"{before} {secret}"
    prefix = "+" if place == "diff" else " "
    return redact_text(
        "diff --git a/run.cfg b/run.cfg\nindex 1a2b3c4..5d6e7f8 100644\n"
        "--- a/run.cfg\n+++ b/run.cfg\n@@ -1,2 +1,3 @@\n"
        f" # {before}\n{prefix}{line}\n # {after}\n"
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    shape=st.sampled_from(sorted(SAMPLES)),
    seed=st.integers(0, 2**32 - 1),
    place=st.sampled_from(PLACES),
    name=NAMES,
    before=PROSE,
    after=PROSE,
)
def test_a_secret_never_survives(
    shape: str, seed: int, place: str, name: str, before: str, after: str
) -> None:
    shown, make = SAMPLES[shape]
    secret = make(random.Random(seed))
    body = secret[len(shown) :]
    out = embed(place, name, secret, before, after)
    # no 12 characters of the body survive, in JSON's escaping or as they are
    for piece in {body[-12:], body[len(body) // 2 :][:12], json.dumps(body)[1:-1][-12:]}:
        assert piece not in out, (shape, place, out)


def _version(parts: list[int], suffix: str) -> str:
    return ".".join(map(str, parts)) + suffix


LOOK_ALIKES = st.one_of(
    st.builds(
        _version,
        # at most three parts: four numbers up to 255 are an IPv4 address, which may be
        # internal (`100.64.0.0`) and is then hidden on purpose
        st.lists(st.integers(0, 999), min_size=2, max_size=3),
        st.sampled_from(["", "+cu121", "rc1", ".post2", "-beta.3", "+cpu"]),
    ),
    st.uuids().map(str),
    st.uuids().map(lambda u: f"GPU-{u}"),
    st.binary(min_size=20, max_size=20).map(bytes.hex),  # a git commit
    st.binary(min_size=32, max_size=32).map(lambda b: f"sha256:{b.hex()}"),
    st.binary(min_size=32, max_size=32).map(lambda b: f"blake3:{b.hex()}"),
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(lambda w: "/data/" + "/".join(w)),
    st.lists(st.sampled_from(WORDS), min_size=2, max_size=5).map("_".join),
    st.tuples(st.sampled_from(WORDS), st.integers(0, 10**6)).map(lambda t: f"{t[0]}_{t[1]}"),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers().map(str),
    st.sampled_from(
        [
            "vit_base_patch16_224.augreg2_in21k_ft_in1k",
            "meta-llama/Meta-Llama-3-8B-Instruct",
            "bert-base-uncased",
            "HuggingFaceH4/ultrachat_200k",
            "expandable_segments:True",
            ":4096:8",
            "ghp_short",
            "sk-learn",
            "hf_hub_download",
            "AKIA",
            "key-value",
            "xoxb",
            "Bearer",
        ]
    ),
)


@settings(max_examples=300, deadline=None)
@given(value=LOOK_ALIKES, name=st.sampled_from(["MODEL", "data_path", "revision", "SEED"]))
def test_a_look_alike_never_changes(value: str, name: str) -> None:
    assert redact_text(value) == value
    assert redact_text(f"{name} = {value}") == f"{name} = {value}"
    assert redact_argv(["train.py", f"--{name}", value, f"--{name}={value}"]) == [
        "train.py",
        f"--{name}",
        value,
        f"--{name}={value}",
    ]
    tree = {"config": {"selected_env": {name: value}, "resolved_args": {name: value}}}
    assert redact_tree(tree) == (tree, [])


def test_uuid_look_alike_is_exercised() -> None:
    assert redact_text(str(uuid.UUID(int=7))) == str(uuid.UUID(int=7))
