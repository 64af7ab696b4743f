"""JSON, YAML and TOML stored as strings: parsed and walked like files, the text rewritten
the same way as the parsed value; prose and look-alikes of several lines left alone."""

from __future__ import annotations

import json
import sys

import pytest

from expdna.manifest.redact import redact_text, redact_tree
from expdna.manifest.redact_embedded import embedded_document

PW = "Hunter22abc"
OTHER = "Other33xyz"

# Documents whose secret the text rules alone miss (a value on the next line, the second
# item of an inline list, a table written inline): only the parsed walk finds it.
DOCUMENTS = {
    "toml-multi-line-string": ("toml", f'lr = 0.1\npassword = """\n{PW}\n"""\n'),
    "toml-inline-array": ("toml", f'lr = 0.1\napi_keys = ["{PW}", "{OTHER}"]\n'),
    "toml-inline-table": ("toml", f'lr = 0.1\ncreds = {{ user = "ci", value = "{OTHER}" }}\n'),
    "toml-table": ("toml", f'[run]\nlr = 0.1\n\n[run.credentials]\nvalue = "{OTHER}"\n'),
    "yaml-inline-list": ("yaml", f"run:\n  lr: 0.1\napi_keys: [{PW}, {OTHER}]\n"),
    "yaml-block-list": ("yaml", f"registry:\n  passwords:\n    - {PW}\n    - '{OTHER}'\n"),
    "yaml-flow-mapping": ("yaml", f"lr: 0.1\ncredentials: {{user: ci, value: {OTHER}}}\n"),
    "yaml-documents": ("yaml", f"---\nlr: 0.1\n---\nauth:\n  token: {OTHER}\n"),
}


@pytest.fixture(autouse=True)
def _home_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/srv/nobody-here")


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_a_document_in_a_string_is_parsed_and_its_text_rewritten(name: str) -> None:
    fmt, text = DOCUMENTS[name]
    found = embedded_document(text)
    assert found is not None and found[0] == fmt
    tree = {
        "config": {
            "resolved_args": {"note": text},
            "selected_env": {"SLURM_JOB_COMMENT": text},
            # a JSON config file holding the document as a string: walked twice over
            "config_file_details": {"run.json": {"text": json.dumps({"note": text})}},
        }
    }
    out, paths = redact_tree(tree)
    dumped = json.dumps(out)
    assert PW not in dumped and OTHER not in dumped
    redacted = out["config"]["resolved_args"]["note"]
    assert out["config"]["selected_env"]["SLURM_JOB_COMMENT"] == redacted
    assert json.loads(out["config"]["config_file_details"]["run.json"]["text"]) == {
        "note": redacted
    }
    if fmt == "toml":  # its values are quoted: the rewritten text still parses (YAML
        # reads a plain `***` as an alias, as it does after the text rules)
        again = embedded_document(redacted)
        assert again is not None and again[0] == fmt
    assert set(paths) == {
        "config.resolved_args.note",
        "config.selected_env.SLURM_JOB_COMMENT",
        "config.config_file_details.run.json.text",
    }


def test_a_short_secret_is_rewritten_only_under_its_own_key() -> None:
    text = 'lr = 0.1\ncreds = { user = "ci", value = "x" }\nrunner = "ci"\nnote = "ci tools"\n'
    out, _ = redact_tree({"config": {"resolved_args": {"note": text}}})
    new = out["config"]["resolved_args"]["note"]
    assert 'user = "***"' in new and 'value = "***"' in new
    assert 'runner = "ci"' in new and 'note = "ci tools"' in new


def test_a_secret_hidden_in_the_document_is_hidden_in_argv_too() -> None:
    text = f"db:\n  password:\n    {PW}\nlr: 0.1\n"
    tree = {
        "command": {"argv": ["train.py", "--seed-text", PW]},
        "config": {"resolved_args": {"note": text}},
    }
    out, _ = redact_tree(tree)
    assert PW not in json.dumps(out)


