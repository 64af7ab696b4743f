"""diff: recomputed section digests, flattened leaf changes and their severities."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from expdna.cli.diff import render, shown
from expdna.compare.diff import diff_manifests, flatten, severity_of
from expdna.manifest.dna import compute_dna, short
from expdna.manifest.model import DNA_SECTIONS, Manifest

COMMIT = "1c8e2fb" + "0" * 33
BASE: dict[str, Any] = {
    "schema_version": "1.0",
    "run_id": "20260805_143025_1c8e2fb_k3f9",
    "generated_at": "2026-08-05T14:30:25Z",
    "command": {"argv": ["python", "train.py", "--lr", "0.1"], "cwd": "/work/relax"},
    "code": {
        "relax": {
            "commit": COMMIT,
            "branch": "main",
            "dirty": True,
            "patch": {"digest": "blake3:" + "a" * 64, "size": 12, "text": "diff --git a/x\n"},
        }
    },
    "config": {"resolved_args": {"lr": 0.1, "output_dir": "/out/run1"}},
    "environment": {"python_version": "3.11.7", "packages": {"torch": "2.3.0"}},
    "hardware": {
        "gpu_model": "NVIDIA H100 80GB HBM3",
        "driver_version": "550.54.15",
        "gpus": [{"name": "NVIDIA H100 80GB HBM3", "vbios_version": "96.00.89.00.01"}],
    },
    "collection": {"collectors": {"git": {"status": "ok", "duration_ms": 3.0}}},
}


def make(**changes: Any) -> Manifest:
    """BASE with ``changes`` applied at dotted paths (``None`` deletes the key)."""
    doc = copy.deepcopy(BASE)
    for path, value in changes.items():
        *parents, last = path.split("__")
        node: dict[str, Any] = doc
        for part in parents:
            node = node.setdefault(part, {})
        if value is None:
            node.pop(last, None)
        else:
            node[last] = value
    manifest = Manifest.model_validate(doc)
    manifest.dna = compute_dna(manifest)
    return manifest


def changed(a: Manifest, b: Manifest) -> dict[str, str]:
    return {c.path: c.severity for c in diff_manifests(a, b).changes}


def test_identical_manifests_are_equal() -> None:
    report = diff_manifests(make(), make())
    assert report.equal
    assert report.changes == ()
    assert all(s.equal for s in report.sections.values())
    assert list(report.sections) == list(DNA_SECTIONS)
    assert report.stale() == (False, False)


def test_document_identity_and_collection_are_not_changes() -> None:
    other = make(
        run_id="20260806_000000_1c8e2fb_zzzz",
        generated_at="2026-08-06T00:00:00Z",
        collection={"collectors": {"git": {"status": "partial"}}, "duration_ms": 9.0},
    )
    report = diff_manifests(make(), other)
    assert report.equal
    assert report.changes == ()


def test_an_argument_changes_only_the_config_section() -> None:
    b = make(config__resolved_args__lr=0.2, command__argv=["python", "train.py", "--lr", "0.2"])
    report = diff_manifests(make(), b)
    assert not report.equal
    assert [n for n, s in report.sections.items() if not s.equal] == ["config"]
    # The command's word changed the DNA (version 3: the command is in config): never
    # INFO, and marked as part of the DNA; the resolved argument repeats it outside.
    old_argv, new_argv = (
        ["python", "train.py", "--lr", "0.1"],
        ["python", "train.py", "--lr", "0.2"],
    )
    assert [(c.path, c.severity, c.old, c.new, c.section, c.in_dna) for c in report.changes] == [
        ("command.argv", "WARN", old_argv, new_argv, "command", True),
        ("config.resolved_args.lr", "INFO", 0.1, 0.2, "config", False),
    ]
    assert report.changes[0].details == (
        {"path": "argv[3:4]", "old": "0.1", "new": "0.2", "in_dna": True},
    )


def test_a_per_run_arg_is_a_change_but_not_a_dna_difference() -> None:
    report = diff_manifests(make(), make(config__resolved_args__output_dir="/out/run2"))
    assert report.equal
    assert [c.path for c in report.changes] == ["config.resolved_args.output_dir"]


def test_commit_is_critical_and_changes_the_code_section() -> None:
    report = diff_manifests(make(), make(code__relax__commit="9" * 40))
    assert not report.sections["code"].equal
    assert changed(make(), make(code__relax__commit="9" * 40)) == {"code.relax.commit": "CRITICAL"}


def test_patch_compared_by_digest_not_text() -> None:
    assert changed(make(), make(code__relax__patch__text="other text\n")) == {}
    new_digest = "blake3:" + "b" * 64
    assert changed(make(), make(code__relax__patch__digest=new_digest)) == {
        "code.relax.patch.digest": "CRITICAL"
    }


def test_list_elements_compare_by_index() -> None:
    gpus = [
        {"name": "NVIDIA H100 80GB HBM3", "vbios_version": "96.00.74.00.0B"},
        {"name": "NVIDIA H100 80GB HBM3", "vbios_version": "96.00.89.00.01"},
    ]
    assert changed(make(), make(hardware__gpus=gpus)) == {
        "hardware.gpus.0.vbios_version": "CRITICAL",
        "hardware.gpus.1.name": "CRITICAL",
        "hardware.gpus.1.vbios_version": "CRITICAL",
    }
    report = diff_manifests(make(), make(hardware__gpus=gpus))
    added = next(c for c in report.changes if c.path == "hardware.gpus.1.name")
    assert (added.old, added.new) == (None, "NVIDIA H100 80GB HBM3")


@pytest.mark.parametrize(
    ("path", "severity"),
    [
        ("code.relax.commit", "CRITICAL"),
        ("code.relax.patch.digest", "CRITICAL"),
        ("code.relax.submodules.0.commit", "CRITICAL"),
        ("hardware.gpu_model", "CRITICAL"),
        ("hardware.driver_version", "CRITICAL"),
        ("hardware.gpus.3.vbios_version", "CRITICAL"),
        ("environment.python_version", "WARN"),
        ("environment.packages.torch", "WARN"),
        ("environment.kernel", "WARN"),
        ("hardware.cuda_version", "WARN"),
        ("hardware.nccl_version", "WARN"),
        ("hardware.cudnn_version", "WARN"),
        ("training.global_batch_size", "INFO"),
        ("config.resolved_args.lr", "INFO"),
        ("command.argv.3", "INFO"),
        ("code.relax.branch", "INFO"),
        ("schema_version", "INFO"),
    ],
)
def test_severity(path: str, severity: str) -> None:
    assert severity_of(path) == severity


def test_changes_most_severe_first() -> None:
    b = make(
        code__relax__branch="feature",
        environment__python_version="3.12.1",
        hardware__driver_version="560.28.03",
    )
    assert [(c.path, c.severity) for c in diff_manifests(make(), b).changes] == [
        ("hardware.driver_version", "CRITICAL"),
        ("environment.python_version", "WARN"),
        ("code.relax.branch", "INFO"),
    ]


def test_types_are_part_of_the_value() -> None:
    # Version 3: the resolved argument is outside the DNA (its word in argv is in it).
    assert changed(make(), make(config__resolved_args__lr="0.1")) == {
        "config.resolved_args.lr": "INFO"
    }


def test_null_and_absent_are_the_same_fact() -> None:
    assert changed(make(), make(hardware__cpu_model=None)) == {}
    assert list(flatten({"a": None, "b": [], "c": {}, "d": [1, {"e": None}]})) == [("d.0", 1)]


def test_stale_stored_dna_is_detected_and_ignored() -> None:
    a, b = make(), make()
    a.dna = compute_dna(make(command__argv=["python", "train.py", "--lr", "0.5"]))
    report = diff_manifests(a, b)
    assert report.equal  # the recomputed DNAs decide
    assert report.stale() == (True, False)
    assert report.stored_dna[0] == a.dna.value


def test_json_shape() -> None:
    doc = diff_manifests(make(), make(hardware__gpu_model="NVIDIA A100-SXM4-80GB")).to_dict()
    assert set(doc) == {"equal", "dna", "sections", "changes"}
    assert doc["equal"] is False
    assert len(doc["dna"]) == 2 and all(len(d) == 64 for d in doc["dna"])
    assert doc["sections"]["hardware"]["equal"] is False
    assert set(doc["sections"]["code"]) == {"equal", "a", "b"}
    assert doc["changes"] == [
        {
            "path": "hardware.gpu_model",
            "severity": "CRITICAL",
            "old": "NVIDIA H100 80GB HBM3",
            "new": "NVIDIA A100-SXM4-80GB",
            "section": "hardware",
            "in_dna": True,
            "details": [],
        }
    ]


def test_text_rendering() -> None:
    b = make(config__resolved_args__lr=0.2, command__argv=["python", "x" * 200])
    lines = render(diff_manifests(make(), b))
    assert lines[0].startswith("code        =  ")
    assert lines[1].startswith("config      != ") and " -> " in lines[1]
    assert "INFO config.resolved_args.lr: 0.1 -> 0.2" in lines
    # the entry script is part of the command, which version 3 hashes with the config
    at = lines.index("WARN command.argv: 4 words -> 2 words  (in dna)")
    long_line = lines[at + 1]
    assert long_line.startswith("    argv[1:2]: train.py -> xxx")
    assert lines[at + 2] == "    argv[2:4]: --lr 0.1 -> (none)  (in dna)"
    assert len(long_line) < 120 and long_line.endswith("…  (in dna)")
    assert lines[-1].startswith("dna: ") and lines[-1].endswith("(differ)")


def test_shown_values() -> None:
    assert shown("blake3:" + "ab" * 32) == "blake3:abababababab…"
    assert shown(None) == "(none)"
    assert shown(True) == "true"
    assert shown("two\nlines") == "two\\nlines"
    assert shown(COMMIT) == COMMIT  # commits stay whole: people paste them into git


def test_in_dna_marks_only_the_changes_that_alter_the_dna() -> None:
    a = make()
    b = make(
        config__resolved_args__lr=0.2,
        command__argv=["python", "train.py", "--lr", "0.2"],
        config__resolved_args__output_dir="/out/run2",
        code__relax__branch="feature",
    )
    report = diff_manifests(a, b)
    by_path = {c.path: c for c in report.changes}
    assert by_path["command.argv"].in_dna
    assert not by_path["config.resolved_args.lr"].in_dna  # version 3: the word counts
    assert not by_path["config.resolved_args.output_dir"].in_dna
    assert not by_path["code.relax.branch"].in_dna
    assert by_path["code.relax.branch"].severity == "INFO"
    assert all(c.severity != "INFO" for c in report.changes if c.in_dna)


def test_in_dna_is_decided_per_field_when_a_section_has_several_changes() -> None:
    # Two config changes: one counted (the lr word), one a per-run argument (run_name).
    b = make(
        command__argv=["python", "train.py", "--lr", "0.3"],
        config__resolved_args__lr=0.3,
        config__resolved_args__run_name="b",
    )
    assert {c.path: c.in_dna for c in diff_manifests(make(), b).changes} == {
        "command.argv": True,
        "config.resolved_args.lr": False,
        "config.resolved_args.run_name": False,
    }


def test_keys_with_dots_are_one_field() -> None:
    report = diff_manifests(
        make(environment__packages={"torch": "2.3.0", "ruamel.yaml": "0.18.5"}),
        make(environment__packages={"torch": "2.3.0", "ruamel.yaml": "0.18.6"}),
    )
    [change] = report.changes
    assert change.path == "environment.packages[ruamel.yaml]"  # a name, not two fields
    assert change.in_dna and change.severity == "WARN"


def test_equal_dnas_have_no_critical_line() -> None:
    # A GPU name spelled in another case is a change of the document; it is not in the
    # DNA when the hardware section leaves it out, and then it cannot be CRITICAL.
    a = make(config__dna_ignore=["hardware.gpus"])
    b = make(
        config__dna_ignore=["hardware.gpus"],
        hardware__gpus=[{"name": "NVIDIA H100 80GB HBM3 (b)", "vbios_version": "96.00.89.00.01"}],
    )
    report = diff_manifests(a, b)
    assert report.equal
    assert [(c.path, c.severity, c.in_dna) for c in report.changes] == [
        ("hardware.gpus.0.name", "WARN", False)
    ]


def test_repositories_pair_across_checkout_names() -> None:
    # The same repository checked out as "relax" and as "relax-2": compared as one.
    doc_b = make().to_dict()
    doc_b["code"] = {"relax-2": doc_b["code"]["relax"]}
    b = Manifest.model_validate(doc_b)
    report = diff_manifests(make(), b)
    assert report.equal
    assert report.changes == ()


def test_paired_repositories_name_their_field_by_the_first_run() -> None:
    doc_b = make(code__relax__commit="2" * 40).to_dict()
    doc_b["code"] = {"relax-2": doc_b["code"]["relax"]}
    report = diff_manifests(make(), Manifest.model_validate(doc_b))
    assert [(c.path, c.severity, c.in_dna) for c in report.changes] == [
        ("code.relax.commit", "CRITICAL", True)
    ]


def test_a_dna_ignore_change_counts_when_it_changes_the_dna() -> None:
    report = diff_manifests(make(), make(config__dna_ignore=["config.resolved_args.lr"]))
    [change] = report.changes
    assert change.path == "config.dna_ignore.0"
    assert change.in_dna


def test_a_list_item_only_one_side_has_is_judged_without_breaking_the_document() -> None:
    # b drops its dna_ignore entry: the item is removed, never replaced by a null.
    a = make(config__dna_ignore=["config.resolved_args.seed"])
    report = diff_manifests(
        a, make(config__resolved_args__lr=0.5, command__argv=["python", "train.py", "--lr", "0.5"])
    )
    by_path = {c.path: c for c in report.changes}
    assert by_path["config.dna_ignore.0"].new is None
    assert by_path["command.argv"].in_dna


def test_named_list_items_compare_by_name() -> None:
    # One node fewer, listed first: by position every later node would differ.
    nodes = [
        {"role": "head", "hostname": "gpu001", "resources": {"GPU": 8.0}},
        {"role": "worker", "hostname": "gpu002", "resources": {"GPU": 8.0}},
    ]
    report = diff_manifests(
        make(runtime={"mode": "ray", "nodes": nodes}),
        make(runtime={"mode": "ray", "nodes": [dict(nodes[1], resources={"GPU": 4.0})]}),
    )
    assert [(c.path, c.in_dna) for c in report.changes] == [
        ("runtime.nodes[gpu001]", True),
        ("runtime.nodes[gpu002].resources.GPU", True),
    ]
    assert render(report)[7] == "WARN runtime.nodes[gpu001]: missing in B  (in dna)"


def test_items_without_distinct_names_keep_their_order() -> None:
    same = [{"role": "worker", "resources": {"GPU": 8.0}}] * 2
    report = diff_manifests(make(runtime={"nodes": same}), make(runtime={"nodes": same[:1]}))
    assert [c.path for c in report.changes] == [
        "runtime.nodes.1.role",
        "runtime.nodes.1.resources.GPU",
    ]


def test_the_dna_shown_is_each_manifests_own_when_config_files_are_paired() -> None:
    # nanoGPT's positional config file, the same file in two clones: pairing re-keys it
    # by its short name, yet the DNA printed must be the one the manifests carry.
    def with_config(root: str) -> Manifest:
        path = f"{root}/config/train_shakespeare_char.py"
        return make(
            command__cwd=root,
            command__argv=["python", "train.py", "config/train_shakespeare_char.py"],
            config__config_files={path: "blake3:" + "c" * 64},
            config__config_file_details={path: {"name": "train_shakespeare_char.py"}},
        )

    a, b = with_config("/work/nanoGPT"), with_config("/work/nanoGPT2")
    report = diff_manifests(a, b)
    assert report.equal
    assert a.dna is not None and b.dna is not None
    assert report.dna == (a.dna.value, b.dna.value)
    assert {name: s.a for name, s in report.sections.items()} == a.dna.sections
    assert render(report)[-1] == f"dna: {a.dna.value[:12]} (equal)"


def test_a_patch_with_binary_files_only_one_side_has_is_judged() -> None:
    # The DDP tutorial's snapshot.pt, untracked in a clean checkout: b's patch is new.
    patch = {
        "digest": "blake3:" + "b" * 64,
        "size": 197,
        "binary_files": [{"path": "snapshot.pt", "digest": "blake3:" + "d" * 64, "size": 9}],
    }
    a = make(code__relax__dirty=False, code__relax__patch=None)
    b = make(code__relax__patch=patch)
    report = diff_manifests(a, b)
    assert not report.equal
    changes = {c.path: (c.severity, c.in_dna) for c in report.changes}
    assert changes["code.relax.patch.digest"] == ("CRITICAL", True)
    assert changes["code.relax.patch.binary_files[snapshot.pt]"][1]
    # Its part of the patch is a binary file, not a file of no lines.
    text = (
        "diff --git a/snapshot.pt b/snapshot.pt\nnew file mode 100644\n"
        "index 0000000..06cc178\nBinary files /dev/null and b/snapshot.pt differ\n"
    )
    with_text = make(code__relax__patch={**patch, "text": text})
    lines = render(diff_manifests(a, with_text))
    assert "    snapshot.pt: (none) -> binary" in lines


def test_a_manifest_of_an_older_dna_version_is_named_with_its_own_dna(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from expdna.cli import cli
    from expdna.manifest.io import write_manifest

    old = make()
    old.dna = compute_dna(old, version=2)
    write_manifest(make(), tmp_path / "a.json")
    write_manifest(old, tmp_path / "b.json")
    done = CliRunner().invoke(cli, ["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")])
    assert done.exit_code == 0, done.output
    assert (
        f"expdna: note: {tmp_path / 'b.json'}: its DNA {short(old.dna.value)} is version 2; "
        "compared in version 3"
    ) in done.stderr


def test_a_leaf_only_the_second_run_has_is_in_the_dna_only_if_its_value_counts() -> None:
    # generate records no torch state; the hook records the loaded build and determinism
    # facts. initial_seed is outside the DNA (random in every unseeded process), the
    # installed build inside it: the containers both leaves bring along must not make
    # initial_seed count.
    loaded = {"determinism": {"initial_seed": 1234}}
    a = make()
    b = make(environment__framework={"torch": {"build": {"cuda": "12.4"}, "loaded": loaded}})
    flags = {c.path: c.in_dna for c in diff_manifests(a, b).changes}
    assert flags["environment.framework.torch.loaded.determinism.initial_seed"] is False
    assert flags["environment.framework.torch.build.cuda"] is True


def test_determinism_facts_are_warned_about_outside_the_dna() -> None:
    # Version 3: only the process reads them (generate cannot), so they leave the DNA;
    # a change of one is still a WARN.
    def env(tf32: bool, randomised: bool) -> dict[str, Any]:
        switches = {"matmul_allow_tf32": tf32, "num_threads": 4}
        return {
            "python_version": "3.11.7",
            "hash_randomization": randomised,
            "framework": {"torch": {"version": "2.13.0", "loaded": {"determinism": switches}}},
        }

    report = diff_manifests(make(environment=env(False, True)), make(environment=env(True, False)))
    assert report.equal
    assert [(c.path, c.severity, c.in_dna) for c in report.changes] == [
        ("environment.hash_randomization", "WARN", False),
        ("environment.framework.torch.loaded.determinism.matmul_allow_tf32", "WARN", False),
    ]


def test_argument_words_are_in_the_dna_through_the_command() -> None:
    a = make(command__argv=["python", "train.py", "--lr", "0.1", "--output_dir", "/out/a"])
    b = make(command__argv=["python", "train.py", "--lr", "0.2", "--output_dir", "/out/b"])
    report = diff_manifests(a, b)
    [change] = report.changes
    assert (change.path, change.severity, change.in_dna) == ("command.argv", "WARN", True)
    # each edit judged alone: a setting's word changes the DNA; an output directory's not
    assert change.details == (
        {"path": "argv[3:4]", "old": "0.1", "new": "0.2", "in_dna": True},
        {"path": "argv[5:6]", "old": "/out/a", "new": "/out/b", "in_dna": False},
    )
    assert not report.sections["config"].equal and not report.equal


def test_an_added_or_moved_option_is_one_edit_not_a_shift_of_every_word() -> None:
    words = ["python", "train.py", "--lr", "0.1", "--batch", "8", "--seed", "1"]
    added = diff_manifests(
        make(command__argv=words), make(command__argv=[*words[:2], "--warmup", "10", *words[2:]])
    )
    [change] = [c for c in added.changes if c.section == "command"]
    assert change.details == (
        {"path": "argv[2:2]", "old": None, "new": "--warmup 10", "in_dna": True},
    )
    assert "    argv[2:2]: (none) -> --warmup 10  (in dna)" in render(added)
    moved = diff_manifests(
        make(command__argv=words),
        make(command__argv=[*words[:2], *words[4:6], *words[2:4], *words[6:]]),
    )
    [change] = [c for c in moved.changes if c.section == "command"]
    # one option taken out and put back elsewhere: two edits of the same words
    edits = {(d["old"], d["new"]) for d in change.details}
    assert edits in (
        {("--lr 0.1", None), (None, "--lr 0.1")},
        {("--batch 8", None), (None, "--batch 8")},
    )
    # a word that needs quoting is shown as the shell would read it
    quoted = diff_manifests(
        make(command__argv=words), make(command__argv=[*words, "--name", "a b"])
    ).changes[0]
    assert quoted.details[0]["new"] == "--name 'a b'"


def test_a_replacement_of_unequal_length_is_judged_in_two_parts() -> None:
    a = make(command__argv=["python", "train.py", "--output_dir", "runs/a"])
    b = make(command__argv=["python", "train.py", "--output_dir", "runs/c", "--lr", "0.01"])
    [change] = [c for c in diff_manifests(a, b).changes if c.section == "command"]
    assert change.details == (
        {"path": "argv[3:4]", "old": "runs/a", "new": "runs/c", "in_dna": False},
        {"path": "argv[4:4]", "old": None, "new": "--lr 0.01", "in_dna": True},
    )


def test_a_hostile_command_line_is_aligned_within_a_bounded_cost() -> None:
    # 3,000 repeated words: difflib alone takes minutes on these; the differing middle is
    # one replacement past MAX_ALIGNED_PAIRS, the common ends still set aside
    a = make(command__argv=["python", *["x"] * 3000, "--end"])
    b = make(command__argv=["python", *["x", "y"] * 1500, "--end"])
    [change] = [c for c in diff_manifests(a, b).changes if c.section == "command"]
    assert [d["path"] for d in change.details] == ["argv[2:3001]"]
