"""Turning a manifest into what the store writes: facts, store form, checks, mounts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from expdna.digest import hex_of, ref_of
from expdna.errors import InvalidInputError
from expdna.filesystems import is_network_fstype, network_fstype
from expdna.manifest.dna import compute_dna
from expdna.manifest.io import manifest_from_dict, serialise
from expdna.store.errors import DnaMismatchError
from expdna.store.record.flatten import MAX_VALUE_CHARS, flatten, query_value
from expdna.store.record.prepare import prepare, prepare_doc
from expdna.store.record.storeform import moved_patches, to_file_form, to_store_form
from tests.factories import PATCH_TEXT, VBIOS, synthetic, synthetic_doc


def facts_of(doc: dict[str, Any]) -> set[tuple[str, str]]:
    return flatten(doc)[0]


def test_list_indexes_are_dropped_so_any_gpu_matches() -> None:
    doc = synthetic(1, vbios=VBIOS).to_dict()
    doc["hardware"]["gpus"][1]["vbios_version"] = "other"
    facts = facts_of(doc)
    assert ("hardware.gpus.vbios_version", VBIOS) in facts
    assert ("hardware.gpus.vbios_version", "other") in facts
    assert ("hardware.gpus.name", "NVIDIA H100 80GB HBM3") in facts  # two GPUs, one fact
    assert ("command.argv", "train.py") in facts


def test_values_are_text_as_json_writes_them() -> None:
    doc = {
        "a": {
            "int": 16,
            "float": 0.0003,
            "yes": True,
            "no": False,
            "none": None,
            "inf": float("inf"),
            "text": "x",
        }
    }
    assert facts_of(doc) == {
        ("a.int", "16"),
        ("a.float", "0.0003"),
        ("a.yes", "true"),
        ("a.no", "false"),
        ("a.inf", "<non-finite:inf>"),
        ("a.text", "x"),
    }


def test_long_values_are_kept_as_their_digest_and_queries_match() -> None:
    long = "y" * (MAX_VALUE_CHARS + 1)
    assert facts_of({"note": long}) == {("note", ref_of(long.encode()))}
    assert query_value(long) == ref_of(long.encode())
    assert query_value("short") == "short"


def test_columns_patch_text_and_timings_are_not_facts_numeric_metrics_are_metrics() -> None:
    doc = synthetic(3).to_dict()
    doc["metrics"]["tag"] = "best"
    facts, metrics = flatten(doc)
    paths = {path for path, _ in facts}
    assert not paths & {"run_id", "generated_at", "schema_version"}
    assert not any(p.startswith("dna") for p in paths)
    assert "code.train.patch.text" not in paths and "code.train.patch.digest" in paths
    assert "collection.collectors.git.duration_ms" not in paths
    assert "collection.collectors.git.status" in paths
    assert metrics == {"final_loss": 0.25, "reward.mean": 0.5}
    assert ("metrics.tag", "best") in facts


def test_store_form_moves_a_patch_out_and_the_file_form_brings_it_back() -> None:
    manifest = synthetic(4)
    form = to_store_form(manifest.to_dict())
    patch = form.doc["code"]["train"]["patch"]
    assert "text" not in patch
    assert form.patches == {hex_of(PATCH_TEXT.encode()): PATCH_TEXT.encode()}
    assert moved_patches(form.doc) == [hex_of(PATCH_TEXT.encode())]
    assert hex_of(form.data) == form.digest
    assert to_store_form(manifest.to_dict()).data == form.data  # same manifest, same bytes
    rebuilt = to_file_form(json.loads(form.data), lambda digest: form.patches[digest])
    assert serialise(rebuilt) == serialise(manifest.to_dict())


def test_a_shortened_patch_stays_inline_and_a_missing_text_stays_missing() -> None:
    doc = synthetic_doc(5)
    doc["code"]["train"]["patch"]["text"] = "cut to fit"
    doc["code"]["train"]["patch"]["truncated"] = True
    doc["code"]["megatron"]["patch"] = {"digest": ref_of(b"gone"), "size": 4, "text": None}
    form = to_store_form(manifest_from_dict(doc).to_dict())
    assert form.patches == {}
    assert form.doc["code"]["train"]["patch"]["text"] == "cut to fit"
    assert form.doc["code"]["megatron"]["patch"]["text"] is None
    assert moved_patches(form.doc) == []


def test_prepare_computes_a_missing_dna() -> None:
    manifest = manifest_from_dict(synthetic_doc(6))
    assert manifest.dna is None
    prepared = prepare(manifest)
    assert prepared.dna == compute_dna(manifest).value
    stored = json.loads(prepared.blobs[0].data)
    assert stored["dna"]["value"] == prepared.dna
    assert [b.kind for b in prepared.blobs] == ["manifest", "patch"]


def test_prepare_refuses_an_edited_manifest() -> None:
    manifest = synthetic(7)
    manifest.command.argv[3] = "0.1"  # edited after the DNA was computed
    with pytest.raises(DnaMismatchError, match="corrupted or edited") as caught:
        prepare(manifest, source="m.json")
    assert caught.value.exit_code == 2 and "m.json" in str(caught.value)


def test_prepare_refuses_edited_section_digests_and_unknown_dna_versions() -> None:
    manifest = synthetic(8)
    assert manifest.dna is not None
    manifest.dna.sections["code"] = "0" * 64
    with pytest.raises(DnaMismatchError):
        prepare(manifest)
    other = synthetic(8)
    assert other.dna is not None
    other.dna.version = 99
    with pytest.raises(DnaMismatchError, match="version 99"):
        prepare(other)


@pytest.mark.parametrize("run_id", ["../x", "a b", "a/b", "-x", "x" * 129, "a\n"])
def test_prepare_refuses_unusable_run_ids(run_id: str) -> None:
    with pytest.raises(InvalidInputError, match="run id"):
        prepare(synthetic(9, run_id=run_id))


def test_prepare_refuses_a_time_that_is_not_iso() -> None:
    doc = synthetic_doc(10)
    doc["generated_at"] = "yesterday"
    with pytest.raises(InvalidInputError, match="generated_at"):
        prepare(manifest_from_dict(doc))


def test_attachments_must_be_referenced_by_the_manifest() -> None:
    manifest = synthetic(11)
    prepared = prepare(manifest, attachments=[b"listing"])
    assert ("listing", hex_of(b"listing")) in {(b.kind, b.digest) for b in prepared.blobs}
    with pytest.raises(InvalidInputError, match="not referenced"):
        prepare(manifest, attachments=[b"something else"])


def test_typed_columns_and_row() -> None:
    prepared = prepare(synthetic(12, driver="550.54.15"))
    row = prepared.row
    assert row["driver_version"] == "550.54.15" and row["gpu_model"] == "NVIDIA H100 80GB HBM3"
    assert row["algorithm"] == "grpo" and row["python_version"] == "3.12.3"
    assert len(row["commit"]) == 40 and row["code_digest"] == row["code_digest"].lower()


def _mounts(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "mounts"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_network_filesystem_detection_from_a_mounts_file(tmp_path: Path) -> None:
    mounts = _mounts(
        tmp_path,
        "/dev/vda / ext4 rw 0 0",
        "server:/export /shared nfs4 rw 0 0",
        "/dev/vdb /shared/local ext4 rw 0 0",
        "sshfs#me@host: /mnt/my\\040dir fuse.sshfs rw 0 0",
    )
    assert network_fstype(Path("/shared/team/store"), mounts) == "nfs4"
    assert network_fstype(Path("/shared/local/store"), mounts) is None
    assert network_fstype(Path("/mnt/my dir/store"), mounts) == "fuse.sshfs"
    assert network_fstype(Path("/home/me/store"), mounts) is None
    assert network_fstype(Path("/x"), tmp_path / "absent") is None


@pytest.mark.parametrize(
    ("fstype", "network"),
    [
        ("nfs", True),
        ("nfs4", True),
        ("cifs", True),
        ("smb3", True),
        ("lustre", True),
        ("gpfs", True),
        ("fuse.gcsfuse", True),
        ("fuse.fuse-overlayfs", False),
        ("ext4", False),
        ("xfs", False),
        ("tmpfs", False),
        ("overlay", False),
    ],
)
def test_network_fstypes(fstype: str, network: bool) -> None:
    assert is_network_fstype(fstype) is network


def test_the_recorded_family_digest_is_the_one_the_manifest_layer_defines() -> None:
    from expdna.manifest.family import family_of
    from expdna.store.record.sections import SectionMemo

    memo = SectionMemo()
    docs = [synthetic_doc(i, setup=i % 3) for i in range(12)]
    docs[1]["config"]["resolved_args"]["Data-Seed"] = 9  # another spelling of a seed
    docs[2]["config"]["dna_ignore"] = ["config.resolved_args.lr"]  # the whole-document path
    docs[3]["unknown"] = {"code": "collector git timeout"}
    docs[4]["training"] = {}  # no seed recorded by the training collector
    for doc in docs:
        doc.pop("dna", None)
        prepared = prepare_doc(doc, memo=memo)
        assert prepared.row["family"] == family_of(doc), doc["run_id"]
    # one setup, other seeds: one family, other DNAs
    a, b = synthetic_doc(20, setup=1), synthetic_doc(21, setup=1)
    a["config"]["resolved_args"]["seed"], b["config"]["resolved_args"]["seed"] = 1, 2
    a["command"]["argv"][-1], b["command"]["argv"][-1] = "1", "2"
    a["training"]["seeds"], b["training"]["seeds"] = {"seed": 1}, {"seed": 2}
    first, second = (prepare_doc(d, memo=memo) for d in (a, b))
    assert first.dna != second.dna and first.row["family"] == second.row["family"]