LOOK_ALIKES = [
    "Note: this run\nuses lr 0.1",  # prose with a colon: not a document
    "epochs: 3\nsingle_pass: true\nnum_pass: 2\ntool_call_token: <tool_call>\n",
    "requirements:\n  - tensorrt==10.3.0.26\n  - torch==2.3.1+cu121\n",
    "run_name: sk-resnet50-imagenet-finetune-v2\npod: trainer-7d9f8b6c5d-x2k4p\n",
    "expected_md5: 5d41402abc4b2a76b9719d911017c592\njob: raysubmit_H2ZbjPd1Jm8hKyB4\n",
    'lr = 0.1\nrunner = "ci"\n[data]\npath = "/data/imagenet"\n',
    "- one\n- two\n",  # a list of words: text, not a document of mappings
    "diff --git a/x.yaml b/x.yaml\n--- a/x.yaml\n+++ b/x.yaml\n@@ -1 +1 @@\n-a: 1\n+a: 2\n",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_a_look_alike_of_several_lines_is_kept(text: str) -> None:
    tree = {"config": {"resolved_args": {"note": text}, "selected_env": {"NOTE": text}}}
    assert redact_tree(tree) == (tree, [])


def test_prose_and_patches_are_not_parsed() -> None:
    assert embedded_document("Note: this run\nuses lr 0.1") is None
    assert embedded_document("- one\n- two\n") is None
    assert embedded_document(LOOK_ALIKES[-1]) is None
    assert embedded_document("password: x") is None  # one line: the text rules' case
    big = "a: 1\n" * (64 * 1024 // 5 + 1)
    assert embedded_document(big) is None  # a log, not a config


def test_aliases_cannot_blow_the_walk_up() -> None:
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
    )
    assert embedded_document(laughs) is None  # 9**9 nodes: not walked, the text rules apply


def test_without_pyyaml_yaml_is_text(monkeypatch: pytest.MonkeyPatch) -> None:
    # a core install has no PyYAML: the text rules alone apply, nothing fails
    monkeypatch.setitem(sys.modules, "yaml", None)
    assert embedded_document(DOCUMENTS["yaml-block-list"][1]) is None
    assert embedded_document(DOCUMENTS["toml-inline-array"][1]) is not None
    text = f"db:\n  password: {PW}\n"
    out, _ = redact_tree({"config": {"resolved_args": {"note": text}}})
    assert PW not in out["config"]["resolved_args"]["note"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"api_keys: [{PW}, {OTHER}]", "api_keys: [***, ***]"),
        (f'api_keys = ["{PW}", "{OTHER}"]', 'api_keys = ["***", "***"]'),
        (f"credentials: {{user: ci, value: {OTHER}}}", "credentials: {user: ***, value: ***}"),
        (
            f'creds = {{ user = "ci", value = "{OTHER}" }}',
            'creds = { user = "***", value = "***" }',
        ),
        (f'"api_keys": ["{PW}", "{OTHER}"],', '"api_keys": ["***", "***"],'),
        ("password: [null, ~]", "password: [null, ~]"),
        ("sizes: [1, 2, 3]", "sizes: [1, 2, 3]"),
        ("tokens: {pad: '<pad>', eos: '</s>'}", "tokens: {pad: '<pad>', eos: '</s>'}"),
    ],
)
def test_a_flow_collection_under_a_secret_name_in_text(line: str, expected: str) -> None:
    # in a patch there is no parsed value to walk: the text rule hides every item
    assert redact_text(line) == expected
    patch = (
        "diff --git a/c.yaml b/c.yaml\n--- a/c.yaml\n+++ b/c.yaml\n@@ -1 +1,2 @@\n"
        f" lr: 0.1\n+{line}\n"
    )
    assert redact_text(patch).endswith(f"+{expected}\n")
    assert redact_text(expected) == expected
